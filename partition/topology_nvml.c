/* Owns making this machine's topology from NVML's answers (nvml_answers.h)
 * instead of the CUDA driver, so that mgpu-run can choose GPUs for -n
 * without initialising the driver, which the program then initialises
 * once, itself: the GPUs in PCI bus order, their peer links as NVML's P2P
 * status gives them, placed with hwloc as the driver's are
 * (topology_driver.c), or from sysfs alone where every GPU is as near
 * every CPU. The places are read each time: they depend on where the
 * process runs, the answers only on the machine. */
#include "partition/nvml_answers.h"
#include "partition/topology.h"
#include "partition/topology_hwloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver numbers GPUs by bus id where they are alike (its default
 * order, fastest first, breaks ties by bus id), and always under
 * CUDA_DEVICE_ORDER=PCI_BUS_ID. */
static int check_order(const struct mgpu_nvml_answers *a, char *err, size_t errlen)
{
    const char *order = getenv("CUDA_DEVICE_ORDER");
    if (order != NULL && strcmp(order, "PCI_BUS_ID") == 0)
        return 0;
    for (int i = 0; i < a->count; i++) {
        const char *name = a->gpus[i].name;
        if (name[0] == '\0' || strcmp(name, a->gpus[0].name) != 0) {
            snprintf(err, errlen,
                     "the GPUs differ (%s and %s), so the CUDA driver's order may not be their "
                     "bus order",
                     a->gpus[0].name, name[0] ? name : "a GPU NVML does not name");
            return -1;
        }
    }
    return 0;
}

int mgpu_topology_from_nvml_answers(struct mgpu_topology *t, const struct mgpu_nvml_answers *a,
                                    char *err, size_t errlen)
{
    mgpu_topology_clear(t);
    snprintf(t->source, sizeof t->source, "this machine (NVML)");
    t->this_machine = true;
    if (!a->has_gpus) {
        snprintf(err, errlen, "NVML was not asked for the GPUs");
        return -1;
    }
    if (check_order(a, err, errlen) != 0)
        return -1;
    if (!a->pairs_known) {
        snprintf(err, errlen, "NVML does not tell every pair's peer access");
        return -1;
    }
    int count = a->count;
    int peer[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    bool nvlink[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    for (int i = 0; i < count; i++) {
        struct mgpu_gpu *g = &t->gpus[i];
        memcpy(g->bus_id, a->gpus[i].bus_id, sizeof g->bus_id);
        memcpy(g->name, a->gpus[i].name, sizeof g->name);
        g->memory_bytes = a->gpus[i].memory_bytes;
        for (int j = 0; j < count; j++) {
            peer[i][j] = a->peer[i][j];
            nvlink[i][j] = a->nvlink[i][j];
            t->links[i][j].native_atomics = a->atomics[i][j];
        }
    }
    t->gpu_count = count;

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
