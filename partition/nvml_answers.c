/* Owns asking NVML what mgpu-run decides from (nvml_answers.h): the count,
 * MIG modes, the GPUs in bus order and their pairs' peer links. */
#include "partition/nvml_answers.h"

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

/* Each GPU's handle, in NVML's order; false where one cannot be had. */
static bool read_handles(const struct mgpu_nvml *nvml, int count, struct nvml_gpu gpus[])
{
    for (int i = 0; i < count; i++)
        if (nvml->device_at((unsigned)i, &gpus[i].device) != MGPU_NVML_SUCCESS)
            return false;
    return true;
}

/* The first GPU in MIG mode or whose mode NVML cannot read (a GPU in MIG
 * mode is several CUDA devices, or none), else -1; handles NULL: they
 * could not all be had. */
static int first_mig_gpu(const struct mgpu_nvml *nvml, int count, const struct nvml_gpu *gpus)
{
    if (nvml->mig_mode == NULL)
        return -1;
    for (int i = 0; i < count; i++) {
        unsigned current = 0, pending = 0;
        int r = gpus != NULL ? nvml->mig_mode(gpus[i].device, &current, &pending) : -1;
        if (r == MGPU_NVML_ERROR_NOT_SUPPORTED)
            continue;
        if (r != MGPU_NVML_SUCCESS || current == MGPU_NVML_DEVICE_MIG_ENABLE)
            return i;
    }
    return -1;
}

/* The GPUs into a, in bus order, with names, bus ids and memory; their
 * handles (in NVML's order) sorted into the same order. */
static int read_gpus(const struct mgpu_nvml *nvml, struct mgpu_nvml_answers *a,
                     struct nvml_gpu gpus[], char *why, size_t whylen)
{
    for (int i = 0; i < a->count; i++) {
        struct mgpu_nvml_pci_info pci;
        memset(&pci, 0, sizeof pci);
        char text[32];
        if (nvml->pci_info(gpus[i].device, &pci) != MGPU_NVML_SUCCESS) {
            snprintf(why, whylen, "NVML cannot read GPU %d's PCI bus id", i);
            return -1;
        }
        memcpy(text, pci.bus_id, sizeof text - 1);
        text[sizeof text - 1] = '\0';
        if (mgpu_bus_id_normalise(text, gpus[i].bus_id) != 0) {
            snprintf(why, whylen, "NVML gives GPU %d an odd PCI bus id (%s)", i, text);
            return -1;
        }
    }
    qsort(gpus, (size_t)a->count, sizeof gpus[0], by_bus_id);
    for (int i = 0; i < a->count; i++) {
        struct mgpu_nvml_answer_gpu *g = &a->gpus[i];
        memcpy(g->bus_id, gpus[i].bus_id, sizeof g->bus_id);
        if (nvml->name(gpus[i].device, g->name, (unsigned)sizeof g->name) != MGPU_NVML_SUCCESS)
            g->name[0] = '\0';
        g->name[sizeof g->name - 1] = '\0';
        struct mgpu_nvml_memory memory;
        if (nvml->memory != NULL && nvml->memory(gpus[i].device, &memory) == MGPU_NVML_SUCCESS)
            g->memory_bytes = memory.total;
    }
    return 0;
}

static void read_pairs(const struct mgpu_nvml *nvml, struct mgpu_nvml_answers *a,
                       const struct nvml_gpu gpus[])
{
    int count = a->count;
    bool known = true;
    if (all_pairs_nvlink(nvml, gpus, count)) {
        for (int i = 0; i < count; i++)
            for (int j = 0; j < count; j++)
                a->peer[i][j] = a->nvlink[i][j] = a->atomics[i][j] = i != j;
    } else {
        for (int i = 0; i < count; i++)
            for (int j = 0; j < count; j++) {
                if (i == j)
                    continue;
                a->peer[i][j] =
                    p2p(nvml, gpus[i].device, gpus[j].device, MGPU_NVML_P2P_READ, &known);
                a->nvlink[i][j] =
                    p2p(nvml, gpus[i].device, gpus[j].device, MGPU_NVML_P2P_NVLINK, &known);
                a->atomics[i][j] =
                    p2p(nvml, gpus[i].device, gpus[j].device, MGPU_NVML_P2P_ATOMICS, &known);
            }
    }
    a->pairs_known = known;
}

int mgpu_nvml_answers_read(const struct mgpu_nvml *nvml, bool with_gpus,
                           struct mgpu_nvml_answers *a, char *why, size_t whylen)
{
    memset(a, 0, sizeof *a);
    a->mig_gpu = -1;
    unsigned count = 0;
    if (nvml->count(&count) != MGPU_NVML_SUCCESS || count == 0) {
        snprintf(why, whylen, "NVML counts no GPU");
        return -1;
    }
    if (count > MGPU_TOPOLOGY_MAX_GPUS) {
        snprintf(why, whylen, "NVML counts %u GPUs, more than mgpu's %d", count,
                 MGPU_TOPOLOGY_MAX_GPUS);
        return -1;
    }
    a->count = (int)count;
    /* Each handle once: the MIG modes, then the GPUs, ask through them. */
    struct nvml_gpu gpus[MGPU_TOPOLOGY_MAX_GPUS];
    bool handles = read_handles(nvml, a->count, gpus);
    a->mig_gpu = first_mig_gpu(nvml, a->count, handles ? gpus : NULL);
    if (!with_gpus)
        return 0;
    if (nvml->name == NULL || nvml->pci_info == NULL || nvml->p2p_status == NULL) {
        snprintf(why, whylen, "NVML lacks the calls that describe GPUs and their links");
        return -1;
    }
    if (!handles) {
        snprintf(why, whylen, "NVML cannot give every GPU's handle");
        return -1;
    }
    if (read_gpus(nvml, a, gpus, why, whylen) != 0)
        return -1;
    read_pairs(nvml, a, gpus);
    a->has_gpus = true;
    return 0;
}
