/* An MPI rank bound near its GPUs (issue 22): the launcher's process, and
 * so the program it becomes, runs on the CPUs near the rank's group of
 * GPUs, as far as the CPUs it may use allow. Linux (sched_setaffinity). */
#ifndef MGPU_RANK_BINDING_H
#define MGPU_RANK_BINDING_H

#include "partition/topology.h"

#include <stddef.h>

/* The CPUs near `gpus` (CUDA indices; the model's lists of nearby CPUs)
 * that this process may use, as a list into `out` ("1,3"); binds the
 * process to them. Returns 1 when bound, 0 when there is nothing to do (no
 * CPU known near them, or none of them allowed: `out` says why), -1 with
 * a one-line reason when the kernel refused. */
int mgpu_bind_rank_near_gpus(const struct mgpu_topology *t, const int *gpus, int n, char *out,
                             size_t outlen);

#endif
