/* Which GPUs a run takes, in what order, and what share of the work each
 * gets: pure functions of the topology model (no hwloc, no driver), so that
 * the launcher, the runtime, mgpu-info and the tests take the same
 * decisions. */
#ifndef MGPU_GPU_CHOICE_H
#define MGPU_GPU_CHOICE_H

#include "partition/topology.h"

struct mgpu_gpu_choice {
    int count;
    int gpus[MGPU_TOPOLOGY_MAX_GPUS];       /* CUDA indices in slice order; gpus[0] is home */
    double weights[MGPU_TOPOLOGY_MAX_GPUS]; /* each GPU's share, in the same order; sum 1 */
    struct mgpu_link worst_link;            /* weakest link between two of them; SELF for one */
    int near_process;                       /* how many sit on the process's NUMA node or socket */
};

/* The GPUs for `-n k`:
 * - which: the set whose links are best, comparing the weakest link first,
 *   then the next weakest, and so on; then the one with more GPUs near the
 *   process (its NUMA node, else its socket); then the lowest indices;
 * - order: the path through them whose links between neighbours are best
 *   compared the same way, so that neighbouring slices sit on neighbouring
 *   GPUs (NVLink pairs adjacent, the GPUs of one PCIe switch adjacent, one
 *   socket before the other); ties go to GPUs near the process first, then
 *   to lower indices;
 * - weights: mgpu_gpu_weights of their multiprocessors and clocks.
 * Returns 0, or -1 with a one-line message when k is not 1..gpu_count. */
int mgpu_choose_gpus(const struct mgpu_topology *t, int k, struct mgpu_gpu_choice *out, char *err,
                     size_t errlen);

/* Shares of the work for n GPUs: proportional to multiprocessors x clock
 * (kHz) when every GPU has both, to multiprocessors when every GPU has
 * those, else equal. Either array may be NULL (unknown). out sums to 1. */
void mgpu_gpu_weights(int n, const int sms[], const int clock_khz[], double out[]);

/* The decision for a list the user gave (--gpus), which may name a GPU
 * several times (gpu_entries.h): the GPUs as listed, each device's weight
 * split equally among its entries, the worst link between two distinct
 * GPUs (SELF where they all share one). Returns 0, or -1 with a one-line
 * message when the topology lacks a listed GPU. */
int mgpu_gpus_as_listed(const struct mgpu_topology *t, const int *list, int len,
                        struct mgpu_gpu_choice *out, char *err, size_t errlen);

#endif
