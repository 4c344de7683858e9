/* The contexts mgpu loads code into on every selected GPU: the program's
 * own context on the home GPU (device 0, the one the program sees as the
 * virtual device), and the primary context of each other GPU, retained
 * the first time it is needed and kept until the process ends. */
#ifndef MGPU_GPU_CONTEXTS_H
#define MGPU_GPU_CONTEXTS_H

#include "config.h"

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* Fills out[0] with `home` and out[1..] with the other GPUs' contexts;
 * *count is the number of GPUs. Peer access is enabled both ways between
 * every pair of them. Returns 0, or -1 with a one-line reason in
 * err (also when `home` is not a context of device 0: a program that drives
 * the other GPUs itself is left alone). */
int mgpu_gpu_contexts(CUcontext home, CUcontext out[MGPU_MAX_GPUS], int *count, char *err,
                      size_t errlen);

/* The device of context `ctx`, asked with it pushed current. */
CUresult mgpu_context_device(CUcontext ctx, CUdevice *dev);

#endif
