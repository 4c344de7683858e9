/* The launch pipeline as one call: a kernel launch of the program's, as
 * the launch hooks (src/hooks/launch_hooks.c) describe it, planned, placed,
 * decided, mirrored, forked and joined, and recorded. A kernel whose module
 * has per-GPU rewritten modules (modules/program_modules.c) is split over the GPUs
 * when it can be and the cost model wants it, or runs whole: on the GPU
 * that holds most of its data when a split is impossible (cooperative,
 * cluster, rejected by the analysis), else from the home GPU's rewritten module; any
 * other runs as the program launched it. With statistics on, each launch
 * is counted, given the reason it was not split, and timed with events on
 * its own stream. */
#ifndef MGPU_LAUNCH_H
#define MGPU_LAUNCH_H

#include <cuda.h>
#include <stdbool.h>

/* One launch as the program made it. */
struct mgpu_launch {
    CUfunction function;
    unsigned grid[3], block[3];
    unsigned shared_bytes;
    CUstream stream; /* as the non-_ptsz functions take it */
    bool cooperative;
    bool cluster; /* cuLaunchKernelEx with a cluster of more than one block */
    void **params, **extra;
    const CUlaunchConfig *config; /* cuLaunchKernelEx's, or NULL */
};

/* Launches l whole through the driver's own entry point of the hook that
 * made it, with `fn`, `params` and `extra` in place of the program's (the
 * home GPU's rewritten module's, where it has one). */
typedef CUresult (*mgpu_launch_whole_fn)(const struct mgpu_launch *l, CUfunction fn, void **params,
                                         void **extra);

/* Runs launch l; returns what the program's launch call returns. */
CUresult mgpu_launch(const struct mgpu_launch *l, mgpu_launch_whole_fn whole);

#endif
