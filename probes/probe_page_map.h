/* The page map memory probes read on the GPU (mgpu_address_owner() in
 * mgpu/probe.h): on every GPU of the run, which GPU owns each granule of
 * the pool and where the replicas' copies lie, kept in that GPU's memory
 * and refreshed before a probed launch whenever the pool's layout or the
 * replicas changed. Made only on GPUs whose rewritten modules name it (a probe
 * file that reads it). */
#ifndef MGPU_PROBE_PAGE_MAP_H
#define MGPU_PROBE_PAGE_MAP_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* The map's words on the GPU, which mgpu/probe.h reads by these offsets:
 * the pool's first address, its granules, log2 of the granule size, the
 * address of one owner byte per granule (0 before the pool starts), the
 * number of replica copies listed, then [start, end) of each. */
enum {
    MGPU_PAGE_MAP_BASE,
    MGPU_PAGE_MAP_GRANULES,
    MGPU_PAGE_MAP_SHIFT,
    MGPU_PAGE_MAP_OWNERS,
    MGPU_PAGE_MAP_NREPLICAS,
    MGPU_PAGE_MAP_REPLICAS,
};
/* Copies listed; an address in a copy past these reads as outside. */
#define MGPU_PAGE_MAP_MAX_REPLICAS 1024

/* For GPU `gpu`'s rewritten module, loaded in the current context: when the
 * module declares __mgpu_pool_map, the GPU's map (made at its first such
 * module) named there. Returns a driver error, CUDA_SUCCESS also for a
 * module without the symbol. */
CUresult mgpu_probe_page_map_fill_module(CUmodule module, int gpu);

/* Before a probed launch: the maps brought up to date when the pool or the
 * replicas changed since the last time (two atomic reads when not). */
void mgpu_probe_page_map_refresh(void);

/* At exit, after the GPUs' work: the maps freed. */
void mgpu_probe_page_map_release(void);

#endif
