/* The split of a launch estimated before it is tried (issue 19, item 2:
 * whether to split decided with where the data lie). Each slice is taken
 * to touch its share of every pool buffer its kernel's parameters load,
 * store or update (the share of the grid it runs, along the cut: what a
 * data-parallel kernel does); the bytes of that share held by another GPU
 * are read over the link between them, at the bandwidth the run's link
 * model has for it (run_links.h), times the bytes a link carries per byte
 * used where the kernel's neighbouring threads access a sector apart
 * (ptx_thread_stride.h: a naive transpose's stores, 8 for floats). The whole launch's measured
 * time, less its own reads from other GPUs, is taken to divide among the slices.
 *
 * So a kernel of tens of microseconds whose buffers lie on the home GPU
 * (under MGPU_SPREAD_MIN) is not tried split, since its other slices would
 * read their shares at a twelfth of local bandwidth; a kernel that computes
 * for long over little data, or whose buffers are spread along the cut, is.
 * A kernel whose time its bytes do not explain, and that updates a buffer
 * with atomics not privatised (mirror/), is taken to spend that time on its
 * atomics, which split still meet at the buffer's owner and, from the other
 * GPUs, across a link: such a split is estimated slower than whole.
 * A kernel that uses a pointer into managed memory (cuMemAllocManaged,
 * which the pool does not hold) is estimated at INFINITY: split, each
 * other GPU's slice faults the pages it touches over to it, and the home
 * GPU's next launches fault them back (tests/programs/managed_memory, -n 2
 * on 4 x H200: 14.6 ms of GPU time against 12.1 on one GPU, its affine
 * kernel tried split and block_sums, whole, 1.4 ms against 0.5).
 * The estimate only keeps the cost model from trying splits that cannot
 * pay: what it tries is still decided by measured times.
 *
 * Under MGPU_FOOTPRINTS=on, a slice cut by blocks of a kernel whose
 * footprint is known (ptx/ptx_footprint.h) is taken to touch, of each
 * buffer, the bytes its footprint gives at the launch's values (the
 * hull of what it may read and write through the pointers into that
 * buffer; the whole buffer where the footprint says so) instead of its
 * share: all of B for each slice of a tiled GEMM, all of the matrix for
 * each slice of a column walk, a stencil's halo.
 *
 * With `spread`, the same launch is estimated as it would run after its
 * buffers of MGPU_FOLLOW_MIN_BYTES or more were laid out as the pool
 * spreads them (one part per GPU in GPU order, what mgpu_pool_spread
 * makes): the question the split policy asks when data lying on one GPU
 * are all that keep a split from paying (placement_follow.h). */
#ifndef MGPU_SPLIT_ESTIMATE_H
#define MGPU_SPLIT_ESTIMATE_H

#include "partition/grid_split.h"
#include "modules/program_modules.h"

struct mgpu_split_estimate {
    const struct mgpu_gpu_kernels *kernel;
    void *const *params; /* the module launch's parameters, or NULL with buffer */
    const void *buffer;
    const unsigned *grid;
    const unsigned *block; /* NULL: not known (no footprint used) */
    const struct mgpu_grid_slice *slices;
    int nslices;
    /* The split privatises the reductions the analysis found privatisable
     * (mirror/private_reductions.h): each GPU's atomics then stay on it. */
    bool privatised;
    /* Estimate it with the large buffers spread (see above). */
    bool spread;
};

/* The split launch's estimated GPU time in microseconds, given the whole
 * launch's measured `whole_us`; INFINITY for a kernel on managed memory;
 * NAN while the links are still being measured (ask again later); a
 * negative number when it cannot be estimated (no link model, a kernel
 * that loads or stores through pointers of unknown origin, no analysis of
 * its parameters). */
double mgpu_split_estimate_us(const struct mgpu_split_estimate *e, double whole_us);

#endif
