/* Owns opening NVML with dlopen and finding the calls mgpu uses (see
 * nvml_library.h). */
#include "partition/nvml_library.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int mgpu_nvml_open(struct mgpu_nvml *nvml, char *why, size_t whylen)
{
    memset(nvml, 0, sizeof *nvml);
    void *library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(why, whylen, "no NVML (libnvidia-ml.so.1)");
        return -1;
    }
    int (*init)(void) = (int (*)(void))dlsym(library, "nvmlInit_v2");
    nvml->shutdown = (int (*)(void))dlsym(library, "nvmlShutdown");
    nvml->count = (int (*)(unsigned *))dlsym(library, "nvmlDeviceGetCount_v2");
    nvml->device_at =
        (int (*)(unsigned, mgpu_nvml_device *))dlsym(library, "nvmlDeviceGetHandleByIndex_v2");
    if (init == NULL || nvml->shutdown == NULL || nvml->count == NULL || nvml->device_at == NULL) {
        snprintf(why, whylen, "NVML lacks the calls mgpu-run needs");
        dlclose(library);
        return -1;
    }
    if (init() != MGPU_NVML_SUCCESS) {
        snprintf(why, whylen, "NVML does not start");
        dlclose(library);
        return -1;
    }
    nvml->library = library;
    nvml->mig_mode =
        (int (*)(mgpu_nvml_device, unsigned *, unsigned *))dlsym(library, "nvmlDeviceGetMigMode");
    nvml->name = (int (*)(mgpu_nvml_device, char *, unsigned))dlsym(library, "nvmlDeviceGetName");
    nvml->pci_info = (int (*)(mgpu_nvml_device, struct mgpu_nvml_pci_info *))dlsym(
        library, "nvmlDeviceGetPciInfo_v3");
    nvml->memory = (int (*)(mgpu_nvml_device, struct mgpu_nvml_memory *))dlsym(
        library, "nvmlDeviceGetMemoryInfo");
    nvml->p2p_status = (int (*)(mgpu_nvml_device, mgpu_nvml_device, int, int *))dlsym(
        library, "nvmlDeviceGetP2PStatus");
    return 0;
}

void mgpu_nvml_close(struct mgpu_nvml *nvml)
{
    if (nvml->library == NULL)
        return;
    nvml->shutdown();
    dlclose(nvml->library);
    nvml->library = NULL;
}
