/* Owns the sharing of a node's GPUs among its MPI ranks (see rank_groups.h). */
#include "partition/rank_groups.h"

#include "partition/gpu_choice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mgpu_rank_groups(const struct mgpu_topology *t, int ranks, struct mgpu_rank_groups *out,
                     char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (ranks < 1 || ranks > t->gpu_count) {
        snprintf(err, errlen,
                 "%d ranks on a node of %d GPU%s: each rank needs one; run at most %d ranks per "
                 "node, or give each rank GPUs with --gpus",
                 ranks, t->gpu_count, t->gpu_count == 1 ? "" : "s", t->gpu_count);
        return -1;
    }
    /* Every rank must cut the node alike, wherever the launcher bound it:
     * the order ignores where this process runs. */
    struct mgpu_topology *unbound = malloc(sizeof *unbound);
    if (unbound == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *unbound = *t;
    unbound->process_numa = unbound->process_package = -1;
    struct mgpu_gpu_choice all;
    int rc = mgpu_choose_gpus(unbound, t->gpu_count, &all, err, errlen);
    free(unbound);
    if (rc != 0)
        return -1;
    out->ranks = ranks;
    out->share = t->gpu_count / ranks;
    out->left_out = t->gpu_count - ranks * out->share;
    memcpy(out->order, all.gpus, sizeof out->order);
    return 0;
}
