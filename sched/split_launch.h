/* Submitting one launch as slices of its grid, one per GPU, at the same
 * time, ordered in the program's stream as one launch would be: the
 * program's stream signals a fork (a sequence flag or an event); each
 * other GPU's slice stream waits for it, runs its slice and signals its
 * join; the home GPU's slice runs in the program's stream itself, which
 * then waits for every join. The other GPUs' slices are launched by their
 * worker threads while the calling thread launches the home GPU's. One
 * slice on another GPU is a whole launch moved to that GPU. */
#ifndef MGPU_SPLIT_LAUNCH_H
#define MGPU_SPLIT_LAUNCH_H

#include "partition/grid_split.h"
#include "modules/program_modules.h"

#include <cuda.h>

struct mgpu_mirror_plan; /* mirror_reads.h */

/* Work cut per GPU that is not a kernel's grid (a library call, blas/):
 * run(arg, s, gpu, stream) queues slice s's part in `stream`, with GPU
 * gpu's context current, and returns the call's error as a CUresult. */
struct mgpu_split_work {
    CUresult (*run)(void *arg, int slice, int gpu, CUstream stream);
    void *arg;
    const CUcontext *contexts; /* the run's GPUs' contexts, [0] the home */
    int ngpus;
};

struct mgpu_split_request {
    const struct mgpu_gpu_kernels *kernel; /* NULL with work */
    const struct mgpu_split_work *work;    /* instead of a kernel's slices, or NULL */
    const struct mgpu_grid_slice *slices;  /* in GPU order; with work, only .gpu counts */
    int nslices;
    unsigned grid[3]; /* the whole grid */
    unsigned block[3];
    unsigned shared_bytes;
    CUstream stream;     /* the program's, in the home context, which is current */
    void *const *params; /* the module launch's (ending in its grid words), or NULL */
    const void *buffer;  /* else its parameter buffer, __mgpu_grid included */
    size_t buffer_size;
    const CUlaunchConfig *config;          /* cuLaunchKernelEx's, for its attributes; or NULL */
    bool cooperative;                      /* without config: a cuLaunchCooperativeKernel */
    int trace_kernel;                      /* kernel_stats id to time each slice under, or -1 */
    const struct mgpu_mirror_plan *mirror; /* parameters read from replicas, or NULL */
    unsigned launch_sequence;              /* for injected probes; 0 without them */
    unsigned probe_block_threshold;        /* __mgpu_grid's, for block-sampled probes */
};

/* Whether cuLaunchKernelEx's attributes allow a split (or, with `whole`,
 * a move of the whole grid to another GPU's stream): those that concern
 * the blocks themselves (access policy, priority, memory sync domain,
 * shared memory carve-out, clusters of one block; with `whole`, any
 * clusters and cooperative launches too) do; those that tie the launch to
 * events or to the next kernel in the stream do not. */
bool mgpu_split_attributes_allow(const CUlaunchConfig *config, bool whole);

/* Starts the worker threads the split launches need (once; later calls
 * cost an atomic load); returns 0 or -1. */
int mgpu_split_launch_start(int ngpus, const CUcontext *contexts);

/* Makes the streams, events and flags of split launches on `stream` (when
 * it has none yet) ahead of the launch, so that no timing of it (the
 * report's, the cost model's) counts their making; mgpu_split_launch makes
 * them itself otherwise. */
CUresult mgpu_split_launch_prepare(const struct mgpu_gpu_kernels *k, CUstream stream);

/* Submits the slices. Returns the first error of a slice (the home GPU's
 * first), CUDA_SUCCESS when all were submitted. The join is ordered in the
 * program's stream in every case, so that the slices that did start are
 * waited for. */
CUresult mgpu_split_launch(const struct mgpu_split_request *req);

#endif
