/* Owns the CUDA IPC memory calls (issue 22, item 4): a pointer into the
 * pool gets mgpu's own handle, and mgpu's handles are opened and closed by
 * mapping the exporter's physical memory (memory/pool_ipc.c); every other
 * pointer and handle goes to the driver unchanged, so that plain
 * allocations (MGPU_MEMORY=driver) and other processes' driver handles
 * keep the driver's behaviour. */
#include "src/hooks/hook_table.h"
#include "memory/memory_pool.h"
#include "memory/pool_ipc.h"

#include <cuda.h>
#include <cudaTypedefs.h>

MGPU_DECLARE_HOOK(cuIpcGetMemHandle, PFN_cuIpcGetMemHandle_v4010);
MGPU_DECLARE_HOOK(cuIpcOpenMemHandle_v2, PFN_cuIpcOpenMemHandle_v11000);
MGPU_DECLARE_HOOK(cuIpcOpenMemHandle, PFN_cuIpcOpenMemHandle_v11000); /* same signature */
MGPU_DECLARE_HOOK(cuIpcCloseMemHandle, PFN_cuIpcCloseMemHandle_v4010);

static CUresult CUDAAPI hook_cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr pointer)
{
    MGPU_HOOK_ENTRY(cuIpcGetMemHandle);
    if (mgpu_pool_holds(pointer))
        return mgpu_pool_ipc_export(handle, pointer);
    return real_cuIpcGetMemHandle(handle, pointer);
}

/* Both names of cuIpcOpenMemHandle: mgpu's handles mapped here, the
 * driver's to `real`. */
static CUresult open_handle(CUdeviceptr *pointer, CUipcMemHandle handle, unsigned int flags,
                            PFN_cuIpcOpenMemHandle_v11000 real)
{
    if (mgpu_pool_ipc_is_ours(&handle))
        return mgpu_pool_ipc_import(pointer, &handle);
    return real(pointer, handle, flags);
}

static CUresult CUDAAPI hook_cuIpcOpenMemHandle_v2(CUdeviceptr *pointer, CUipcMemHandle handle,
                                                   unsigned int flags)
{
    MGPU_HOOK_ENTRY(cuIpcOpenMemHandle_v2);
    return open_handle(pointer, handle, flags, real_cuIpcOpenMemHandle_v2);
}

/* The name programs built before CUDA 11 bind to. */
static CUresult CUDAAPI hook_cuIpcOpenMemHandle(CUdeviceptr *pointer, CUipcMemHandle handle,
                                                unsigned int flags)
{
    MGPU_HOOK_ENTRY(cuIpcOpenMemHandle);
    return open_handle(pointer, handle, flags, real_cuIpcOpenMemHandle);
}

static CUresult CUDAAPI hook_cuIpcCloseMemHandle(CUdeviceptr pointer)
{
    MGPU_HOOK_ENTRY(cuIpcCloseMemHandle);
    CUresult r;
    if (mgpu_pool_ipc_close(pointer, &r))
        return r;
    return real_cuIpcCloseMemHandle(pointer);
}

const struct mgpu_hook mgpu_ipc_hooks[] = {
    MGPU_HOOK(cuIpcGetMemHandle),
    MGPU_HOOK(cuIpcOpenMemHandle_v2),
    MGPU_HOOK(cuIpcOpenMemHandle),
    MGPU_HOOK(cuIpcCloseMemHandle),
    MGPU_HOOK_END,
};
