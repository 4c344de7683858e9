/* A stand-in NVML (libnvidia-ml.so.1) for the launcher's tests: it counts
 * FAKE_NVML_GPUS GPUs (default 1), none in MIG mode, or FAKE_NVML_MIG=1
 * puts them all in it. Each GPU is named and placed as the fake driver's
 * (bus 0xfa, its device number the GPU's position in bus order), and its
 * peer links follow the fake driver's variables: FAKE_CUDA_NVLINK pairs
 * are NVLink with atomics, FAKE_CUDA_NO_PEER pairs have no peer access.
 * FAKE_NVML_REVERSED=1 enumerates the GPUs in reverse bus order (NVML
 * promises no order); FAKE_NVML_OTHER_NAME=N names GPU N otherwise;
 * FAKE_NVML_P2P_LOG=FILE logs the P2P questions asked, FAKE_NVML_INIT_LOG=FILE
 * each start of NVML ("init"). Just the calls mgpu-run makes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

static unsigned fake_count(void)
{
    const char *n = getenv("FAKE_NVML_GPUS");
    return n != NULL ? (unsigned)atoi(n) : 1;
}

/* The position in bus order of the GPU behind a handle. */
static int bus_position(void *device)
{
    int index = (int)(size_t)device - 1;
    const char *reversed = getenv("FAKE_NVML_REVERSED");
    return reversed != NULL && reversed[0] == '1' ? (int)fake_count() - 1 - index : index;
}

/* Whether the variable lists the pair a-b (positions), as "0-1,2-3". */
static int listed(const char *var, int a, int b)
{
    const char *list = getenv(var);
    int x, y, used;
    while (list != NULL && sscanf(list, "%d-%d%n", &x, &y, &used) == 2) {
        if ((x == a && y == b) || (x == b && y == a))
            return 1;
        list += used;
        list += *list == ',';
    }
    return 0;
}

FAKE_EXPORT int nvmlInit_v2(void)
{
    const char *log = getenv("FAKE_NVML_INIT_LOG");
    FILE *f = log != NULL ? fopen(log, "a") : NULL;
    if (f != NULL) {
        fputs("init\n", f);
        fclose(f);
    }
    return 0;
}

FAKE_EXPORT int nvmlShutdown(void)
{
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned *count)
{
    *count = fake_count();
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device)
{
    if (index >= fake_count())
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *device = (void *)(size_t)(index + 1);
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetMigMode(void *device, unsigned *current, unsigned *pending)
{
    (void)device;
    const char *mig = getenv("FAKE_NVML_MIG");
    *current = *pending = mig != NULL && mig[0] == '1';
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetName(void *device, char *name, unsigned length)
{
    const char *other = getenv("FAKE_NVML_OTHER_NAME");
    int position = bus_position(device);
    if (other != NULL && atoi(other) == position)
        snprintf(name, length, "Fake GPU of another kind");
    else
        snprintf(name, length, "Fake GPU");
    return 0;
}

/* nvmlPciInfo_t of nvmlDeviceGetPciInfo_v3. */
struct fake_pci_info {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};

FAKE_EXPORT int nvmlDeviceGetPciInfo_v3(void *device, struct fake_pci_info *pci)
{
    memset(pci, 0, sizeof *pci);
    pci->bus = 0xfa;
    pci->device = (unsigned)bus_position(device);
    snprintf(pci->bus_id, sizeof pci->bus_id, "00000000:FA:%02X.0", pci->device);
    snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "0000:FA:%02X.0", pci->device);
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetMemoryInfo(void *device, unsigned long long memory[3])
{
    (void)device;
    memory[0] = 16ull << 30;
    memory[1] = memory[0];
    memory[2] = 0;
    return 0;
}

/* NVML_P2P_CAPS_INDEX_READ, _NVLINK, _ATOMICS; status 0 is OK, 5 not
 * supported. With FAKE_NVML_P2P_LOG, each question appended to that file
 * as "INDEX A B" (bus positions). */
FAKE_EXPORT int nvmlDeviceGetP2PStatus(void *a, void *b, int index, int *status)
{
    int pa = bus_position(a), pb = bus_position(b);
    const char *log = getenv("FAKE_NVML_P2P_LOG");
    FILE *f = log != NULL ? fopen(log, "a") : NULL;
    if (f != NULL) {
        fprintf(f, "%d %d %d\n", index, pa, pb);
        fclose(f);
    }
    int no_peer = listed("FAKE_CUDA_NO_PEER", pa, pb), nvlink = listed("FAKE_CUDA_NVLINK", pa, pb);
    int ok = index == 0 ? !no_peer : (index == 2 || index == 3) ? nvlink && !no_peer : !no_peer;
    *status = ok ? 0 : 5;
    return 0;
}
