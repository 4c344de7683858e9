/* Owns the fake GPU's devices: how many (FAKE_CUDA_GPUS, default 4), which
 * are visible (CUDA_VISIBLE_DEVICES as indices or as the fake's own UUIDs,
 * the list ending at the first bad entry, as the driver does), their
 * attributes, names, PCI bus ids, memory in use, and the links between
 * them: FAKE_CUDA_NVLINK lists pairs with native peer atomics (as over
 * NVLink) and FAKE_CUDA_NO_PEER pairs without peer access, as "0-1,2-3". */
#include "fake_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fake_visible[FAKE_MAX_DEVICES], fake_visible_count = -1;
atomic_bool fake_initialised;
static _Atomic size_t used_bytes[FAKE_MAX_DEVICES];

static int machine_gpus(void)
{
    const char *n = getenv("FAKE_CUDA_GPUS");
    return n ? atoi(n) : 4;
}

static void fake_uuid(CUuuid *u, int physical)
{
    memset(u->bytes, 0, sizeof u->bytes);
    u->bytes[0] = (char)0xfa;
    u->bytes[15] = (char)physical;
}

void fake_find_visible(void)
{
    if (fake_visible_count >= 0)
        return;
    const char *list = getenv("CUDA_VISIBLE_DEVICES");
    int total = machine_gpus();
    int count = 0;
    if (list == NULL) {
        for (int i = 0; i < total && i < FAKE_MAX_DEVICES; i++)
            fake_visible[count++] = i;
        fake_visible_count = count;
        return;
    }
    while (*list && count < FAKE_MAX_DEVICES) {
        unsigned b[16];
        if (sscanf(list, "GPU-%2x%2x%2x%2x-%2x%2x-%2x%2x-%2x%2x-%2x%2x%2x%2x%2x%2x", &b[0], &b[1],
                   &b[2], &b[3], &b[4], &b[5], &b[6], &b[7], &b[8], &b[9], &b[10], &b[11], &b[12],
                   &b[13], &b[14], &b[15]) == 16 &&
            b[0] == 0xfa && (int)b[15] < total)
            fake_visible[count++] = (int)b[15];
        else if (list[0] >= '0' && list[0] <= '9' && atoi(list) < total)
            fake_visible[count++] = atoi(list);
        else
            break; /* like the driver: the list ends at the first bad entry */
        list += strcspn(list, ",");
        if (*list)
            list++;
    }
    fake_visible_count = count;
}

bool fake_device_valid(CUdevice dev)
{
    return dev >= 0 && dev < fake_visible_count;
}

bool fake_device_take(CUdevice dev, size_t bytes)
{
    size_t now = atomic_load(&used_bytes[dev]);
    do {
        if (bytes > FAKE_DEVICE_MEMORY - now)
            return false;
    } while (!atomic_compare_exchange_weak(&used_bytes[dev], &now, now + bytes));
    return true;
}

void fake_device_give(CUdevice dev, size_t bytes)
{
    atomic_fetch_sub(&used_bytes[dev], bytes);
}

size_t fake_device_used(CUdevice dev)
{
    return atomic_load(&used_bytes[dev]);
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *count)
{
    FAKE_ENTER_INIT("cuDeviceGetCount", CUDA_ERROR_UNKNOWN);
    *count = fake_visible_count;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    FAKE_ENTER_INIT("cuDeviceGet", CUDA_ERROR_UNKNOWN);
    if (ordinal < 0 || ordinal >= fake_visible_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

/* What the tests rely on, and what mgpu asks before it splits; every other
 * attribute is 7, as the old stand-in answered. */
static int attribute(CUdevice_attribute attr)
{
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        return FAKE_SMS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        return 0x7fffffff;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        return 1;
    default:
        return 7;
    }
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
    FAKE_ENTER_INIT("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE);
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *value = attribute(attr);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    FAKE_ENTER_INIT("cuDeviceTotalMem_v2", CUDA_ERROR_UNKNOWN);
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = FAKE_DEVICE_MEMORY;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FAKE_ENTER_INIT("cuDeviceGetName", CUDA_ERROR_UNKNOWN);
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "Fake GPU %d", fake_visible[dev]);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    FAKE_ENTER_INIT("cuDeviceGetUuid_v2", CUDA_ERROR_UNKNOWN);
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fake_uuid(uuid, fake_visible[dev]);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

/* The fake's GPUs sit on no PCI bus: an id would have to match the hwloc
 * topologies the tests give mgpu-run, or make it refuse them as another
 * machine's. With FAKE_CUDA_BUS_IDS=1 they are "0000:fa:NN.0" (NN the
 * physical index). The lookup also takes a bare visible ordinal, as the
 * tests written for the old stand-in do. */
FAKE_EXPORT CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev)
{
    FAKE_ENTER_INIT("cuDeviceGetPCIBusId", CUDA_ERROR_UNKNOWN);
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (bus == NULL || len < 13)
        return CUDA_ERROR_INVALID_VALUE;
    const char *ids = getenv("FAKE_CUDA_BUS_IDS");
    if (ids == NULL || strcmp(ids, "1") != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    snprintf(bus, (size_t)len, "0000:fa:%02x.0", fake_visible[dev]);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *bus)
{
    FAKE_ENTER_INIT("cuDeviceGetByPCIBusId", CUDA_ERROR_UNKNOWN);
    unsigned domain, bus_number, device, function;
    if (sscanf(bus, "%x:%x:%x.%x", &domain, &bus_number, &device, &function) != 4) {
        int ordinal = atoi(bus); /* the old stand-in's ids: the visible ordinal */
        if (!fake_device_valid(ordinal))
            return CUDA_ERROR_INVALID_DEVICE;
        *dev = ordinal;
        return CUDA_SUCCESS;
    }
    int physical = bus_number == 0xfa ? (int)device : -1;
    for (int d = 0; d < fake_visible_count; d++)
        if (fake_visible[d] == physical) {
            *dev = d;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_DEVICE;
}

bool fake_devices_listed(const char *var, CUdevice a, CUdevice b)
{
    const char *list = getenv(var);
    int x, y, used;
    int pa = fake_visible[a], pb = fake_visible[b];
    while (list != NULL && sscanf(list, "%d-%d%n", &x, &y, &used) == 2) {
        if ((x == pa && y == pb) || (x == pb && y == pa))
            return true;
        list += used;
        list += *list == ',';
    }
    return false;
}

FAKE_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    FAKE_ENTER_INIT("cuDeviceCanAccessPeer", CUDA_ERROR_UNKNOWN);
    if (!fake_device_valid(dev) || !fake_device_valid(peer))
        return CUDA_ERROR_INVALID_DEVICE;
    *can = dev != peer && !fake_devices_listed("FAKE_CUDA_NO_PEER", dev, peer);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attr, CUdevice src,
                                             CUdevice dst)
{
    FAKE_ENTER_INIT("cuDeviceGetP2PAttribute", CUDA_ERROR_INVALID_VALUE);
    if (!fake_device_valid(src) || !fake_device_valid(dst) || src == dst)
        return CUDA_ERROR_INVALID_DEVICE;
    bool nvlink = fake_devices_listed("FAKE_CUDA_NVLINK", src, dst);
    bool peer = !fake_devices_listed("FAKE_CUDA_NO_PEER", src, dst);
    switch (attr) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
        *value = nvlink ? 0 : 1;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
        *value = peer;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
        *value = peer && nvlink;
        return CUDA_SUCCESS;
    default:
        *value = 0;
        return CUDA_SUCCESS;
    }
}
