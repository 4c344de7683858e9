/* Owns loading this machine's topology from NVML instead of the CUDA
 * driver, so that mgpu-run can choose GPUs for -n without initialising the
 * driver, which the program then initialises once, itself: the GPUs in PCI
 * bus order, their peer links as NVML's P2P status gives them, placed with
 * hwloc as the driver's are (topology_driver.c). */
#include "partition/nvml_library.h"
#include "partition/topology.h"
#include "partition/topology_hwloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nvml_gpu {
    mgpu_nvml_device device;
    char bus_id[MGPU_BUS_ID_LEN];
};

static int by_bus_id(const void *a, const void *b)
{
    return strcmp(((const struct nvml_gpu *)a)->bus_id, ((const struct nvml_gpu *)b)->bus_id);
}

/* Whether NVML says the pair (from, to) has the P2P capability `index`;
 * *known is cleared where NVML does not answer. */
static bool p2p(const struct mgpu_nvml *nvml, mgpu_nvml_device from, mgpu_nvml_device to, int index,
                bool *known)
{
    int status = -1;
    if (nvml->p2p_status(from, to, index, &status) != MGPU_NVML_SUCCESS) {
        *known = false;
        return false;
    }
    return status == MGPU_NVML_P2P_STATUS_OK;
}

/* Whether NVML says NVLink joins every pair, asked once per pair (from the
 * lower bus id): peer reads and native atomics come with NVLink, so where
 * it does the other questions are not asked. On 4 x H200 (driver 580)
 * each P2P status took about 1.7 ms in a loop of its own, and the
 * topology 60 of mgpu-run's 110 ms under -n 4 with three questions per
 * ordered pair (36), hwloc's places 26 of them. */
static bool all_pairs_nvlink(const struct mgpu_nvml *nvml, const struct nvml_gpu gpus[], int count)
{
    bool known = true;
    for (int i = 0; i < count; i++)
        for (int j = i + 1; j < count; j++)
            if (!p2p(nvml, gpus[i].device, gpus[j].device, MGPU_NVML_P2P_NVLINK, &known) || !known)
                return false;
    return count > 1;
}

/* The GPUs into t in bus order, with names, bus ids and memory. */
static int read_gpus(const struct mgpu_nvml *nvml, struct mgpu_topology *t, struct nvml_gpu gpus[],
                     char *err, size_t errlen)
{
    unsigned count = 0;
    if (nvml->count(&count) != MGPU_NVML_SUCCESS || count == 0) {
        snprintf(err, errlen, "NVML counts no GPU");
        return -1;
    }
    if (count > MGPU_TOPOLOGY_MAX_GPUS)
        count = MGPU_TOPOLOGY_MAX_GPUS;
    for (unsigned i = 0; i < count; i++) {
        struct mgpu_nvml_pci_info pci;
        memset(&pci, 0, sizeof pci);
        char text[32];
        if (nvml->device_at(i, &gpus[i].device) != MGPU_NVML_SUCCESS ||
            nvml->pci_info(gpus[i].device, &pci) != MGPU_NVML_SUCCESS) {
            snprintf(err, errlen, "NVML cannot read GPU %u's PCI bus id", i);
            return -1;
        }
        memcpy(text, pci.bus_id, sizeof text - 1);
        text[sizeof text - 1] = '\0';
        if (mgpu_bus_id_normalise(text, gpus[i].bus_id) != 0) {
            snprintf(err, errlen, "NVML gives GPU %u an odd PCI bus id (%s)", i, text);
            return -1;
        }
    }
    /* The driver numbers GPUs by bus id where they are alike (its default
     * order, fastest first, breaks ties by bus id), and always under
     * CUDA_DEVICE_ORDER=PCI_BUS_ID. */
    qsort(gpus, count, sizeof gpus[0], by_bus_id);
    const char *order = getenv("CUDA_DEVICE_ORDER");
    bool bus_order = order != NULL && strcmp(order, "PCI_BUS_ID") == 0;
    for (unsigned i = 0; i < count; i++) {
        struct mgpu_gpu *g = &t->gpus[i];
        memcpy(g->bus_id, gpus[i].bus_id, sizeof g->bus_id);
        if (nvml->name(gpus[i].device, g->name, (unsigned)sizeof g->name) != MGPU_NVML_SUCCESS)
            g->name[0] = '\0';
        struct mgpu_nvml_memory memory;
        if (nvml->memory != NULL && nvml->memory(gpus[i].device, &memory) == MGPU_NVML_SUCCESS)
            g->memory_bytes = memory.total;
        if (!bus_order && (g->name[0] == '\0' || strcmp(g->name, t->gpus[0].name) != 0)) {
            snprintf(err, errlen,
                     "the GPUs differ (%s and %s), so the CUDA driver's order may not be their "
                     "bus order",
                     t->gpus[0].name, g->name[0] ? g->name : "a GPU NVML does not name");
            return -1;
        }
    }
    t->gpu_count = (int)count;
    return 0;
}

int mgpu_topology_load_machine_nvml(struct mgpu_topology *t, char *err, size_t errlen)
{
    mgpu_topology_clear(t);
    snprintf(t->source, sizeof t->source, "this machine (NVML)");
    t->this_machine = true;
    struct mgpu_nvml nvml;
    if (mgpu_nvml_open(&nvml, err, errlen) != 0)
        return -1;
    if (nvml.name == NULL || nvml.pci_info == NULL || nvml.p2p_status == NULL) {
        snprintf(err, errlen, "NVML lacks the calls that describe GPUs and their links");
        mgpu_nvml_close(&nvml);
        return -1;
    }
    struct nvml_gpu gpus[MGPU_TOPOLOGY_MAX_GPUS];
    if (read_gpus(&nvml, t, gpus, err, errlen) != 0) {
        mgpu_nvml_close(&nvml);
        return -1;
    }
    int count = t->gpu_count;
    int peer[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    bool nvlink[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    bool known = true;
    if (all_pairs_nvlink(&nvml, gpus, count)) {
        for (int i = 0; i < count; i++)
            for (int j = 0; j < count; j++) {
                peer[i][j] = 1;
                nvlink[i][j] = true;
                t->links[i][j].native_atomics = i != j;
            }
    } else {
        for (int i = 0; i < count; i++)
            for (int j = 0; j < count; j++) {
                if (i == j)
                    continue;
                peer[i][j] = p2p(&nvml, gpus[i].device, gpus[j].device, MGPU_NVML_P2P_READ, &known);
                nvlink[i][j] =
                    p2p(&nvml, gpus[i].device, gpus[j].device, MGPU_NVML_P2P_NVLINK, &known);
                t->links[i][j].native_atomics =
                    p2p(&nvml, gpus[i].device, gpus[j].device, MGPU_NVML_P2P_ATOMICS, &known);
            }
    }
    mgpu_nvml_close(&nvml);
    if (!known) {
        snprintf(err, errlen, "NVML does not tell every pair's peer access");
        return -1;
    }

    /* Where NVLink joins every pair both ways, the PCIe paths between
     * them decide nothing, and hwloc is spared reading the PCI devices
     * (and NVML again): the pairs' NVLink bandwidths are then taken as
     * equal, as they are across an NVSwitch; a machine whose pairs differ
     * in links is told apart only by the driver's topology (mgpu-info). */
    bool pci_paths = false;
    for (int i = 0; i < count; i++)
        for (int j = 0; j < count; j++)
            pci_paths |= i != j && !(nvlink[i][j] && nvlink[j][i]);
    mgpu_topology_place_and_link(t, (const int(*)[MGPU_TOPOLOGY_MAX_GPUS])peer,
                                 (const bool(*)[MGPU_TOPOLOGY_MAX_GPUS])nvlink, pci_paths);
    return 0;
}
