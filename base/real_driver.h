/* The real CUDA driver, loaded by mgpu: the entry points mgpu itself calls.
 * mgpu's own driver calls go through here, never through its hooks. */
#ifndef MGPU_REAL_DRIVER_H
#define MGPU_REAL_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>
#include <stddef.h>

struct mgpu_driver_api {
    PFN_cuInit_v2000 cuInit;
    PFN_cuDriverGetVersion_v2020 cuDriverGetVersion;
    PFN_cuGetErrorName_v6000 cuGetErrorName;
    PFN_cuDeviceGetCount_v2000 cuDeviceGetCount;
    PFN_cuDeviceGet_v2000 cuDeviceGet;
    PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute;
    PFN_cuDeviceTotalMem_v3020 cuDeviceTotalMem;
    PFN_cuDeviceGetName_v2000 cuDeviceGetName;
    PFN_cuDeviceGetUuid_v11040 cuDeviceGetUuid;
    PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;
    PFN_cuStreamGetCtx_v9020 cuStreamGetCtx;
    PFN_cuStreamIsCapturing_v10000 cuStreamIsCapturing;
    PFN_cuEventCreate_v2000 cuEventCreate;
    PFN_cuEventRecord_v2000 cuEventRecord;
    PFN_cuEventQuery_v2000 cuEventQuery;
    PFN_cuEventSynchronize_v2000 cuEventSynchronize;
    PFN_cuEventElapsedTime_v2000 cuEventElapsedTime;
    PFN_cuEventDestroy_v4000 cuEventDestroy;
    PFN_cuFuncGetName_v12030 cuFuncGetName;
    PFN_cuKernelGetName_v12030 cuKernelGetName;
    /* per-GPU modules */
    PFN_cuCtxPushCurrent_v4000 cuCtxPushCurrent;
    PFN_cuCtxPopCurrent_v4000 cuCtxPopCurrent;
    PFN_cuCtxGetDevice_v2000 cuCtxGetDevice;
    PFN_cuModuleLoadDataEx_v2010 cuModuleLoadDataEx;
    PFN_cuModuleUnload_v2000 cuModuleUnload;
    PFN_cuModuleGetFunction_v2000 cuModuleGetFunction;
    PFN_cuModuleGetGlobal_v3020 cuModuleGetGlobal;
    PFN_cuFuncGetParamInfo_v12040 cuFuncGetParamInfo;
    PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD;
    PFN_cuMemcpyDtoD_v3020 cuMemcpyDtoD;
    PFN_cuMemAlloc_v3020 cuMemAlloc;
    PFN_cuMemFree_v3020 cuMemFree;
    PFN_cuMemcpyDtoDAsync_v3020 cuMemcpyDtoDAsync;
    PFN_cuMemcpy2DAsync_v3020 cuMemcpy2DAsync;
    PFN_cuMemcpyPeerAsync_v4000 cuMemcpyPeerAsync;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease;
    PFN_cuLibraryGetModule_v12000 cuLibraryGetModule;
    PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute;
    PFN_cuFuncSetCacheConfig_v3000 cuFuncSetCacheConfig;
    PFN_cuFuncGetModule_v11000 cuFuncGetModule;
    PFN_cuKernelGetLibrary_v12050 cuKernelGetLibrary;
    /* the distributed memory pool and the copies split by owner */
    PFN_cuMemAddressReserve_v10020 cuMemAddressReserve;
    PFN_cuMemAddressFree_v10020 cuMemAddressFree;
    PFN_cuMemCreate_v10020 cuMemCreate;
    PFN_cuMemRelease_v10020 cuMemRelease;
    PFN_cuMemMap_v10020 cuMemMap;
    PFN_cuMemUnmap_v10020 cuMemUnmap;
    PFN_cuMemSetAccess_v10020 cuMemSetAccess;
    PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity;
    /* pool memory shared with other processes (cuIpcGetMemHandle) */
    PFN_cuMemExportToShareableHandle_v10020 cuMemExportToShareableHandle;
    PFN_cuMemImportFromShareableHandle_v10020 cuMemImportFromShareableHandle;
    PFN_cuDeviceCanAccessPeer_v4000 cuDeviceCanAccessPeer;
    PFN_cuMemGetInfo_v3020 cuMemGetInfo;
    PFN_cuMemAllocPitch_v3020 cuMemAllocPitch;
    PFN_cuMemAllocAsync_v11020 cuMemAllocAsync;
    PFN_cuMemFreeAsync_v11020 cuMemFreeAsync;
    PFN_cuPointerGetAttribute_v4000 cuPointerGetAttribute;
    PFN_cuPointerGetAttributes_v7000 cuPointerGetAttributes;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
    PFN_cuCtxSynchronize_v2000 cuCtxSynchronize;
    PFN_cuStreamCreate_v2000 cuStreamCreate;
    PFN_cuStreamDestroy_v4000 cuStreamDestroy;
    PFN_cuStreamWaitEvent_v3020 cuStreamWaitEvent;
    PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
    PFN_cuMemcpyHtoDAsync_v3020 cuMemcpyHtoDAsync;
    PFN_cuMemcpyDtoHAsync_v3020 cuMemcpyDtoHAsync;
    PFN_cuMemsetD8Async_v3020 cuMemsetD8Async;
    PFN_cuMemsetD16Async_v3020 cuMemsetD16Async;
    PFN_cuMemsetD32Async_v3020 cuMemsetD32Async;
    /* split launches */
    PFN_cuLaunchKernel_v4000 cuLaunchKernel;
    PFN_cuLaunchKernelEx_v11060 cuLaunchKernelEx;
    PFN_cuLaunchCooperativeKernel_v9000 cuLaunchCooperativeKernel; /* optional */
    PFN_cuStreamGetPriority_v5050 cuStreamGetPriority;
    PFN_cuStreamCreateWithPriority_v5050 cuStreamCreateWithPriority;
    PFN_cuStreamQuery_v2000 cuStreamQuery;
    PFN_cuDeviceGetPCIBusId_v4010 cuDeviceGetPCIBusId;
    PFN_cuCtxEnablePeerAccess_v4000 cuCtxEnablePeerAccess;
    PFN_cuDeviceGetP2PAttribute_v8000 cuDeviceGetP2PAttribute;
    /* fork and join on sequence flags (optional: events otherwise) */
    PFN_cuStreamWaitValue32_v11070 cuStreamWaitValue32;
    PFN_cuStreamWriteValue32_v11070 cuStreamWriteValue32;
    PFN_cuStreamBatchMemOp_v11070 cuStreamBatchMemOp;
    PFN_cuMemHostAlloc_v2020 cuMemHostAlloc;
    PFN_cuMemHostGetDevicePointer_v3020 cuMemHostGetDevicePointer;
    /* mgpu's own threads out of the program's graph captures (optional) */
    PFN_cuThreadExchangeStreamCaptureMode_v10010 cuThreadExchangeStreamCaptureMode;
};

extern struct mgpu_driver_api mgpu_drv;

/* Loads the driver at `path` and fills mgpu_drv. Returns 0, or -1 with a
 * one-line message in err. */
int mgpu_driver_load(const char *path, char *err, size_t errlen);
bool mgpu_driver_loaded(void);
const char *mgpu_driver_path(void);

/* The driver's own entry point for an exported name, or NULL. */
void *mgpu_driver_symbol(const char *name);

/* The compute capability of `dev` as one number (90 for sm_90), or 0 when
 * the driver does not say. */
unsigned mgpu_device_arch(CUdevice dev);

/* "CUDA_ERROR_NO_DEVICE" and the like, for messages. */
const char *mgpu_cu_error_name(CUresult r);

/* Non-zero on a thread whose driver calls, made by whatever library, go to
 * the driver itself rather than to mgpu's hooks: the shim's exports read
 * it (src/shim/gen-driver-exports.sh). mgpu sets it around its calls into
 * a library that reaches the driver through the shim, such as the cuBLAS
 * handles that run the parts of a split GEMM (blas/), so that their
 * allocations and launches are that GPU's own. Initial-exec: the shim's
 * trampolines read it with two instructions. */
extern __thread int mgpu_driver_bypass __attribute__((tls_model("initial-exec")));
static inline void mgpu_driver_bypass_begin(void)
{
    mgpu_driver_bypass++;
}
static inline void mgpu_driver_bypass_end(void)
{
    mgpu_driver_bypass--;
}

/* `ctx` made current through the real driver, over the caller's, and the
 * caller's put back: for a few driver calls on another GPU's context. */
CUresult mgpu_drv_push_context(CUcontext ctx);
void mgpu_drv_pop_context(void);

/* For each of mgpu's own threads that calls the driver (the slice watch,
 * the GPU workers), first thing: its calls
 * may neither fail nor invalidate a graph capture the program runs in
 * global mode on another thread. A stream query made by the slice watch
 * while graph_replay captured its graph failed the capture with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (another run crashed in that query)
 * on 4 x H200. No effect with a driver that lacks the call. */
void mgpu_drv_relax_capture_mode(void);

/* Waits for every stream of `ctx` through the real driver, with ctx made
 * current for the call and the caller's current context put back. Returns
 * the push's error, else the synchronisation's. */
CUresult mgpu_drv_synchronize_context(CUcontext ctx);

#endif
