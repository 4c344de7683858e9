/* Which pointer parameters of a launch read replicas, and what a launch's
 * writes do to them (issue 18): the link between the kernel analysis and
 * mirror/replicas.h. A parameter the kernel only loads through, 8 bytes,
 * pointing into a pool buffer that no parameter of the same launch writes
 * through, of a kernel with no store through a pointer of unknown origin,
 * is redirected on each slice's GPU to that GPU's copy (the offset kept).
 * After every launch, the buffers it may write are marked stale: those its
 * parameters store or atomically update through, or all of them for a
 * kernel mgpu knows nothing of. */
#ifndef MGPU_MIRROR_READS_H
#define MGPU_MIRROR_READS_H

#include "grid_split.h"
#include "program_modules.h"

#include <cuda.h>

#define MGPU_MIRROR_MAX_PARAMS 8

struct mgpu_mirror_plan {
    int count;
    unsigned param[MGPU_MIRROR_MAX_PARAMS];
    /* the value each GPU's slice passes instead; 0: the program's own */
    CUdeviceptr value[MGPU_MIRROR_MAX_PARAMS][MGPU_MAX_GPUS];
};

/* Fills plan for a split launch of k (with the copy launch's params or
 * buffer) whose slices are `slices`, queueing in `stream` (the program's,
 * of the home context, which is current) the refreshes its GPUs need.
 * plan->count is 0 when mirrors are off or nothing qualifies. */
void mgpu_mirror_plan_reads(const struct mgpu_kernel_copies *k, void *const *params,
                            const void *buffer, const struct mgpu_grid_slice *slices, int nslices,
                            CUstream stream, struct mgpu_mirror_plan *plan);

/* After a launch: the buffers it may write go stale. k NULL: a kernel
 * mgpu has no analysis of. */
void mgpu_mirror_launch_writes(const struct mgpu_kernel_copies *k, void *const *params,
                               const void *buffer);

#endif
