/* Owns the hooks of the calls that start the driver and end contexts:
 * cuInit (the process then counts as initialised, base/process_state.h)
 * and cuCtxDestroy and the primary context's release and reset, before
 * which the launch timing's events are collected and given back
 * (base/kernel_timing.h). */
#include "base/kernel_timing.h"
#include "base/monotonic_clock.h"
#include "base/process_state.h"
#include "base/startup_times.h"
#include "src/hooks/hook_table.h"
#include "src/runtime.h"

#include <cuda.h>
#include <cudaTypedefs.h>

MGPU_DECLARE_HOOK(cuInit, PFN_cuInit_v2000);
MGPU_DECLARE_HOOK(cuCtxDestroy_v2, PFN_cuCtxDestroy_v4000);
MGPU_DECLARE_HOOK(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000);
MGPU_DECLARE_HOOK(cuDevicePrimaryCtxReset_v2, PFN_cuDevicePrimaryCtxReset_v11000);

static CUresult CUDAAPI hook_cuInit(unsigned flags)
{
    MGPU_HOOK_ENTRY(cuInit);
    long long start = mgpu_monotonic_ns();
    CUresult r = real_cuInit(flags);
    mgpu_startup_add(MGPU_STARTUP_DRIVER, mgpu_monotonic_ns() - start);
    if (r == CUDA_SUCCESS) {
        mgpu_process_driver_initialised();
        mgpu_runtime_driver_initialised();
    }
    return r;
}

static CUresult CUDAAPI hook_cuCtxDestroy_v2(CUcontext ctx)
{
    MGPU_HOOK_ENTRY(cuCtxDestroy_v2);
    mgpu_timing_release_events();
    return real_cuCtxDestroy_v2(ctx);
}

static CUresult CUDAAPI hook_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    MGPU_HOOK_ENTRY(cuDevicePrimaryCtxRelease_v2);
    mgpu_timing_release_events();
    return real_cuDevicePrimaryCtxRelease_v2(dev);
}

static CUresult CUDAAPI hook_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    MGPU_HOOK_ENTRY(cuDevicePrimaryCtxReset_v2);
    mgpu_timing_release_events();
    return real_cuDevicePrimaryCtxReset_v2(dev);
}

const struct mgpu_hook mgpu_context_hooks[] = {
    MGPU_HOOK(cuInit),
    MGPU_HOOK(cuCtxDestroy_v2),
    MGPU_HOOK(cuDevicePrimaryCtxRelease_v2),
    MGPU_HOOK(cuDevicePrimaryCtxReset_v2),
    MGPU_HOOK_END,
};
