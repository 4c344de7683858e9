/* Owns the other GPUs' primary contexts that module copies are loaded in
 * (see gpu_contexts.h). All calls go to the real driver. */
#include "gpu_contexts.h"

#include "real_driver.h"

#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[MGPU_MAX_GPUS]; /* index: device ordinal; [0] unused */
static int gpu_count;                    /* 0 until the first call succeeds */
/* Home contexts whose peer access to and from the other GPUs is on. */
static CUcontext peered_homes[8];
static int peered_home_count;
static bool others_peered;

static int retain_others(char *err, size_t errlen)
{
    int n = 0;
    CUresult r = mgpu_drv.cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "counting the GPUs: %s", mgpu_cu_error_name(r));
        return -1;
    }
    if (n > MGPU_MAX_GPUS)
        n = MGPU_MAX_GPUS;
    for (int g = 1; g < n; g++) {
        CUdevice dev;
        r = mgpu_drv.cuDeviceGet(&dev, g);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuDevicePrimaryCtxRetain(&primary[g], dev);
        if (r != CUDA_SUCCESS) {
            snprintf(err, errlen, "the primary context of GPU %d: %s", g, mgpu_cu_error_name(r));
            for (int k = 1; k < g; k++) {
                CUdevice other;
                if (mgpu_drv.cuDeviceGet(&other, k) == CUDA_SUCCESS)
                    mgpu_drv.cuDevicePrimaryCtxRelease(other);
                primary[k] = NULL;
            }
            return -1;
        }
    }
    gpu_count = n;
    return 0;
}

CUresult mgpu_context_device(CUcontext ctx, CUdevice *dev)
{
    if (mgpu_drv.cuCtxPushCurrent == NULL || mgpu_drv.cuCtxPopCurrent == NULL ||
        mgpu_drv.cuCtxGetDevice == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = mgpu_drv.cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = mgpu_drv.cuCtxGetDevice(dev);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return r;
}

/* Lets the kernels of context `from` reach the memory of context `to`. */
static CUresult enable_peer(CUcontext from, CUcontext to)
{
    CUresult r = mgpu_drv.cuCtxPushCurrent(from);
    if (r != CUDA_SUCCESS)
        return r;
    r = mgpu_drv.cuCtxEnablePeerAccess(to, 0);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? CUDA_SUCCESS : r;
}

/* Under contexts_lock: peer access both ways between every pair, so that a
 * slice of a split kernel on any GPU reaches what the program allocated
 * with the driver and the module variables' storage on the home GPU. */
static int enable_peer_access(CUcontext home, char *err, size_t errlen)
{
    for (int i = 0; i < peered_home_count; i++)
        if (peered_homes[i] == home)
            return 0;
    if (mgpu_drv.cuCtxEnablePeerAccess == NULL) {
        snprintf(err, errlen, "the CUDA driver lacks cuCtxEnablePeerAccess");
        return -1;
    }
    CUresult r = CUDA_SUCCESS;
    int a = 0, b = 0;
    for (int g = 1; g < gpu_count && r == CUDA_SUCCESS; g++) {
        a = 0, b = g;
        r = enable_peer(home, primary[g]);
        if (r == CUDA_SUCCESS)
            a = g, b = 0, r = enable_peer(primary[g], home);
    }
    for (int g = 1; !others_peered && g < gpu_count && r == CUDA_SUCCESS; g++)
        for (int h = 1; h < gpu_count && r == CUDA_SUCCESS; h++)
            if (g != h)
                a = g, b = h, r = enable_peer(primary[g], primary[h]);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen,
                 "GPU %d cannot reach GPU %d's memory (%s); choose GPUs with peer access with "
                 "--gpus",
                 a, b, mgpu_cu_error_name(r));
        return -1;
    }
    others_peered = true;
    if (peered_home_count < (int)(sizeof peered_homes / sizeof peered_homes[0]))
        peered_homes[peered_home_count++] = home;
    return 0;
}

int mgpu_gpu_contexts(CUcontext home, CUcontext out[MGPU_MAX_GPUS], int *count, char *err,
                      size_t errlen)
{
    if (mgpu_drv.cuDevicePrimaryCtxRetain == NULL || mgpu_drv.cuDevicePrimaryCtxRelease == NULL ||
        mgpu_drv.cuCtxPushCurrent == NULL || mgpu_drv.cuCtxPopCurrent == NULL ||
        mgpu_drv.cuCtxGetDevice == NULL) {
        snprintf(err, errlen, "the CUDA driver lacks the context calls mgpu needs");
        return -1;
    }
    CUdevice dev = -1;
    CUresult r = mgpu_context_device(home, &dev);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "the program's context: %s", mgpu_cu_error_name(r));
        return -1;
    }
    CUdevice first;
    if (mgpu_drv.cuDeviceGet(&first, 0) != CUDA_SUCCESS || dev != first) {
        snprintf(err, errlen,
                 "the program runs it on device %d, not on device 0 (the GPUs mgpu "
                 "joins)",
                 (int)dev);
        return -1;
    }
    pthread_mutex_lock(&contexts_lock);
    int rc = gpu_count > 0 ? 0 : retain_others(err, errlen);
    if (rc == 0)
        rc = enable_peer_access(home, err, errlen);
    if (rc == 0) {
        out[0] = home;
        for (int g = 1; g < gpu_count; g++)
            out[g] = primary[g];
        *count = gpu_count;
    }
    pthread_mutex_unlock(&contexts_lock);
    return rc;
}
