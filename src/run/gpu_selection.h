/* Which of the machine's GPUs a run uses, and in what order. */
#ifndef MGPU_GPU_SELECTION_H
#define MGPU_GPU_SELECTION_H

#include "partition/topology.h"

#include <stddef.h>

/* Picks device indices out of `device_count`: the list when given (a
 * device may be listed several times: gpu_entries.h), else the first
 * `ngpus`, else all. `count_source`/`list_source` name where the
 * request came from ("-n ", "MGPU_NGPUS=", "--gpus"). Returns 0, or -1 with a one-line
 * message naming the fix. */
int gpu_select(int device_count, int ngpus, const char *count_source, const int *list, int list_len,
               const char *list_source, int *out, int *out_len, char *err, size_t errlen);

/* The topology's decision for the `n` GPUs that gpu_select counted (no
 * --gpus list): which GPUs and in what order (partition/gpu_choice.h).
 * `driver_bus_ids` holds the bus id the driver gives each of its
 * `device_count` GPUs ("" where it does not say), or is NULL. Returns 0,
 * or -1 with a one-line reason when `t` does not describe the driver's
 * GPUs (another count, an index or a bus id that does not match); `out`
 * is then left in index order. */
int gpu_select_by_topology(const struct mgpu_topology *t, int device_count,
                           const char (*driver_bus_ids)[MGPU_BUS_ID_LEN], int n, int *out,
                           char *why, size_t whylen);

/* For MPI rank `local_rank` of `local_size` on this node (mpi_ranks.h),
 * without a --gpus list: its group of the node's GPUs (rank_groups.h),
 * all of it, or its first `ngpus` when given. Asking for more than the
 * group is a one-line error naming the fix; so is a topology that does not
 * describe the driver's GPUs, or more ranks than GPUs. Returns 0 or -1. */
int gpu_select_for_rank(const struct mgpu_topology *t, int device_count,
                        const char (*driver_bus_ids)[MGPU_BUS_ID_LEN], int local_rank,
                        int local_size, int ngpus, const char *count_source, int *out,
                        int *out_len, char *err, size_t errlen);

/* The distinct devices of `chosen` in the order they first appear, and
 * for each chosen GPU its device's place among them (what MGPU_ENTRIES
 * tells the program, whose driver sees only those devices). Returns how
 * many devices. */
int gpu_select_devices(const int *chosen, int n, int *devices, int *entries);

#endif
