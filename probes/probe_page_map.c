/* Owns the page map memory probes read on the GPU (see probe_page_map.h):
 * each GPU's header and owner bytes in its memory, and bringing them up
 * to date from the pool (memory/memory_pool.h) and the replicas
 * (mirror/replicas.h) when their versions move.
 *
 * Copies go through a non-blocking stream of mgpu's own per GPU and are
 * waited for there: a blocking copy would wait for the program's kernels
 * in that context and is refused while a stream is being captured. A
 * kernel still running from before a refresh may read the map half old;
 * the probes that read it count, they do not steer the program. */
#include "probes/probe_page_map.h"

#include "base/config.h"
#include "base/log.h"
#include "memory/memory_pool.h"
#include "ptx/ptx_probes.h"
#include "base/real_driver.h"
#include "mirror/replicas.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_WORDS (MGPU_PAGE_MAP_REPLICAS + 2 * MGPU_PAGE_MAP_MAX_REPLICAS)

struct gpu_page_map {
    CUcontext context;
    CUstream stream;
    CUdeviceptr header; /* HEADER_WORDS words */
    CUdeviceptr owners; /* one byte per granule; 0 until the pool starts */
    size_t owner_bytes;
    uint64_t shown_pool, shown_replicas; /* versions the GPU's rewritten module shows */
};

static struct {
    atomic_bool in_use; /* a rewritten module names the map: set at its GPU's first */
    bool warned;
    pthread_mutex_t lock;
    struct gpu_page_map gpus[MGPU_MAX_GPUS];
    int ngpus;                                       /* one past the highest GPU with a map */
    atomic_uint_fast64_t shown_pool, shown_replicas; /* what every GPU shows */
    uint8_t *owners;
    size_t owners_capacity;
    uint64_t header[HEADER_WORDS];
} maps = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* GPU g's copy brought to what maps.header and maps.owners say. Under
 * maps.lock, with g's context current. */
static CUresult upload(struct gpu_page_map *g, size_t granules)
{
    CUresult r = CUDA_SUCCESS;
    if (granules > 0 && g->owner_bytes < granules) {
        if (g->owners)
            mgpu_drv.cuMemFree(g->owners);
        g->owners = 0;
        g->owner_bytes = 0;
        r = mgpu_drv.cuMemAlloc(&g->owners, granules);
        if (r != CUDA_SUCCESS)
            return r;
        g->owner_bytes = granules;
    }
    uint64_t header[MGPU_PAGE_MAP_REPLICAS];
    memcpy(header, maps.header, sizeof header);
    header[MGPU_PAGE_MAP_OWNERS] = granules > 0 ? g->owners : 0;
    if (header[MGPU_PAGE_MAP_OWNERS] == 0)
        header[MGPU_PAGE_MAP_GRANULES] = 0;
    size_t replica_words = 2 * maps.header[MGPU_PAGE_MAP_NREPLICAS];
    if (granules > 0)
        r = mgpu_drv.cuMemcpyHtoDAsync(g->owners, maps.owners, granules, g->stream);
    if (r == CUDA_SUCCESS && replica_words > 0)
        r = mgpu_drv.cuMemcpyHtoDAsync(g->header + MGPU_PAGE_MAP_REPLICAS * 8,
                                       &maps.header[MGPU_PAGE_MAP_REPLICAS], replica_words * 8,
                                       g->stream);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemcpyHtoDAsync(g->header, header, sizeof header, g->stream);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuStreamSynchronize(g->stream);
    return r;
}

/* maps.header and maps.owners from the pool and the replicas now; returns
 * the granules, or (size_t)-1 when memory runs out. Under maps.lock. */
static size_t read_layout(uint64_t *pool_version, uint64_t *replica_version)
{
    *replica_version = mgpu_replicas_copies_version();
    struct mgpu_pool_layout layout;
    size_t granules = mgpu_pool_owner_map(&layout, NULL, 0);
    if (granules > maps.owners_capacity) {
        uint8_t *grown = realloc(maps.owners, granules);
        if (grown == NULL)
            return (size_t)-1;
        maps.owners = grown;
        maps.owners_capacity = granules;
    }
    granules = mgpu_pool_owner_map(&layout, maps.owners, maps.owners_capacity);
    if (granules > maps.owners_capacity)
        granules = 0; /* the pool grew meanwhile: next time */
    *pool_version = layout.version;
    maps.header[MGPU_PAGE_MAP_BASE] = layout.base;
    maps.header[MGPU_PAGE_MAP_GRANULES] = granules;
    maps.header[MGPU_PAGE_MAP_SHIFT] = layout.granule_shift;
    size_t n = mgpu_replicas_copies((uint64_t(*)[2]) & maps.header[MGPU_PAGE_MAP_REPLICAS],
                                    MGPU_PAGE_MAP_MAX_REPLICAS);
    maps.header[MGPU_PAGE_MAP_NREPLICAS] =
        n < MGPU_PAGE_MAP_MAX_REPLICAS ? n : MGPU_PAGE_MAP_MAX_REPLICAS;
    return granules;
}

CUresult mgpu_probe_page_map_fill_module(CUmodule module, int gpu)
{
    if (gpu < 0 || gpu >= MGPU_MAX_GPUS)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr where;
    size_t bytes;
    if (mgpu_drv.cuModuleGetGlobal(&where, &bytes, module, PTX_PROBE_POOL_MAP) != CUDA_SUCCESS)
        return CUDA_SUCCESS; /* no probe of this module reads it */
    if (bytes != sizeof(uint64_t))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&maps.lock);
    struct gpu_page_map *g = &maps.gpus[gpu];
    CUresult r = CUDA_SUCCESS;
    if (g->header == 0) {
        mgpu_drv.cuCtxGetCurrent(&g->context);
        r = mgpu_drv.cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuMemAlloc(&g->header, HEADER_WORDS * sizeof(uint64_t));
        uint64_t pool_version = 0, replica_version = 0;
        size_t granules = r == CUDA_SUCCESS ? read_layout(&pool_version, &replica_version) : 0;
        if (granules == (size_t)-1)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS)
            r = upload(g, granules);
        if (r == CUDA_SUCCESS) {
            g->shown_pool = pool_version;
            g->shown_replicas = replica_version;
            if (gpu >= maps.ngpus)
                maps.ngpus = gpu + 1;
            atomic_store(&maps.in_use, true);
            /* Another GPU may show older versions: the next refresh sees. */
            atomic_store(&maps.shown_pool, 0);
        } else {
            if (g->header)
                mgpu_drv.cuMemFree(g->header);
            if (g->stream)
                mgpu_drv.cuStreamDestroy(g->stream);
            memset(g, 0, sizeof *g);
        }
    }
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemcpyHtoD(where, &g->header, sizeof g->header);
    pthread_mutex_unlock(&maps.lock);
    return r;
}

void mgpu_probe_page_map_refresh(void)
{
    if (!atomic_load_explicit(&maps.in_use, memory_order_acquire))
        return;
    uint64_t pool_now = mgpu_pool_layout_version();
    uint64_t replicas_now = mgpu_replicas_copies_version();
    if (atomic_load(&maps.shown_pool) == pool_now &&
        atomic_load(&maps.shown_replicas) == replicas_now)
        return;
    pthread_mutex_lock(&maps.lock);
    uint64_t pool_version, replica_version;
    size_t granules = read_layout(&pool_version, &replica_version);
    bool all = granules != (size_t)-1;
    for (int i = 0; i < maps.ngpus && all; i++) {
        struct gpu_page_map *g = &maps.gpus[i];
        if (g->header == 0 ||
            (g->shown_pool == pool_version && g->shown_replicas == replica_version))
            continue;
        CUresult r = mgpu_drv_push_context(g->context);
        if (r == CUDA_SUCCESS) {
            r = upload(g, granules);
            mgpu_drv_pop_context();
        }
        if (r == CUDA_SUCCESS) {
            g->shown_pool = pool_version;
            g->shown_replicas = replica_version;
            continue;
        }
        all = false;
        if (!maps.warned)
            mgpu_warn("probes: the page map on GPU %d cannot be refreshed (%s); "
                      "mgpu_address_owner() may answer from an older layout",
                      i, mgpu_cu_error_name(r));
        maps.warned = true;
    }
    if (all) {
        atomic_store(&maps.shown_pool, pool_version);
        atomic_store(&maps.shown_replicas, replica_version);
    }
    pthread_mutex_unlock(&maps.lock);
}

void mgpu_probe_page_map_release(void)
{
    pthread_mutex_lock(&maps.lock);
    for (int i = 0; i < maps.ngpus; i++) {
        struct gpu_page_map *g = &maps.gpus[i];
        if (g->header == 0 || mgpu_drv_push_context(g->context) != CUDA_SUCCESS)
            continue;
        mgpu_drv.cuMemFree(g->header);
        if (g->owners)
            mgpu_drv.cuMemFree(g->owners);
        mgpu_drv.cuStreamDestroy(g->stream);
        mgpu_drv_pop_context();
        memset(g, 0, sizeof *g);
    }
    maps.ngpus = 0;
    free(maps.owners);
    maps.owners = NULL;
    maps.owners_capacity = 0;
    atomic_store(&maps.in_use, false);
    pthread_mutex_unlock(&maps.lock);
}
