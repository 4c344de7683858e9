/* Owns the hooks of the program's synchronising calls: each returns what
 * the driver says for the home context, or the error of a slice a split
 * kernel ran on another GPU, and flushes the other GPUs' printf output
 * (sched/slice_errors.h). */
#include "src/hooks/hook_table.h"
#include "sched/slice_errors.h"

#include <cuda.h>
#include <cudaTypedefs.h>

MGPU_DECLARE_HOOK(cuCtxSynchronize, PFN_cuCtxSynchronize_v2000);
MGPU_DECLARE_HOOK(cuCtxSynchronize_v2, PFN_cuCtxSynchronize_v13000);
MGPU_DECLARE_HOOK(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000);
MGPU_DECLARE_HOOK(cuStreamSynchronize_ptsz, PFN_cuStreamSynchronize_v7000_ptsz);
MGPU_DECLARE_HOOK(cuEventSynchronize, PFN_cuEventSynchronize_v2000);
MGPU_DECLARE_HOOK(cuStreamQuery, PFN_cuStreamQuery_v2000);
MGPU_DECLARE_HOOK(cuStreamQuery_ptsz, PFN_cuStreamQuery_v7000_ptsz);
MGPU_DECLARE_HOOK(cuEventQuery, PFN_cuEventQuery_v2000);

static CUresult CUDAAPI hook_cuCtxSynchronize(void)
{
    MGPU_HOOK_ENTRY(cuCtxSynchronize);
    return mgpu_slice_errors_check(real_cuCtxSynchronize(), true);
}

/* cudaDeviceSynchronize in CUDA 13 names its context. */
static CUresult CUDAAPI hook_cuCtxSynchronize_v2(CUcontext ctx)
{
    MGPU_HOOK_ENTRY(cuCtxSynchronize_v2);
    return mgpu_slice_errors_check(real_cuCtxSynchronize_v2(ctx), true);
}

static CUresult CUDAAPI hook_cuStreamSynchronize(CUstream stream)
{
    MGPU_HOOK_ENTRY(cuStreamSynchronize);
    return mgpu_slice_errors_check(real_cuStreamSynchronize(stream), true);
}

static CUresult CUDAAPI hook_cuStreamSynchronize_ptsz(CUstream stream)
{
    MGPU_HOOK_ENTRY(cuStreamSynchronize_ptsz);
    return mgpu_slice_errors_check(real_cuStreamSynchronize_ptsz(stream), true);
}

static CUresult CUDAAPI hook_cuEventSynchronize(CUevent event)
{
    MGPU_HOOK_ENTRY(cuEventSynchronize);
    return mgpu_slice_errors_check(real_cuEventSynchronize(event), true);
}

/* A query that finds work still running answers that, as the driver
 * would before the kernel had faulted. */
static CUresult after_query(CUresult r)
{
    return r == CUDA_ERROR_NOT_READY ? r : mgpu_slice_errors_check(r, false);
}

static CUresult CUDAAPI hook_cuStreamQuery(CUstream stream)
{
    MGPU_HOOK_ENTRY(cuStreamQuery);
    return after_query(real_cuStreamQuery(stream));
}

static CUresult CUDAAPI hook_cuStreamQuery_ptsz(CUstream stream)
{
    MGPU_HOOK_ENTRY(cuStreamQuery_ptsz);
    return after_query(real_cuStreamQuery_ptsz(stream));
}

static CUresult CUDAAPI hook_cuEventQuery(CUevent event)
{
    MGPU_HOOK_ENTRY(cuEventQuery);
    return after_query(real_cuEventQuery(event));
}

const struct mgpu_hook mgpu_sync_hooks[] = {
    MGPU_HOOK(cuCtxSynchronize),
    MGPU_HOOK(cuCtxSynchronize_v2),
    MGPU_HOOK(cuStreamSynchronize),
    MGPU_HOOK(cuStreamSynchronize_ptsz),
    MGPU_HOOK(cuEventSynchronize),
    MGPU_HOOK(cuStreamQuery),
    MGPU_HOOK(cuStreamQuery_ptsz),
    MGPU_HOOK(cuEventQuery),
    MGPU_HOOK_END,
};
