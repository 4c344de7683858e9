/* Which pointer parameters of a launch read replicas or privatise a
 * reduction, and what a launch's writes do to replicas (issue 18): the
 * link between the kernel analysis and mirror/replicas.h and
 * mirror/private_reductions.h. In a kernel with no store through a
 * pointer of unknown origin, an 8-byte parameter pointing into a pool
 * buffer is redirected on each slice's GPU to that GPU's rewritten module (the offset
 * kept) when the kernel only loads through it and no parameter of the
 * launch writes through a pointer into the same buffer; or, on the GPUs
 * other than the home one, to that GPU's private copy when the analysis
 * found a privatisable reduction through it and no other parameter of the
 * launch (nor a struct passed by value) may reach the buffer.
 * After every launch, the buffers it may write are marked stale: those its
 * parameters store or atomically update through, or all of them for a
 * kernel mgpu knows nothing of. */
#ifndef MGPU_MIRROR_READS_H
#define MGPU_MIRROR_READS_H

#include "partition/grid_split.h"
#include "partition/link_model.h"
#include "memory/memory_pool.h"
#include "mirror/private_reductions.h"
#include "modules/program_modules.h"

#include <cuda.h>

#define MGPU_MIRROR_MAX_PARAMS 8

struct mgpu_mirror_plan {
    int count;
    unsigned param[MGPU_MIRROR_MAX_PARAMS];
    /* the value each GPU's slice passes instead; 0: the program's own */
    CUdeviceptr value[MGPU_MIRROR_MAX_PARAMS][MGPU_MAX_GPUS];
    bool privatised[MGPU_MIRROR_MAX_PARAMS]; /* a reduction's, not a read's */
    int nprivate; /* buffers privatised: started per slice, combined after */
    struct mgpu_private_buffer privates[MGPU_MIRROR_MAX_PARAMS];
};

/* The launch a mirror plan is for: its grid and block (NULL: not known)
 * and its slices. */
struct mgpu_mirror_launch {
    const unsigned *grid, *block;
    const struct mgpu_grid_slice *slices;
    int nslices;
};

/* Whether a launch of k has a parameter a mirror could serve: a pool
 * pointer it only loads through or privatises a reduction through (the
 * rest of the rules are the plan's). Under MGPU_MIRROR=auto with
 * MGPU_FOOTPRINTS=on, not a buffer of which, by the kernel's footprint,
 * each slice cut by blocks reads at most twice its share: a copy would
 * bring each GPU the whole buffer to serve a part that a spread brings
 * (a histogram's 1 GiB input: four refreshes of 4 GiB, 0.55x of one
 * GPU). Cheap: for MGPU_MIRROR=auto, which times only launches that have
 * one. */
bool mgpu_mirror_candidates(const struct mgpu_gpu_kernels *k, void *const *params,
                            const void *buffer, const struct mgpu_mirror_launch *launch);

/* What making the launch's copies from nothing would take by the link
 * model (each buffer a mirror could serve, from the home GPU to each other
 * device of the slices): the most a mirrored try of it may cost beyond the
 * split without, for the budget for trying. 0 without a model. */
double mgpu_mirror_copies_seconds(const struct mgpu_gpu_kernels *k, void *const *params,
                                  const void *buffer, const struct mgpu_mirror_launch *launch,
                                  const struct mgpu_link_model *model);

/* Fills plan for a split launch of k (with the module launch's params or
 * buffer) whose slices are `slices`, queueing in `stream` (the program's,
 * of the home context, which is current) the refreshes its GPUs need.
 * plan->count is 0 when mirrors are off or nothing qualifies. The split
 * launch starts plan->privates in each slice's stream and combines them
 * after the join. With `reductions_only`, nothing is replicated (a split
 * privatised for its atomics, whose slices read their own shares). */
void mgpu_mirror_plan_reads(const struct mgpu_gpu_kernels *k, void *const *params,
                            const void *buffer, const struct mgpu_mirror_launch *launch,
                            CUstream stream, bool reductions_only, struct mgpu_mirror_plan *plan);

/* The device that holds every page of pool buffer b, or -1 when its
 * pages lie on several (or outside the run's entries). Under
 * MGPU_MIRROR=auto the entries on that device read b where it is, copies
 * of it serving them nothing (also for blas/'s shared operand). */
int mgpu_mirror_sole_device(const struct mgpu_pool_block *b);

/* Under MGPU_MIRROR=auto, whether some entry of the run would privatise a
 * reduction: only the first entry of each device other than the home one
 * does, so one GPU listed several times privatises nothing. */
bool mgpu_mirror_privatising_entries(void);

/* The GPU entry whose copies GPU entry `gpu` reads: itself with
 * MGPU_MIRROR=always (each entry keeps its own), else the first entry on
 * its device. */
int mgpu_mirror_holder(int gpu);

/* After a launch: the buffers it may write go stale. k NULL: a kernel
 * mgpu has no analysis of. */
void mgpu_mirror_launch_writes(const struct mgpu_gpu_kernels *k, void *const *params,
                               const void *buffer);

#endif
