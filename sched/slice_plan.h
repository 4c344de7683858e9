/* Where a split launch's cuts go: by the GPUs' weights (multiprocessors x
 * clock), or, when the kernel writes a buffer that mgpu's pool spread one
 * part per GPU in GPU order, at that buffer's owner boundaries, so that
 * each slice writes its own GPU's memory. The largest written buffer
 * decides. The mapping of blocks to bytes is taken to be linear, which is
 * what the distributed placement assumes too. */
#ifndef MGPU_SLICE_PLAN_H
#define MGPU_SLICE_PLAN_H

#include "partition/grid_split.h"
#include "modules/program_modules.h"

/* Writes the slices of `grid` (blocks of `block_threads`) for kernel `k`
 * to out (room for k->ngpus) and returns how many there are. The
 * parameter values are read from `params` (the program's array) or else
 * from `buffer` (an `extra` parameter buffer). */
int mgpu_slice_plan(const struct mgpu_gpu_kernels *k, const unsigned grid[3],
                    unsigned block_threads, void *const *params, const void *buffer,
                    struct mgpu_grid_slice *out);

/* For a launch that runs whole: the GPU that holds the most bytes of the
 * pool buffers its pointer-sized parameters name (whole buffers, read or
 * written), or 0, the home GPU, when no other GPU holds more than it. */
int mgpu_slice_plan_data_owner(const struct mgpu_gpu_kernels *k, void *const *params,
                               const void *buffer);

#endif
