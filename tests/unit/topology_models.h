/* Topology models built by hand for the unit tests: n GPUs with every pair
 * linked alike, then NVLink pairs added. */
#ifndef MGPU_TEST_TOPOLOGY_MODELS_H
#define MGPU_TEST_TOPOLOGY_MODELS_H

#include "partition/topology.h"

#include <stdio.h>

static inline void model_all_linked(struct mgpu_topology *t, int n, enum mgpu_link_class link)
{
    mgpu_topology_clear(t);
    snprintf(t->source, sizeof t->source, "a test model");
    t->gpu_count = n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                t->links[i][j].link_class = link;
}

static inline void model_add_nvlink(struct mgpu_topology *t, int a, int b, int lanes)
{
    t->links[a][b].link_class = t->links[b][a].link_class = MGPU_LINK_NVLINK;
    t->links[a][b].nvlink_lanes = t->links[b][a].nvlink_lanes = lanes;
}

#endif
