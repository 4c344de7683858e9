/* Copies and sets on pool memory, split by the GPU that owns each part and
 * run on every owner's copy engine at the same time, in the order of the
 * program's stream (it forks to one stream per GPU and joins back with
 * events). Each function returns false when it leaves the call to the
 * driver: no pool memory involved, too small to be worth splitting, one
 * owner only, a stream being captured, or anything unusual. That is always
 * correct, because pool addresses are valid on every GPU. */
#ifndef MGPU_COPY_ROUTER_H
#define MGPU_COPY_ROUTER_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* How the program's call orders itself: a synchronous call runs in
 * `stream` (the legacy or per-thread default stream) and returns when done. */
struct mgpu_copy_call {
    CUstream stream;
    bool synchronous;
};

bool mgpu_copy_to_device(CUdeviceptr dst, const void *src, size_t bytes, struct mgpu_copy_call call,
                         CUresult *result);
bool mgpu_copy_to_host(void *dst, CUdeviceptr src, size_t bytes, struct mgpu_copy_call call,
                       CUresult *result);
bool mgpu_copy_on_device(CUdeviceptr dst, CUdeviceptr src, size_t bytes, struct mgpu_copy_call call,
                         CUresult *result);
/* cuMemcpy/cuMemcpyAsync: either side may be host or device memory. */
bool mgpu_copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t bytes, struct mgpu_copy_call call,
                       CUresult *result);
/* cuMemsetD8/D16/D32: `count` elements of `element_size` bytes. */
bool mgpu_set_device(CUdeviceptr dst, unsigned value, unsigned element_size, size_t count,
                     struct mgpu_copy_call call, CUresult *result);

/* Copies and sets split so far, for the report. */
unsigned long mgpu_copy_router_splits(void);

/* At exit, once the GPUs' work is done: the router's streams and events
 * destroyed; no copy is split after it. */
void mgpu_copy_router_release(void);

#endif
