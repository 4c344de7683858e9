/* One persistent thread per GPU, each with that GPU's context current, to
 * run work on several GPUs at the same time: the slices of split launches
 * and host calls that block, such as copies from pageable memory.
 *
 * A handoff must cost far less than a launch (DESIGN §5: the slices of one
 * launch have to start within a few microseconds of each other), so a
 * worker spins for a while after each job before it sleeps, and the caller
 * spins while it waits. */
#ifndef MGPU_GPU_WORKERS_H
#define MGPU_GPU_WORKERS_H

#include "base/config.h"

#include <cuda.h>
#include <stdbool.h>

typedef void (*mgpu_gpu_work_fn)(int gpu, void *arg);

/* Starts the threads for `ngpus` GPUs (once; later calls start only the
 * missing ones), each bound to the CPUs near its GPU (hwloc). Returns 0, or -1 when a thread cannot
 * be made. */
int mgpu_gpu_workers_start(int ngpus, const CUcontext *contexts);

/* Hands fn(g, arg) to the thread of every GPU g with wanted[g] set and
 * returns at once; the caller may work meanwhile and must then call
 * mgpu_gpu_workers_wait. From begin to wait the workers are the caller's
 * alone: another caller's begin waits. */
void mgpu_gpu_workers_begin(const bool wanted[MGPU_MAX_GPUS], mgpu_gpu_work_fn fn, void *arg);
void mgpu_gpu_workers_wait(void);

/* Both at once. */
void mgpu_gpu_workers_run(const bool wanted[MGPU_MAX_GPUS], mgpu_gpu_work_fn fn, void *arg);

#endif
