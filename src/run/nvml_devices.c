/* Owns asking NVML how many GPUs the machine has (see nvml_devices.h).
 * NVML is opened with dlopen, so that building needs neither nvml.h nor
 * libnvidia-ml (neither comes with every CUDA toolkit); the few
 * declarations below follow NVML's published interface. */
#include "run/nvml_devices.h"

#include <dlfcn.h>
#include <stdio.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_DEVICE_MIG_ENABLE 1

typedef struct nvml_device *nvml_device;

int mgpu_nvml_device_count(char *why, size_t whylen)
{
    void *library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(why, whylen, "no NVML (libnvidia-ml.so.1)");
        return -1;
    }
    int (*init)(void) = (int (*)(void))dlsym(library, "nvmlInit_v2");
    int (*shutdown)(void) = (int (*)(void))dlsym(library, "nvmlShutdown");
    int (*count_of)(unsigned *) = (int (*)(unsigned *))dlsym(library, "nvmlDeviceGetCount_v2");
    int (*device_at)(unsigned, nvml_device *) =
        (int (*)(unsigned, nvml_device *))dlsym(library, "nvmlDeviceGetHandleByIndex_v2");
    int (*mig_mode)(nvml_device, unsigned *, unsigned *) =
        (int (*)(nvml_device, unsigned *, unsigned *))dlsym(library, "nvmlDeviceGetMigMode");
    int count = -1;
    if (init == NULL || shutdown == NULL || count_of == NULL || device_at == NULL) {
        snprintf(why, whylen, "NVML lacks the calls mgpu-run needs");
    } else if (init() != NVML_SUCCESS) {
        snprintf(why, whylen, "NVML does not start");
    } else {
        unsigned n = 0;
        if (count_of(&n) != NVML_SUCCESS) {
            snprintf(why, whylen, "NVML does not count the GPUs");
        } else {
            count = (int)n;
            /* A GPU in MIG mode is several CUDA devices, or none. */
            for (unsigned i = 0; i < n && count >= 0; i++) {
                nvml_device dev;
                unsigned current = 0, pending = 0;
                int r = device_at(i, &dev);
                if (r == NVML_SUCCESS && mig_mode != NULL)
                    r = mig_mode(dev, &current, &pending);
                if (r == NVML_ERROR_NOT_SUPPORTED || mig_mode == NULL)
                    continue;
                if (r != NVML_SUCCESS || current == NVML_DEVICE_MIG_ENABLE) {
                    snprintf(why, whylen, "GPU %u is in MIG mode or unreadable", i);
                    count = -1;
                }
            }
        }
        shutdown();
    }
    dlclose(library);
    return count;
}
