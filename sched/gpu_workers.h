/* One persistent thread per GPU, each with that GPU's context current, to
 * run work on several GPUs at the same time: host calls that block, such as
 * copies from pageable memory, and (later) the slices of split launches. */
#ifndef MGPU_GPU_WORKERS_H
#define MGPU_GPU_WORKERS_H

#include "config.h"

#include <cuda.h>
#include <stdbool.h>

typedef void (*mgpu_gpu_work_fn)(int gpu, void *arg);

/* Starts the threads for `ngpus` GPUs (once; later calls return at once).
 * Returns 0, or -1 when a thread cannot be made. */
int mgpu_gpu_workers_start(int ngpus, const CUcontext contexts[MGPU_MAX_GPUS]);

/* Runs fn(g, arg) on the thread of every GPU g with wanted[g] set, all at
 * once, and returns when all are done. One caller at a time: the caller
 * holds a lock of its own around it. */
void mgpu_gpu_workers_run(const bool wanted[MGPU_MAX_GPUS], mgpu_gpu_work_fn fn, void *arg);

#endif
