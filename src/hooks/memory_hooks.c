/* Owns the device-allocation hooks. An allocation made in a context of
 * device 0 goes to the distributed memory pool (memory/memory_pool.h) when
 * the pool is on; others, host and managed allocations pass through to the
 * driver. cuMemGetInfo answers for all the pool's devices. With statistics
 * on, each allocation is recorded for the report. */
#include "partition/gpu_contexts.h"
#include "src/hooks/hook_table.h"
#include "memory/memory_pool.h"
#include "mirror/replicas.h"
#include "base/memory_stats.h"
#include "base/real_driver.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>

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
MGPU_DECLARE_HOOK(cuMemGetInfo_v2, PFN_cuMemGetInfo_v3020);

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

/* The context an allocation in `stream` (NULL: the current context) is
 * made for, when the pool serves it; else NULL. */
static CUcontext pool_context(CUstream stream, bool stream_ordered)
{
    CUcontext ctx = NULL;
    CUresult r =
        stream_ordered ? mgpu_drv.cuStreamGetCtx(stream, &ctx) : mgpu_drv.cuCtxGetCurrent(&ctx);
    return r == CUDA_SUCCESS && mgpu_pool_serves(ctx) ? ctx : NULL;
}

static pthread_once_t unknown_free_once = PTHREAD_ONCE_INIT;
static CUresult unknown_free;

static void ask_unknown_free(void)
{
    unknown_free = real_cuMemFree_v2((CUdeviceptr)256);
}

/* What the driver answers when asked to free a pointer it never gave out
 * (a freed one, or one inside an allocation, gets the same). */
static CUresult unknown_free_result(void)
{
    pthread_once(&unknown_free_once, ask_unknown_free);
    return unknown_free;
}

static CUresult CUDAAPI hook_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
    MGPU_HOOK_ENTRY(cuMemAlloc_v2);
    CUcontext ctx = dptr != NULL && bytes > 0 ? pool_context(NULL, false) : NULL;
    CUresult r = ctx ? mgpu_pool_alloc(dptr, bytes, ctx, NULL) : real_cuMemAlloc_v2(dptr, bytes);
    return noted_alloc(r, dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                                size_t height, unsigned element_size)
{
    MGPU_HOOK_ENTRY(cuMemAllocPitch_v2);
    CUcontext ctx =
        dptr != NULL && pitch != NULL && width > 0 && height > 0 ? pool_context(NULL, false) : NULL;
    CUresult r;
    if (ctx != NULL) {
        /* The driver's pitch for this width, from a one-row allocation. */
        CUdeviceptr probe = 0;
        size_t driver_pitch = 0;
        r = real_cuMemAllocPitch_v2(&probe, &driver_pitch, width, 1, element_size);
        if (r == CUDA_SUCCESS) {
            mgpu_drv.cuMemFree(probe);
            r = mgpu_pool_alloc(dptr, driver_pitch * height, ctx, NULL);
            if (r == CUDA_SUCCESS)
                *pitch = driver_pitch;
        }
    } else {
        r = real_cuMemAllocPitch_v2(dptr, pitch, width, height, element_size);
    }
    return noted_alloc(r, dptr, r == CUDA_SUCCESS && pitch ? *pitch * height : 0);
}

static CUresult CUDAAPI hook_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned flags)
{
    MGPU_HOOK_ENTRY(cuMemAllocManaged);
    return noted_alloc(real_cuMemAllocManaged(dptr, bytes, flags), dptr, bytes);
}

/* Looked up once: threads allocating at once all read it (ThreadSanitizer
 * saw the unsynchronised first write on a 16-core machine). */
static PFN_cuDeviceGetMemPool_v11020 get_mempool;
static pthread_once_t get_mempool_once = PTHREAD_ONCE_INIT;

static void find_get_mempool(void)
{
    get_mempool = (PFN_cuDeviceGetMemPool_v11020)mgpu_driver_symbol("cuDeviceGetMemPool");
}

/* The pool cudaMallocAsync draws from: the device's current one. */
static CUmemoryPool current_mempool(CUcontext ctx)
{
    pthread_once(&get_mempool_once, find_get_mempool);
    CUmemoryPool mempool = NULL;
    CUdevice dev;
    if (get_mempool != NULL && mgpu_context_device(ctx, &dev) == CUDA_SUCCESS)
        get_mempool(&mempool, dev);
    return mempool;
}

static CUresult stream_ordered_alloc(CUdeviceptr *dptr, size_t bytes, CUmemoryPool mempool,
                                     CUstream s, bool *taken)
{
    CUcontext ctx = dptr != NULL && bytes > 0 ? pool_context(s, true) : NULL;
    *taken = ctx != NULL;
    if (ctx == NULL)
        return CUDA_SUCCESS;
    if (mempool == NULL)
        mempool = current_mempool(ctx);
    return mgpu_pool_alloc(dptr, bytes, ctx, mempool);
}

static CUresult CUDAAPI hook_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    MGPU_HOOK_ENTRY(cuMemAllocAsync);
    bool taken;
    CUresult r = stream_ordered_alloc(dptr, bytes, NULL, s, &taken);
    return noted_alloc(taken ? r : real_cuMemAllocAsync(dptr, bytes, s), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    MGPU_HOOK_ENTRY(cuMemAllocAsync_ptsz);
    bool taken;
    CUresult r = stream_ordered_alloc(dptr, bytes, NULL, mgpu_per_thread_stream(s), &taken);
    return noted_alloc(taken ? r : real_cuMemAllocAsync_ptsz(dptr, bytes, s), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes,
                                                     CUmemoryPool pool, CUstream s)
{
    MGPU_HOOK_ENTRY(cuMemAllocFromPoolAsync);
    bool taken = false;
    CUresult r = pool ? stream_ordered_alloc(dptr, bytes, pool, s, &taken) : CUDA_SUCCESS;
    return noted_alloc(taken ? r : real_cuMemAllocFromPoolAsync(dptr, bytes, pool, s), dptr, bytes);
}

static CUresult CUDAAPI hook_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes,
                                                          CUmemoryPool pool, CUstream s)
{
    MGPU_HOOK_ENTRY(cuMemAllocFromPoolAsync_ptsz);
    bool taken = false;
    CUresult r = pool ? stream_ordered_alloc(dptr, bytes, pool, mgpu_per_thread_stream(s), &taken)
                      : CUDA_SUCCESS;
    return noted_alloc(taken ? r : real_cuMemAllocFromPoolAsync_ptsz(dptr, bytes, pool, s), dptr,
                       bytes);
}

/* The bytes of the pool buffer that starts at dptr, whose replicas go with
 * it; 0 when no buffer starts there (a bad free, which the pool answers). */
static size_t buffer_bytes(CUdeviceptr dptr)
{
    struct mgpu_pool_block b;
    return mgpu_pool_find(dptr, &b) && b.start == dptr ? b.bytes : 0;
}

static CUresult CUDAAPI hook_cuMemFree_v2(CUdeviceptr dptr)
{
    MGPU_HOOK_ENTRY(cuMemFree_v2);
    if (mgpu_pool_holds(dptr)) {
        size_t bytes = buffer_bytes(dptr);
        CUresult r = mgpu_pool_free(dptr, unknown_free_result());
        if (r == CUDA_SUCCESS)
            mgpu_replicas_freed(dptr, bytes, NULL, false);
        return noted_free(r, dptr);
    }
    return noted_free(real_cuMemFree_v2(dptr), dptr);
}

static CUresult CUDAAPI hook_cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    MGPU_HOOK_ENTRY(cuMemFreeAsync);
    if (mgpu_pool_holds(dptr)) {
        mgpu_replicas_freed(dptr, buffer_bytes(dptr), s, true);
        return noted_free(mgpu_pool_free_async(dptr, s, unknown_free_result()), dptr);
    }
    return noted_free(real_cuMemFreeAsync(dptr, s), dptr);
}

static CUresult CUDAAPI hook_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
    MGPU_HOOK_ENTRY(cuMemFreeAsync_ptsz);
    if (mgpu_pool_holds(dptr)) {
        mgpu_replicas_freed(dptr, buffer_bytes(dptr), mgpu_per_thread_stream(s), true);
        return noted_free(
            mgpu_pool_free_async(dptr, mgpu_per_thread_stream(s), unknown_free_result()), dptr);
    }
    return noted_free(real_cuMemFreeAsync_ptsz(dptr, s), dptr);
}

/* Free and total memory of all the pool's devices, each counted once
 * however many of the run's GPUs stand on it, for a context it serves. */
static CUresult memory_info(size_t *free_bytes, size_t *total_bytes,
                            CUresult(CUDAAPI *real)(size_t *, size_t *))
{
    CUcontext ctx = NULL, contexts[MGPU_MAX_GPUS];
    int n = 0;
    const struct mgpu_gpu_entries *entries = mgpu_run_gpus();
    if (free_bytes == NULL || total_bytes == NULL || entries == NULL ||
        mgpu_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !mgpu_pool_serves(ctx) ||
        (n = mgpu_pool_gpus(contexts)) < 2 || n != entries->count)
        return real(free_bytes, total_bytes);
    CUresult r = real(free_bytes, total_bytes);
    for (int g = 1; g < n && r == CUDA_SUCCESS; g++) {
        if (!mgpu_gpu_entries_first_on_device(entries, g))
            continue; /* the device 0 of the call above, or one already counted */
        size_t f = 0, t = 0;
        r = mgpu_drv.cuCtxPushCurrent(contexts[g]);
        if (r != CUDA_SUCCESS)
            break;
        r = mgpu_drv.cuMemGetInfo(&f, &t);
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
        *free_bytes += f;
        *total_bytes += t;
    }
    return r;
}

static CUresult CUDAAPI hook_cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    MGPU_HOOK_ENTRY(cuMemGetInfo_v2);
    return memory_info(free_bytes, total_bytes, real_cuMemGetInfo_v2);
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
    MGPU_HOOK(cuMemGetInfo_v2),
    MGPU_HOOK_END,
};
