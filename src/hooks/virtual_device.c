/* Owns the virtual device: device 0 (the home GPU, the first selected)
 * shows the memory and, by default, the multiprocessors of all selected GPUs
 * together, each device counted once however many of the run's GPUs stand
 * on it (eight entries on one H200 show one H200). mgpu-run limits the
 * driver to the selected devices (CUDA_VISIBLE_DEVICES), so the driver's
 * devices are exactly the selected ones, home first.
 *
 * The other selected GPUs stay visible by default (MGPU_DEVICE_COUNT=all):
 * the CUDA 13 runtime checks, when it creates its first context, that
 * cuDeviceGetCount matches the devices the driver enumerated, and fails with
 * "integrity checks failed" (cudaErrorSoftwareValidityNotEstablished) when
 * it does not; the sums on device 0 pass that check. MGPU_DEVICE_COUNT=one
 * shows device 0 alone, for driver-API programs. */
#include "src/hooks/virtual_device.h"

#include "blas/blas_stats.h"
#include "partition/gpu_contexts.h"
#include "src/hooks/hook_table.h"
#include "base/log.h"
#include "base/real_driver.h"
#include "base/config.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <string.h>

MGPU_DECLARE_HOOK(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000);
MGPU_DECLARE_HOOK(cuDeviceGet, PFN_cuDeviceGet_v2000);
MGPU_DECLARE_HOOK(cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000);
MGPU_DECLARE_HOOK(cuDeviceTotalMem_v2, PFN_cuDeviceTotalMem_v3020);
MGPU_DECLARE_HOOK(cuDeviceGetByPCIBusId, PFN_cuDeviceGetByPCIBusId_v4010);

static pthread_mutex_t summary_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_gpu_summary summary;
static CUdevice home_device;
static bool summary_ready;

/* The multiprocessors device 0 reports: by default all GPUs' together, so
 * that a grid sized by them fills every GPU once split. Not where cuBLAS is
 * linked into the program: its queries come from the program's own code,
 * and its machine-code kernels, which run whole on one GPU, must be sized
 * for that GPU (a shared cuBLAS gets one GPU's figures by its lookups,
 * procaddress_hooks.c). MGPU_SM_COUNT, when given, decides. */
static int seen_sm_count(const struct mgpu_gpu_summary *s)
{
    if (mgpu_cfg.sm_count == MGPU_SM_COUNT_HOME)
        return s->sm_home;
    if (!mgpu_cfg.sm_count_given && s->sm_sum != s->sm_home && mgpu_blas_linked_statically()) {
        mgpu_info("device 0 reports one GPU's %d multiprocessors, not all GPUs' %d: cuBLAS is "
                  "linked into the program (MGPU_SM_COUNT=sum overrides)",
                  s->sm_home, s->sm_sum);
        return s->sm_home;
    }
    return s->sm_sum;
}

/* Gathers the selected GPUs' figures once the driver is initialised. */
static CUresult gather_summary(void)
{
    pthread_mutex_lock(&summary_lock);
    CUresult r = CUDA_SUCCESS;
    if (!summary_ready) {
        struct mgpu_gpu_summary s;
        memset(&s, 0, sizeof s);
        const struct mgpu_gpu_entries *e = mgpu_run_gpus();
        int devices[MGPU_MAX_GPUS];
        r = e != NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
        if (e != NULL) {
            s.gpu_count = e->count;
            s.device_count = mgpu_gpu_entries_distinct(e, devices);
        }
        for (int i = 0; r == CUDA_SUCCESS && i < s.device_count; i++) {
            CUdevice dev;
            int sms = 0;
            size_t mem = 0;
            r = mgpu_drv.cuDeviceGet(&dev, devices[i]);
            if (r == CUDA_SUCCESS)
                r = mgpu_drv.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                  dev);
            if (r == CUDA_SUCCESS)
                r = mgpu_drv.cuDeviceTotalMem(&mem, dev);
            if (r == CUDA_SUCCESS && i == 0) {
                home_device = dev;
                s.sm_home = sms;
                r = mgpu_drv.cuDeviceGetName(s.home_name, sizeof s.home_name, dev);
            }
            s.sm_sum += sms;
            s.mem_sum += mem;
        }
        if (r == CUDA_SUCCESS) {
            s.sm_seen = seen_sm_count(&s);
            summary = s;
            summary_ready = true;
        }
    }
    pthread_mutex_unlock(&summary_lock);
    return r;
}

int mgpu_virtual_device_summary(struct mgpu_gpu_summary *out)
{
    if (!mgpu_driver_loaded() || gather_summary() != CUDA_SUCCESS)
        return -1;
    *out = summary;
    return 0;
}

static CUresult CUDAAPI hook_cuDeviceGetCount(int *count)
{
    MGPU_HOOK_ENTRY(cuDeviceGetCount);
    if (mgpu_cfg.device_count == MGPU_DEVICE_COUNT_ALL)
        return real_cuDeviceGetCount(count);
    int real_count = 0;
    CUresult r = real_cuDeviceGetCount(&real_count);
    if (r == CUDA_SUCCESS && count != NULL)
        *count = real_count > 0 ? 1 : 0;
    else if (r == CUDA_SUCCESS)
        r = CUDA_ERROR_INVALID_VALUE;
    return r;
}

static CUresult CUDAAPI hook_cuDeviceGet(CUdevice *device, int ordinal)
{
    MGPU_HOOK_ENTRY(cuDeviceGet);
    if (mgpu_cfg.device_count == MGPU_DEVICE_COUNT_ALL)
        return real_cuDeviceGet(device, ordinal);
    if (ordinal != 0) {
        /* Validate the other arguments the way the driver would first. */
        CUdevice ignored;
        CUresult r = real_cuDeviceGet(&ignored, 0);
        return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_DEVICE;
    }
    return real_cuDeviceGet(device, 0);
}

static CUresult CUDAAPI hook_cuDeviceGetAttribute(int *value, CUdevice_attribute attrib,
                                                  CUdevice dev)
{
    MGPU_HOOK_ENTRY(cuDeviceGetAttribute);
    CUresult r = real_cuDeviceGetAttribute(value, attrib, dev);
    if (r != CUDA_SUCCESS || attrib != CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ||
        mgpu_cfg.sm_count != MGPU_SM_COUNT_SUM)
        return r;
    if (gather_summary() == CUDA_SUCCESS && dev == home_device)
        *value = summary.sm_seen;
    return r;
}

static CUresult CUDAAPI hook_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    MGPU_HOOK_ENTRY(cuDeviceTotalMem_v2);
    CUresult r = real_cuDeviceTotalMem_v2(bytes, dev);
    if (r == CUDA_SUCCESS && gather_summary() == CUDA_SUCCESS && dev == home_device)
        *bytes = summary.mem_sum;
    return r;
}

static CUresult CUDAAPI hook_cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    MGPU_HOOK_ENTRY(cuDeviceGetByPCIBusId);
    CUresult r = real_cuDeviceGetByPCIBusId(dev, pciBusId);
    if (mgpu_cfg.device_count == MGPU_DEVICE_COUNT_ALL)
        return r;
    /* Only the home GPU is a device of the program's. */
    if (r == CUDA_SUCCESS && gather_summary() == CUDA_SUCCESS && *dev != home_device)
        return CUDA_ERROR_INVALID_DEVICE;
    return r;
}

const struct mgpu_hook mgpu_virtual_device_hooks[] = {

    MGPU_HOOK(cuDeviceGetCount),      MGPU_HOOK(cuDeviceGet),
    MGPU_HOOK(cuDeviceGetAttribute),  MGPU_HOOK(cuDeviceTotalMem_v2),
    MGPU_HOOK(cuDeviceGetByPCIBusId), MGPU_HOOK_END,
};
