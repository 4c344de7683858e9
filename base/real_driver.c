/* Owns the handle of the real driver library and the table of its entry
 * points that mgpu calls for itself. */
#include "base/real_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct mgpu_driver_api mgpu_drv;
__attribute__((visibility("default"))) __thread int mgpu_driver_bypass
    __attribute__((tls_model("initial-exec")));
static void *driver_handle;
static char driver_path[4096];

void *mgpu_driver_symbol(const char *name)
{
    return driver_handle ? dlsym(driver_handle, name) : NULL;
}

bool mgpu_driver_loaded(void)
{
    return driver_handle != NULL;
}
const char *mgpu_driver_path(void)
{
    return driver_path;
}

int mgpu_driver_load(const char *path, char *err, size_t errlen)
{
    /* RTLD_LOCAL keeps the driver's names out of the global scope, where the
     * shim's must be the ones found. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(err, errlen,
                 "cannot load the CUDA driver %s (%s); check the NVIDIA driver install", path,
                 dlerror());
        return -1;
    }
    struct symbol {
        const char *name;
        void **slot;
    } wanted[] = {
        {"cuInit", (void **)&mgpu_drv.cuInit},
        {"cuDriverGetVersion", (void **)&mgpu_drv.cuDriverGetVersion},
        {"cuGetErrorName", (void **)&mgpu_drv.cuGetErrorName},
        {"cuDeviceGetCount", (void **)&mgpu_drv.cuDeviceGetCount},
        {"cuDeviceGet", (void **)&mgpu_drv.cuDeviceGet},
        {"cuDeviceGetAttribute", (void **)&mgpu_drv.cuDeviceGetAttribute},
        {"cuDeviceTotalMem_v2", (void **)&mgpu_drv.cuDeviceTotalMem},
        {"cuDeviceGetName", (void **)&mgpu_drv.cuDeviceGetName},
        {"cuDeviceGetUuid_v2", (void **)&mgpu_drv.cuDeviceGetUuid},
        {"cuCtxGetCurrent", (void **)&mgpu_drv.cuCtxGetCurrent},
        {"cuStreamGetCtx", (void **)&mgpu_drv.cuStreamGetCtx},
        {"cuStreamIsCapturing", (void **)&mgpu_drv.cuStreamIsCapturing},
        {"cuEventCreate", (void **)&mgpu_drv.cuEventCreate},
        {"cuEventRecord", (void **)&mgpu_drv.cuEventRecord},
        {"cuEventQuery", (void **)&mgpu_drv.cuEventQuery},
        {"cuEventSynchronize", (void **)&mgpu_drv.cuEventSynchronize},
        {"cuEventElapsedTime", (void **)&mgpu_drv.cuEventElapsedTime},
        {"cuEventDestroy_v2", (void **)&mgpu_drv.cuEventDestroy},
        {"cuFuncGetName", (void **)&mgpu_drv.cuFuncGetName},
        {"cuKernelGetName", (void **)&mgpu_drv.cuKernelGetName},
    };
    /* For per-GPU modules; where a driver lacks one, mgpu does not split. */
    struct symbol optional[] = {
        {"cuLaunchCooperativeKernel", (void **)&mgpu_drv.cuLaunchCooperativeKernel},
        {"cuStreamWaitValue32_v2", (void **)&mgpu_drv.cuStreamWaitValue32},
        {"cuStreamWriteValue32_v2", (void **)&mgpu_drv.cuStreamWriteValue32},
        {"cuStreamBatchMemOp_v2", (void **)&mgpu_drv.cuStreamBatchMemOp},
        {"cuThreadExchangeStreamCaptureMode",
         (void **)&mgpu_drv.cuThreadExchangeStreamCaptureMode},
        {"cuMemHostAlloc", (void **)&mgpu_drv.cuMemHostAlloc},
        {"cuMemHostGetDevicePointer_v2", (void **)&mgpu_drv.cuMemHostGetDevicePointer},
        {"cuCtxPushCurrent_v2", (void **)&mgpu_drv.cuCtxPushCurrent},
        {"cuCtxPopCurrent_v2", (void **)&mgpu_drv.cuCtxPopCurrent},
        {"cuCtxGetDevice", (void **)&mgpu_drv.cuCtxGetDevice},
        {"cuModuleLoadDataEx", (void **)&mgpu_drv.cuModuleLoadDataEx},
        {"cuModuleUnload", (void **)&mgpu_drv.cuModuleUnload},
        {"cuModuleGetFunction", (void **)&mgpu_drv.cuModuleGetFunction},
        {"cuModuleGetGlobal_v2", (void **)&mgpu_drv.cuModuleGetGlobal},
        {"cuFuncGetParamInfo", (void **)&mgpu_drv.cuFuncGetParamInfo},
        {"cuMemcpyHtoD_v2", (void **)&mgpu_drv.cuMemcpyHtoD},
        {"cuMemcpyDtoD_v2", (void **)&mgpu_drv.cuMemcpyDtoD},
        {"cuMemAlloc_v2", (void **)&mgpu_drv.cuMemAlloc},
        {"cuMemFree_v2", (void **)&mgpu_drv.cuMemFree},
        {"cuMemcpyDtoDAsync_v2", (void **)&mgpu_drv.cuMemcpyDtoDAsync},
        {"cuMemcpy2DAsync_v2", (void **)&mgpu_drv.cuMemcpy2DAsync},
        {"cuMemcpyPeerAsync", (void **)&mgpu_drv.cuMemcpyPeerAsync},
        {"cuDevicePrimaryCtxRetain", (void **)&mgpu_drv.cuDevicePrimaryCtxRetain},
        {"cuDevicePrimaryCtxRelease_v2", (void **)&mgpu_drv.cuDevicePrimaryCtxRelease},
        {"cuLibraryGetModule", (void **)&mgpu_drv.cuLibraryGetModule},
        {"cuFuncSetAttribute", (void **)&mgpu_drv.cuFuncSetAttribute},
        {"cuFuncSetCacheConfig", (void **)&mgpu_drv.cuFuncSetCacheConfig},
        {"cuFuncGetModule", (void **)&mgpu_drv.cuFuncGetModule},
        {"cuKernelGetLibrary", (void **)&mgpu_drv.cuKernelGetLibrary},
        {"cuMemAddressReserve", (void **)&mgpu_drv.cuMemAddressReserve},
        {"cuMemAddressFree", (void **)&mgpu_drv.cuMemAddressFree},
        {"cuMemCreate", (void **)&mgpu_drv.cuMemCreate},
        {"cuMemRelease", (void **)&mgpu_drv.cuMemRelease},
        {"cuMemMap", (void **)&mgpu_drv.cuMemMap},
        {"cuMemUnmap", (void **)&mgpu_drv.cuMemUnmap},
        {"cuMemSetAccess", (void **)&mgpu_drv.cuMemSetAccess},
        {"cuMemGetAllocationGranularity", (void **)&mgpu_drv.cuMemGetAllocationGranularity},
        {"cuMemExportToShareableHandle", (void **)&mgpu_drv.cuMemExportToShareableHandle},
        {"cuMemImportFromShareableHandle", (void **)&mgpu_drv.cuMemImportFromShareableHandle},
        {"cuDeviceCanAccessPeer", (void **)&mgpu_drv.cuDeviceCanAccessPeer},
        {"cuMemGetInfo_v2", (void **)&mgpu_drv.cuMemGetInfo},
        {"cuMemAllocPitch_v2", (void **)&mgpu_drv.cuMemAllocPitch},
        {"cuMemAllocAsync", (void **)&mgpu_drv.cuMemAllocAsync},
        {"cuMemFreeAsync", (void **)&mgpu_drv.cuMemFreeAsync},
        {"cuPointerGetAttribute", (void **)&mgpu_drv.cuPointerGetAttribute},
        {"cuPointerGetAttributes", (void **)&mgpu_drv.cuPointerGetAttributes},
        {"cuCtxSetCurrent", (void **)&mgpu_drv.cuCtxSetCurrent},
        {"cuCtxSynchronize", (void **)&mgpu_drv.cuCtxSynchronize},
        {"cuStreamCreate", (void **)&mgpu_drv.cuStreamCreate},
        {"cuStreamDestroy_v2", (void **)&mgpu_drv.cuStreamDestroy},
        {"cuStreamWaitEvent", (void **)&mgpu_drv.cuStreamWaitEvent},
        {"cuStreamSynchronize", (void **)&mgpu_drv.cuStreamSynchronize},
        {"cuLaunchKernel", (void **)&mgpu_drv.cuLaunchKernel},
        {"cuLaunchKernelEx", (void **)&mgpu_drv.cuLaunchKernelEx},
        {"cuStreamGetPriority", (void **)&mgpu_drv.cuStreamGetPriority},
        {"cuStreamCreateWithPriority", (void **)&mgpu_drv.cuStreamCreateWithPriority},
        {"cuStreamQuery", (void **)&mgpu_drv.cuStreamQuery},
        {"cuDeviceGetPCIBusId", (void **)&mgpu_drv.cuDeviceGetPCIBusId},
        {"cuCtxEnablePeerAccess", (void **)&mgpu_drv.cuCtxEnablePeerAccess},
        {"cuMemcpyHtoDAsync_v2", (void **)&mgpu_drv.cuMemcpyHtoDAsync},
        {"cuMemcpyDtoHAsync_v2", (void **)&mgpu_drv.cuMemcpyDtoHAsync},
        {"cuMemsetD8Async", (void **)&mgpu_drv.cuMemsetD8Async},
        {"cuMemsetD16Async", (void **)&mgpu_drv.cuMemsetD16Async},
        {"cuMemsetD32Async", (void **)&mgpu_drv.cuMemsetD32Async},
        {"cuDeviceGetP2PAttribute", (void **)&mgpu_drv.cuDeviceGetP2PAttribute},
    };
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        *wanted[i].slot = dlsym(h, wanted[i].name);
        if (*wanted[i].slot == NULL) {
            snprintf(err, errlen,
                     "the CUDA driver %s has no %s; mgpu needs driver 545 (CUDA 12.3) or newer",
                     path, wanted[i].name);
            dlclose(h);
            memset(&mgpu_drv, 0, sizeof mgpu_drv);
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
        *optional[i].slot = dlsym(h, optional[i].name);
    snprintf(driver_path, sizeof driver_path, "%s", path);
    driver_handle = h;
    return 0;
}

unsigned mgpu_device_arch(CUdevice dev)
{
    int major = 0, minor = 0;
    if (mgpu_drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
            CUDA_SUCCESS ||
        mgpu_drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
            CUDA_SUCCESS)
        return 0;
    return (unsigned)(major * 10 + minor);
}

CUresult mgpu_drv_push_context(CUcontext ctx)
{
    return mgpu_drv.cuCtxPushCurrent(ctx);
}

void mgpu_drv_pop_context(void)
{
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
}

void mgpu_drv_relax_capture_mode(void)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (mgpu_drv.cuThreadExchangeStreamCaptureMode != NULL)
        mgpu_drv.cuThreadExchangeStreamCaptureMode(&mode);
}

CUresult mgpu_drv_synchronize_context(CUcontext ctx)
{
    CUresult r = mgpu_drv_push_context(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = mgpu_drv.cuCtxSynchronize();
    mgpu_drv_pop_context();
    return r;
}

const char *mgpu_cu_error_name(CUresult r)
{
    const char *name = NULL;
    if (mgpu_drv.cuGetErrorName == NULL || mgpu_drv.cuGetErrorName(r, &name) != CUDA_SUCCESS ||
        name == NULL)
        return "unknown CUDA error";
    return name;
}
