/* Owns asking NVML how many GPUs the machine has (see nvml_devices.h),
 * through partition/nvml_library.h. */
#include "src/run/nvml_devices.h"

#include "partition/nvml_library.h"

#include <stdio.h>

int mgpu_nvml_device_count(char *why, size_t whylen)
{
    struct mgpu_nvml nvml;
    if (mgpu_nvml_open(&nvml, why, whylen) != 0)
        return -1;
    int count = -1;
    unsigned n = 0;
    if (nvml.count(&n) != MGPU_NVML_SUCCESS) {
        snprintf(why, whylen, "NVML does not count the GPUs");
    } else {
        count = (int)n;
        /* A GPU in MIG mode is several CUDA devices, or none. */
        for (unsigned i = 0; i < n && count >= 0; i++) {
            mgpu_nvml_device dev;
            unsigned current = 0, pending = 0;
            int r = nvml.device_at(i, &dev);
            if (r == MGPU_NVML_SUCCESS && nvml.mig_mode != NULL)
                r = nvml.mig_mode(dev, &current, &pending);
            if (r == MGPU_NVML_ERROR_NOT_SUPPORTED || nvml.mig_mode == NULL)
                continue;
            if (r != MGPU_NVML_SUCCESS || current == MGPU_NVML_DEVICE_MIG_ENABLE) {
                snprintf(why, whylen, "GPU %u is in MIG mode or unreadable", i);
                count = -1;
            }
        }
    }
    mgpu_nvml_close(&nvml);
    return count;
}
