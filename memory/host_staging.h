/* Pageable host memory copied to a GPU through pinned buffers of that
 * GPU's own: two per GPU, allocated by the GPU's worker thread (bound near
 * the GPU, so that on a machine of several NUMA nodes the pages are on the
 * GPU's), filled by the CPU while the copy engine drains the other. On
 * 2 x H200 (one NUMA node) bench/memory_bandwidth under -n 2 moved 17.4
 * GB/s this way against 16.4 through the driver's staging, and on 4 x H200
 * under -n 4 32.3 against 25.5 (medians of three runs). Copies to pageable
 * memory are left to the driver: a CPU copy after the engine's, per GPU,
 * moved 19.4 GB/s where the driver moved 34.2 (two GPUs, measured outside
 * mgpu). */
#ifndef MGPU_HOST_STAGING_H
#define MGPU_HOST_STAGING_H

#include <cuda.h>
#include <stddef.h>

/* In the thread of GPU `gpu` with its context current: copies `bytes` from
 * pageable `src` to `dst` in `stream`, a stream of that context. Returns
 * once every byte has been read from src (the last chunks may still be on
 * their way to the GPU, in stream order). CUDA_ERROR_NOT_SUPPORTED, with
 * nothing copied, when the GPU has no staging buffers (none could be
 * allocated): the caller then leaves the copy to the driver. */
CUresult mgpu_staged_to_device(int gpu, CUdeviceptr dst, const void *src, size_t bytes,
                               CUstream stream);

/* Bytes copied through the staging buffers so far, for the report. */
unsigned long long mgpu_staged_bytes(void);

#endif
