/* NVML (libnvidia-ml.so.1) opened with dlopen, for the launcher's questions
 * that need no CUDA driver: how many GPUs, their names, bus ids, memory and
 * peer links. Neither nvml.h nor libnvidia-ml comes with every CUDA
 * toolkit, so the few declarations mgpu needs are here, as NVML publishes
 * them. */
#ifndef MGPU_NVML_LIBRARY_H
#define MGPU_NVML_LIBRARY_H

#include <stddef.h>

#define MGPU_NVML_SUCCESS 0
#define MGPU_NVML_ERROR_NOT_SUPPORTED 3
#define MGPU_NVML_DEVICE_MIG_ENABLE 1
/* nvmlGpuP2PCapsIndex_t and nvmlGpuP2PStatus_t. */
#define MGPU_NVML_P2P_READ 0
#define MGPU_NVML_P2P_NVLINK 2
#define MGPU_NVML_P2P_ATOMICS 3
#define MGPU_NVML_P2P_STATUS_OK 0

typedef struct mgpu_nvml_device_st *mgpu_nvml_device;

/* nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3). */
struct mgpu_nvml_pci_info {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};

/* nvmlMemory_t. */
struct mgpu_nvml_memory {
    unsigned long long total, free, used;
};

/* An NVML started by mgpu_nvml_open. The calls after device_at may be NULL
 * where this NVML lacks them. */
struct mgpu_nvml {
    void *library;
    int (*shutdown)(void);
    int (*count)(unsigned *);
    int (*device_at)(unsigned, mgpu_nvml_device *);
    int (*mig_mode)(mgpu_nvml_device, unsigned *current, unsigned *pending);
    int (*name)(mgpu_nvml_device, char *, unsigned);
    int (*pci_info)(mgpu_nvml_device, struct mgpu_nvml_pci_info *);
    int (*memory)(mgpu_nvml_device, struct mgpu_nvml_memory *);
    int (*p2p_status)(mgpu_nvml_device, mgpu_nvml_device, int index, int *status);
};

/* Opens and starts NVML. Returns 0, or -1 with why (no library, missing
 * calls, NVML does not start). */
int mgpu_nvml_open(struct mgpu_nvml *nvml, char *why, size_t whylen);

/* Shuts NVML down and closes it. */
void mgpu_nvml_close(struct mgpu_nvml *nvml);

#endif
