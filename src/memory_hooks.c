/* Owns the device-allocation hooks. Allocations go to the driver unchanged;
 * with statistics on, each one is recorded for the report. */
#include "hook_table.h"
#include "memory_stats.h"

#include <cuda.h>
#include <cudaTypedefs.h>

MGPU_DECLARE_HOOK(cuMemAlloc_v2, PFN_cuMemAlloc_v3020);
MGPU_DECLARE_HOOK(cuMemAllocPitch_v2, PFN_cuMemAllocPitch_v3020);
MGPU_DECLARE_HOOK(cuMemAllocManaged, PFN_cuMemAllocManaged_v6000);
MGPU_DECLARE_HOOK(cuMemAllocAsync, PFN_cuMemAllocAsync_v11020);
MGPU_DECLARE_HOOK(cuMemAllocAsync_ptsz, PFN_cuMemAllocAsync_v11020_ptsz);
MGPU_DECLARE_HOOK(cuMemAllocFromPoolAsync, PFN_cuMemAllocFromPoolAsync_v11020);
MGPU_DECLARE_HOOK(cuMemAllocFromPoolAsync_ptsz, PFN_cuMemAllocFromPoolAsync_v11020_ptsz);
MGPU_DECLARE_HOOK(cuMemFree_v2, PFN_cuMemFree_v3020);
MGPU_DECLARE_HOOK(cuMemFreeAsync, PFN_cuMemFreeAsync_v11020);
MGPU_DECLARE_HOOK(cuMemFreeAsync_ptsz, PFN_cuMemFreeAsync_v11020_ptsz);

static CUresult noted_alloc(CUresult r, const CUdeviceptr *dptr, size_t bytes)
{
    if (r == CUDA_SUCCESS && mgpu_stats_enabled && dptr != NULL)
        mgpu_memory_note_alloc(*dptr, bytes);
    return r;
}

static CUresult noted_free(CUresult r, CUdeviceptr dptr)
{
    if (r == CUDA_SUCCESS && mgpu_stats_enabled)
        mgpu_memory_note_free(dptr);
    return r;
}

static CUresult CUDAAPI hook_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
    MGPU_COUNT_CALL(cuMemAlloc_v2);
    return noted_alloc(real_cuMemAlloc_v2(dptr, bytes), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                                size_t height, unsigned element_size)
{
    MGPU_COUNT_CALL(cuMemAllocPitch_v2);
    CUresult r = real_cuMemAllocPitch_v2(dptr, pitch, width, height, element_size);
    return noted_alloc(r, dptr, r == CUDA_SUCCESS && pitch ? *pitch * height : 0);
}

static CUresult CUDAAPI hook_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned flags)
{
    MGPU_COUNT_CALL(cuMemAllocManaged);
    return noted_alloc(real_cuMemAllocManaged(dptr, bytes, flags), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    MGPU_COUNT_CALL(cuMemAllocAsync);
    return noted_alloc(real_cuMemAllocAsync(dptr, bytes, s), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    MGPU_COUNT_CALL(cuMemAllocAsync_ptsz);
    return noted_alloc(real_cuMemAllocAsync_ptsz(dptr, bytes, s), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes,
                                                     CUmemoryPool pool, CUstream s)
{
    MGPU_COUNT_CALL(cuMemAllocFromPoolAsync);
    return noted_alloc(real_cuMemAllocFromPoolAsync(dptr, bytes, pool, s), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes,
                                                          CUmemoryPool pool, CUstream s)
{
    MGPU_COUNT_CALL(cuMemAllocFromPoolAsync_ptsz);
    return noted_alloc(real_cuMemAllocFromPoolAsync_ptsz(dptr, bytes, pool, s), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemFree_v2(CUdeviceptr dptr)
{
    MGPU_COUNT_CALL(cuMemFree_v2);
    return noted_free(real_cuMemFree_v2(dptr), dptr);
}

static CUresult CUDAAPI hook_cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    MGPU_COUNT_CALL(cuMemFreeAsync);
    return noted_free(real_cuMemFreeAsync(dptr, s), dptr);
}

static CUresult CUDAAPI hook_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
    MGPU_COUNT_CALL(cuMemFreeAsync_ptsz);
    return noted_free(real_cuMemFreeAsync_ptsz(dptr, s), dptr);
}

const struct mgpu_hook mgpu_memory_hooks[] = {
    MGPU_HOOK(cuMemAlloc_v2),
    MGPU_HOOK(cuMemAllocPitch_v2),
    MGPU_HOOK(cuMemAllocManaged),
    MGPU_HOOK(cuMemAllocAsync),
    MGPU_HOOK(cuMemAllocAsync_ptsz),
    MGPU_HOOK(cuMemAllocFromPoolAsync),
    MGPU_HOOK(cuMemAllocFromPoolAsync_ptsz),
    MGPU_HOOK(cuMemFree_v2),
    MGPU_HOOK(cuMemFreeAsync),
    MGPU_HOOK(cuMemFreeAsync_ptsz),
    MGPU_HOOK_END,
};
