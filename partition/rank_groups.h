/* The node's GPUs shared out among the MPI ranks on it (issue 22): each
 * rank takes a disjoint group, by topology, in local-rank order. The GPUs
 * go in the order mgpu_choose_gpus gives all of them (neighbouring GPUs
 * best linked: NVLink islands, PCIe switches and sockets together) and are
 * cut into consecutive groups of gpu_count / ranks; GPUs past ranks ×
 * share are left out. Where this process runs does not enter (each rank
 * may be bound elsewhere and must cut the node alike). A pure function of
 * the model: every node decides alone from its own, so the same command
 * works on any number of nodes. */
#ifndef MGPU_RANK_GROUPS_H
#define MGPU_RANK_GROUPS_H

#include "partition/topology.h"

struct mgpu_rank_groups {
    int ranks, share, left_out;
    int order[MGPU_TOPOLOGY_MAX_GPUS]; /* rank r's GPUs: order[r*share .. r*share+share-1] */
};

/* Returns 0, or -1 with a one-line message when `ranks` is not 1..gpu_count. */
int mgpu_rank_groups(const struct mgpu_topology *t, int ranks, struct mgpu_rank_groups *out,
                     char *err, size_t errlen);

#endif
