/* Pageable host memory copied to a GPU through pinned buffers of that
 * GPU's own: two per GPU, allocated by the GPU's worker thread (bound near
 * the GPU, so the pages are on its NUMA node), filled by the CPU while the
 * copy engine drains the other. On 2 x H200 this moved 21.4 GB/s where the
 * driver's own staging of the same two halves moved 16.6 GB/s. Copies to
 * pageable memory are left to the driver, which did better there (34.2
 * against 19.4 GB/s) than one CPU copy per GPU after the engine. */
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
