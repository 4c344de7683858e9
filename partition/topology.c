/* Owns the plain-data side of the topology model: an empty model, bus ids,
 * link names and how links compare. No hwloc and no driver here. */
#include "partition/topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One NVLink link of NVLink 2 to 4 (V100 to H200) moves 25 GB/s each way;
 * used to give a link count where hwloc reports only a bandwidth. */
#define NVLINK_MBPS_PER_LANE 25000ULL

void mgpu_topology_clear(struct mgpu_topology *t)
{
    memset(t, 0, sizeof *t);
    t->process_numa = -1;
    t->process_package = -1;
    for (int i = 0; i < MGPU_TOPOLOGY_MAX_GPUS; i++) {
        t->gpus[i].cuda_index = i;
        t->gpus[i].numa_node = -1;
        t->gpus[i].package = -1;
        for (int j = 0; j < MGPU_TOPOLOGY_MAX_GPUS; j++) {
            t->links[i][j].link_class = i == j ? MGPU_LINK_SELF : MGPU_LINK_PCIE;
            t->links[i][j].perf_rank = -1;
        }
    }
}

/* A field of `digits` hex digits ending at `end` (a character, or '\0'). */
static const char *hex_field(const char *text, size_t min, size_t max, char end, unsigned *out)
{
    size_t n = strspn(text, "0123456789abcdefABCDEF");
    if (n < min || n > max || text[n] != end)
        return NULL;
    *out = (unsigned)strtoul(text, NULL, 16);
    return text + n + (end != '\0');
}

int mgpu_bus_id_normalise(const char *text, char out[MGPU_BUS_ID_LEN])
{
    unsigned domain, bus, device, function;
    if (text == NULL || (text = hex_field(text, 4, 8, ':', &domain)) == NULL ||
        (text = hex_field(text, 2, 2, ':', &bus)) == NULL ||
        (text = hex_field(text, 2, 2, '.', &device)) == NULL ||
        hex_field(text, 1, 1, '\0', &function) == NULL || domain > 0xffff || device > 0x1f ||
        function > 7)
        return -1;
    snprintf(out, MGPU_BUS_ID_LEN, "%04x:%02x:%02x.%x", domain, bus, device, function);
    return 0;
}

static unsigned long long nvlink_mbps(const struct mgpu_link *l)
{
    if (l->nvlink_mbps > 0)
        return l->nvlink_mbps;
    return (unsigned long long)l->nvlink_lanes * NVLINK_MBPS_PER_LANE;
}

void mgpu_link_label(const struct mgpu_link *l, char *out, size_t outlen)
{
    static const char *const names[] = {
        [MGPU_LINK_NO_PEER] = "none", [MGPU_LINK_SYS] = "SYS", [MGPU_LINK_NODE] = "NODE",
        [MGPU_LINK_PCIE] = "PCI",     [MGPU_LINK_PHB] = "PHB", [MGPU_LINK_PXB] = "PXB",
        [MGPU_LINK_PIX] = "PIX",      [MGPU_LINK_SELF] = "X",
    };
    if (l->link_class != MGPU_LINK_NVLINK) {
        snprintf(out, outlen, "%s", names[l->link_class]);
        return;
    }
    unsigned long long lanes = (unsigned long long)l->nvlink_lanes;
    if (lanes == 0)
        lanes = (l->nvlink_mbps + NVLINK_MBPS_PER_LANE / 2) / NVLINK_MBPS_PER_LANE;
    if (lanes > 0)
        snprintf(out, outlen, "NV%llu", lanes);
    else
        snprintf(out, outlen, "NV");
}

long long mgpu_link_quality(const struct mgpu_link *l)
{
    /* class: bits 56+; NVLink MB/s: bits 8..55; rank: bits 0..7 */
    long long q = (long long)l->link_class << 56;
    if (l->link_class == MGPU_LINK_NVLINK) {
        unsigned long long mbps = nvlink_mbps(l);
        if (mbps > (1ULL << 47))
            mbps = 1ULL << 47;
        q |= (long long)mbps << 8;
    }
    if (l->perf_rank >= 0)
        q |= 255 - (l->perf_rank < 255 ? l->perf_rank : 255);
    return q;
}

int mgpu_topology_find_cuda(const struct mgpu_topology *t, int cuda_index)
{
    for (int i = 0; i < t->gpu_count; i++)
        if (t->gpus[i].cuda_index == cuda_index)
            return i;
    return -1;
}
