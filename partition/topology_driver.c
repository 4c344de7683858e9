/* Owns loading this machine's topology: the GPUs and their peer links as the
 * CUDA driver reports them, placed with hwloc. The driver has the last word
 * on links: a pair without peer access has no link, and a pair with native
 * peer atomics is taken as NVLink when hwloc (without NVML, as in a VM)
 * knows nothing of NVLink. */
#include "base/real_driver.h"
#include "partition/topology.h"
#include "partition/topology_hwloc.h"

#include <stdio.h>
#include <string.h>

static void read_gpu(struct mgpu_gpu *g, CUdevice dev, int index)
{
    g->cuda_index = index;
    if (mgpu_drv.cuDeviceGetName(g->name, (int)sizeof g->name, dev) != CUDA_SUCCESS)
        g->name[0] = '\0';
    int value = 0;
    if (mgpu_drv.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) ==
        CUDA_SUCCESS)
        g->multiprocessors = value;
    if (mgpu_drv.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev) == CUDA_SUCCESS)
        g->clock_khz = value;
    size_t bytes = 0;
    if (mgpu_drv.cuDeviceTotalMem(&bytes, dev) == CUDA_SUCCESS)
        g->memory_bytes = bytes;
    char bus_id[32];
    if (mgpu_drv.cuDeviceGetPCIBusId == NULL ||
        mgpu_drv.cuDeviceGetPCIBusId(bus_id, (int)sizeof bus_id, dev) != CUDA_SUCCESS ||
        mgpu_bus_id_normalise(bus_id, g->bus_id) != 0)
        g->bus_id[0] = '\0';
}

/* What the driver says of the pair (from, to); *peer is -1 when it says
 * nothing. */
static void read_peer(struct mgpu_link *l, int *peer, CUdevice from, CUdevice to)
{
    int value = 0;
    *peer = -1;
    if (mgpu_drv.cuDeviceCanAccessPeer != NULL &&
        mgpu_drv.cuDeviceCanAccessPeer(&value, from, to) == CUDA_SUCCESS)
        *peer = value != 0;
    if (mgpu_drv.cuDeviceGetP2PAttribute == NULL)
        return;
    if (mgpu_drv.cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, from,
                                         to) == CUDA_SUCCESS)
        l->perf_rank = value;
    if (mgpu_drv.cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                                         from, to) == CUDA_SUCCESS)
        l->native_atomics = value != 0;
}

int mgpu_topology_load_machine(struct mgpu_topology *t, char *err, size_t errlen)
{
    mgpu_topology_clear(t);
    snprintf(t->source, sizeof t->source, "this machine");
    t->this_machine = true;
    int count = 0;
    CUresult r = mgpu_drv.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count <= 0) {
        snprintf(err, errlen, "the CUDA driver sees no GPU (%s)",
                 r != CUDA_SUCCESS ? mgpu_cu_error_name(r) : "no device");
        return -1;
    }
    if (count > MGPU_TOPOLOGY_MAX_GPUS)
        count = MGPU_TOPOLOGY_MAX_GPUS;
    CUdevice devs[MGPU_TOPOLOGY_MAX_GPUS];
    for (int i = 0; i < count; i++) {
        r = mgpu_drv.cuDeviceGet(&devs[i], i);
        if (r != CUDA_SUCCESS) {
            snprintf(err, errlen, "the CUDA driver cannot open GPU %d (%s)", i,
                     mgpu_cu_error_name(r));
            return -1;
        }
        read_gpu(&t->gpus[i], devs[i], i);
    }
    t->gpu_count = count;

    int peer[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    for (int i = 0; i < count; i++)
        for (int j = 0; j < count; j++)
            if (i != j)
                read_peer(&t->links[i][j], &peer[i][j], devs[i], devs[j]);

    /* Native peer atomics stand for NVLink where hwloc knows none. */
    bool nvlink[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    for (int i = 0; i < count; i++)
        for (int j = 0; j < count; j++)
            nvlink[i][j] = i != j && t->links[i][j].native_atomics;
    mgpu_topology_place_and_link(t, (const int(*)[MGPU_TOPOLOGY_MAX_GPUS])peer,
                                 (const bool(*)[MGPU_TOPOLOGY_MAX_GPUS])nvlink, true);
    return 0;
}
