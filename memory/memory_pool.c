/* Owns the distributed memory pool (see memory_pool.h): the reserved range,
 * the physical chunks of large allocations, the granules of the
 * sub-allocator, stream-ordered frees waiting for their stream, migration,
 * and the bytes held per GPU. All its driver calls go to the real driver. */
#include "memory/memory_pool.h"

#include "base/monotonic_clock.h"
#include "base/startup_times.h"

#include "memory/address_space.h"
#include "memory/allocation_table.h"
#include "partition/gpu_contexts.h"
#include "base/log.h"
#include "base/real_driver.h"
#include "memory/suballoc.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parts of one GPU's share are made of chunks of at most this size, so
 * that a migration copies and remaps a bounded amount around its edges. */
#define CHUNK_MAX ((size_t)256 << 20)

struct slab_granule {
    uint64_t address;
    CUmemGenericAllocationHandle handle;
    int gpu;
};

struct pending_free {
    CUdeviceptr address;
    CUevent done;
};

static struct {
    pthread_mutex_t lock;
    struct mgpu_pool_settings settings;
    bool tried, active, one_gpu;
    bool not_exportable; /* the driver made no shareable physical memory */
    char why_off[256];
    int ngpus;                            /* the run's GPUs (entries) */
    CUdevice devices[MGPU_MAX_GPUS];      /* the device each stands on */
    CUcontext contexts[MGPU_MAX_GPUS];    /* its primary context, retained once per entry */
    CUstream move_streams[MGPU_MAX_GPUS]; /* where moves copy into each GPU */
    /* The distinct devices, each once: those that map every granule. */
    CUdevice access_devices[MGPU_MAX_GPUS];
    int naccess;
    size_t memory_sum; /* of the distinct devices */
    enum mgpu_placement placement;
    struct mgpu_address_space space;
    struct mgpu_suballoc small;
    struct mgpu_allocation_table table;
    struct slab_granule *slab_granules;
    size_t nslab_granules, slab_granules_capacity;
    struct pending_free *pending;
    size_t npending, pending_capacity;
    size_t now[MGPU_MAX_GPUS], peak[MGPU_MAX_GPUS], now_total, peak_total;
    unsigned long long next_id;
    unsigned long migrations;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Read without the lock by mgpu_pool_holds; set once when the pool starts. */
static _Atomic uint64_t range_base, range_end;
/* One more whenever a granule's owner may have changed (mgpu_pool_owner_map). */
static _Atomic uint64_t layout_version = 1;

static void count_held(int gpu, size_t bytes, bool taken)
{
    if (taken) {
        pool.now[gpu] += bytes;
        pool.now_total += bytes;
        if (pool.now[gpu] > pool.peak[gpu])
            pool.peak[gpu] = pool.now[gpu];
        if (pool.now_total > pool.peak_total)
            pool.peak_total = pool.now_total;
    } else {
        pool.now[gpu] -= bytes;
        pool.now_total -= bytes;
    }
}

/* Entry g's primary context: those on the home device are retained when
 * the pool starts, the others the first time the pool works on them (a
 * move, memory made there), so that a program whose buffers all stay home
 * never makes them (issue 46: on an H200 each costs about 0.1 s to make
 * and 0.04 s to tear down). NULL when the driver refuses it. */
static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;

static CUcontext pool_context(int g)
{
    pthread_mutex_lock(&context_lock);
    CUcontext ctx = pool.contexts[g];
    if (ctx == NULL) {
        CUcontext made = NULL;
        if (mgpu_drv.cuDevicePrimaryCtxRetain(&made, pool.devices[g]) == CUDA_SUCCESS)
            ctx = pool.contexts[g] = made;
    }
    pthread_mutex_unlock(&context_lock);
    return ctx;
}

/* Physical memory of `bytes` on `gpu`, or on the next GPU that has room
 * when it is full; mapped at `va`. *gpu says where it went. */
static CUresult create_and_map(uint64_t va, size_t bytes, int *gpu,
                               CUmemGenericAllocationHandle *handle)
{
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int k = 0; k < pool.ngpus; k++) {
        int g = (*gpu + k) % pool.ngpus;
        if (pool_context(g) == NULL)
            continue; /* its device is not usable */
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = pool.devices[g];
        /* Exportable as a file descriptor, so that another process can map
         * it (cuIpcGetMemHandle, memory/pool_ipc.c); without, where the
         * driver refuses that. */
        if (!pool.not_exportable)
            prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        r = mgpu_drv.cuMemCreate(handle, bytes, &prop, 0);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_OUT_OF_MEMORY && !pool.not_exportable) {
            pool.not_exportable = true;
            prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
            r = mgpu_drv.cuMemCreate(handle, bytes, &prop, 0);
        }
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            continue;
        if (r != CUDA_SUCCESS)
            return r;
        r = mgpu_drv.cuMemMap(va, bytes, 0, *handle, 0);
        if (r != CUDA_SUCCESS) {
            mgpu_drv.cuMemRelease(*handle);
            return r;
        }
        *gpu = g;
        count_held(g, bytes, true);
        return CUDA_SUCCESS;
    }
    return r;
}

static void unmap_and_release(uint64_t va, size_t bytes, int gpu,
                              CUmemGenericAllocationHandle handle)
{
    mgpu_drv.cuMemUnmap(va, bytes);
    mgpu_drv.cuMemRelease(handle);
    count_held(gpu, bytes, false);
}

/* Every device maps the range once, however many entries stand on it. */
static CUresult grant_access(uint64_t va, size_t bytes)
{
    CUmemAccessDesc access[MGPU_MAX_GPUS];
    for (int d = 0; d < pool.naccess; d++) {
        memset(&access[d], 0, sizeof access[d]);
        access[d].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access[d].location.id = pool.access_devices[d];
        access[d].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    return mgpu_drv.cuMemSetAccess(va, bytes, access, (size_t)pool.naccess);
}

/* --- granules of the sub-allocator, all on the home GPU ---------------------- */

static int slab_granule_get(void *ctx, uint64_t *address)
{
    (void)ctx;
    if (pool.nslab_granules == pool.slab_granules_capacity) {
        size_t capacity = pool.slab_granules_capacity ? 2 * pool.slab_granules_capacity : 16;
        struct slab_granule *grown =
            realloc(pool.slab_granules, capacity * sizeof *pool.slab_granules);
        if (grown == NULL)
            return -1;
        pool.slab_granules = grown;
        pool.slab_granules_capacity = capacity;
    }
    uint64_t va;
    if (mgpu_address_space_take(&pool.space, MGPU_GRANULE_SIZE, &va) != 0)
        return -1;
    int gpu = 0;
    CUmemGenericAllocationHandle handle;
    if (create_and_map(va, MGPU_GRANULE_SIZE, &gpu, &handle) != CUDA_SUCCESS) {
        mgpu_address_space_give(&pool.space, va, MGPU_GRANULE_SIZE);
        return -1;
    }
    if (grant_access(va, MGPU_GRANULE_SIZE) != CUDA_SUCCESS) {
        unmap_and_release(va, MGPU_GRANULE_SIZE, gpu, handle);
        mgpu_address_space_give(&pool.space, va, MGPU_GRANULE_SIZE);
        return -1;
    }
    pool.slab_granules[pool.nslab_granules++] = (struct slab_granule){va, handle, gpu};
    *address = va;
    return 0;
}

static int slab_granule_owner(uint64_t address)
{
    uint64_t base = address / MGPU_GRANULE_SIZE * MGPU_GRANULE_SIZE;
    for (size_t i = 0; i < pool.nslab_granules; i++)
        if (pool.slab_granules[i].address == base)
            return pool.slab_granules[i].gpu;
    return -1;
}

static void slab_granule_put(void *ctx, uint64_t address)
{
    (void)ctx;
    for (size_t i = 0; i < pool.nslab_granules; i++) {
        if (pool.slab_granules[i].address != address)
            continue;
        unmap_and_release(address, MGPU_GRANULE_SIZE, pool.slab_granules[i].gpu,
                          pool.slab_granules[i].handle);
        mgpu_address_space_give(&pool.space, address, MGPU_GRANULE_SIZE);
        pool.slab_granules[i] = pool.slab_granules[--pool.nslab_granules];
        return;
    }
}

/* --- starting --------------------------------------------------------------- */

__attribute__((format(printf, 1, 2))) static bool stay_off(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pool.why_off, sizeof pool.why_off, fmt, ap);
    va_end(ap);
    return false;
}

static bool driver_has_pool_calls(void)
{
    return mgpu_drv.cuMemAddressReserve && mgpu_drv.cuMemAddressFree && mgpu_drv.cuMemCreate &&
           mgpu_drv.cuMemRelease && mgpu_drv.cuMemMap && mgpu_drv.cuMemUnmap &&
           mgpu_drv.cuMemSetAccess && mgpu_drv.cuMemGetAllocationGranularity &&
           mgpu_drv.cuDeviceCanAccessPeer && mgpu_drv.cuDevicePrimaryCtxRetain &&
           mgpu_drv.cuCtxSynchronize && mgpu_drv.cuCtxPushCurrent && mgpu_drv.cuCtxPopCurrent &&
           mgpu_drv.cuMemcpyDtoD && mgpu_drv.cuCtxGetDevice;
}

/* The run's GPUs, and the devices under them: each device checked once. */
static bool check_gpus(void)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (e == NULL || e->count < 1)
        return stay_off("the driver counts no GPUs");
    if (e->count == 1) {
        pool.one_gpu = true;
        return stay_off("one GPU: allocations go to the driver");
    }
    int n = e->count;
    for (int g = 0; g < n; g++) {
        if (mgpu_drv.cuDeviceGet(&pool.devices[g], e->device[g]) != CUDA_SUCCESS)
            return stay_off("GPU %d: the driver has no device %d", g, e->device[g]);
        if (!mgpu_gpu_entries_first_on_device(e, g))
            continue;
        int vmm = 0;
        size_t memory = 0, granularity = 0;
        if (mgpu_drv.cuDeviceGetAttribute(&vmm,
                                          CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                          pool.devices[g]) != CUDA_SUCCESS ||
            !vmm)
            return stay_off("device %d has no virtual memory management", e->device[g]);
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = pool.devices[g];
        if (mgpu_drv.cuMemGetAllocationGranularity(
                &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
            granularity == 0 || MGPU_GRANULE_SIZE % granularity != 0)
            return stay_off("device %d maps memory in pages of %zu bytes, not a divisor of 2 MiB",
                            e->device[g], granularity);
        if (mgpu_drv.cuDeviceTotalMem(&memory, pool.devices[g]) == CUDA_SUCCESS)
            pool.memory_sum += memory;
        pool.access_devices[pool.naccess++] = pool.devices[g];
    }
    for (int a = 0; a < pool.naccess; a++)
        for (int b = 0; b < pool.naccess; b++) {
            int can = 0;
            if (a != b && (mgpu_drv.cuDeviceCanAccessPeer(&can, pool.access_devices[a],
                                                          pool.access_devices[b]) != CUDA_SUCCESS ||
                           !can))
                return stay_off("device %d cannot reach device %d's memory (no peer access); "
                                "allocations stay on GPU 0; choose GPUs that are linked "
                                "with --gpus",
                                (int)pool.access_devices[a], (int)pool.access_devices[b]);
        }
    pool.ngpus = n;
    return true;
}

/* Releases every context the pool retained. */
static void release_contexts(void)
{
    pthread_mutex_lock(&context_lock);
    for (int g = 0; g < pool.ngpus; g++)
        if (pool.contexts[g] != NULL) {
            mgpu_drv.cuDevicePrimaryCtxRelease(pool.devices[g]);
            pool.contexts[g] = NULL;
        }
    pthread_mutex_unlock(&context_lock);
}

/* The contexts of the entries on the home device, retained now; those of
 * the other devices wait for pool_context. */
static bool retain_contexts(void)
{
    for (int g = 0; g < pool.ngpus; g++) {
        if (pool.devices[g] != pool.devices[0])
            continue;
        CUresult r = mgpu_drv.cuDevicePrimaryCtxRetain(&pool.contexts[g], pool.devices[g]);
        if (r == CUDA_SUCCESS)
            continue;
        release_contexts();
        return stay_off("the primary context of GPU %d: %s", g, mgpu_cu_error_name(r));
    }
    return true;
}

/* Addresses for twice the GPUs' memory, so that fragmentation of the range
 * never refuses what the GPUs could hold; less when the driver will not
 * give that much. */
static bool reserve_range(void)
{
    uint64_t want = (uint64_t)pool.memory_sum * 2;
    want = (want + ((uint64_t)1 << 30) - 1) >> 30 << 30;
    for (; want >= ((uint64_t)1 << 30); want /= 2) {
        CUdeviceptr base = 0;
        if (mgpu_drv.cuMemAddressReserve(&base, want, (size_t)1 << 30, 0, 0) != CUDA_SUCCESS)
            continue;
        if (mgpu_address_space_init(&pool.space, base, want) != 0) {
            mgpu_drv.cuMemAddressFree(base, want);
            return stay_off("out of host memory");
        }
        atomic_store(&range_end, base + want);
        atomic_store(&range_base, base);
        return true;
    }
    return stay_off("the driver reserves no range of addresses for the pool");
}

static atomic_bool new_buffers_home;

void mgpu_pool_new_buffers_home(void)
{
    atomic_store(&new_buffers_home, true);
}

void mgpu_pool_configure(const struct mgpu_pool_settings *settings)
{
    pthread_mutex_lock(&pool.lock);
    pool.settings = *settings;
    pthread_mutex_unlock(&pool.lock);
}

static void start_pool(void);

/* The pool's start, timed for the start-up figures. */
static void start(void)
{
    long long begin = mgpu_monotonic_ns();
    start_pool();
    mgpu_startup_add(MGPU_STARTUP_POOL, mgpu_monotonic_ns() - begin);
}

static void start_pool(void)
{
    pool.tried = true;
    pool.placement = pool.settings.placement;
    if (pool.settings.off) {
        stay_off("%s", pool.settings.why_off != NULL ? pool.settings.why_off : "turned off");
        return;
    }
    if (!driver_has_pool_calls()) {
        stay_off("the driver lacks virtual memory management calls");
        return;
    }
    if (!check_gpus() || !retain_contexts())
        goto off;
    if (!reserve_range()) {
        release_contexts();
        goto off;
    }
    struct mgpu_granule_source source = {slab_granule_get, slab_granule_put, NULL};
    mgpu_suballoc_init(&pool.small, &source);
    pool.active = true;
    if (pool.settings.started != NULL)
        pool.settings.started();
    char home_below[64] = "";
    if (pool.settings.spread_min == SIZE_MAX)
        snprintf(home_below, sizeof home_below, ", new buffers on the home GPU");
    else if (pool.settings.spread_min > MGPU_SUBALLOC_MAX)
        snprintf(home_below, sizeof home_below, ", buffers under %.0f MiB on the home GPU",
                 (double)pool.settings.spread_min / (1 << 20));
    mgpu_info("memory: one address range on %d GPUs (%d device%s), %s placement%s", pool.ngpus,
              pool.naccess, pool.naccess == 1 ? "" : "s", mgpu_placement_name(pool.placement),
              home_below);
    return;
off:
    /* One GPU is the normal case of -n 1, not worth a warning. */
    if (pool.one_gpu)
        mgpu_info("device memory: %s", pool.why_off);
    else
        mgpu_warn("device memory stays on the home GPU: %s", pool.why_off);
    pool.ngpus = 0;
    pool.naccess = 0;
}

bool mgpu_pool_serves(CUcontext ctx)
{
    pthread_mutex_lock(&pool.lock);
    if (!pool.tried)
        start();
    bool active = pool.active;
    pthread_mutex_unlock(&pool.lock);
    if (!active || ctx == NULL)
        return false;
    CUdevice dev = -1;
    bool serves = mgpu_context_device(ctx, &dev) == CUDA_SUCCESS && dev == pool.devices[0];
    /* The other devices' contexts, made off the program's way from its
     * first allocation on (partition/gpu_contexts.h). */
    static atomic_bool warm_asked;
    if (serves && pool.naccess > 1 && !atomic_load_explicit(&warm_asked, memory_order_relaxed) &&
        !atomic_exchange(&warm_asked, true))
        mgpu_gpu_contexts_warm(ctx);
    return serves;
}

bool mgpu_pool_holds(CUdeviceptr address)
{
    return address >= atomic_load_explicit(&range_base, memory_order_relaxed) &&
           address < atomic_load_explicit(&range_end, memory_order_relaxed);
}

/* --- allocations -------------------------------------------------------------- */

static void release_chunks(struct mgpu_allocation *a, size_t count)
{
    for (size_t i = 0; i < count; i++)
        unmap_and_release(a->start + a->chunks[i].offset, a->chunks[i].bytes, a->chunks[i].gpu,
                          (CUmemGenericAllocationHandle)a->chunks[i].handle);
}

/* The chunks of a large allocation: runs of one owner under the placement,
 * cut at CHUNK_MAX. */
static CUresult map_large(struct mgpu_allocation *a)
{
    size_t ngranules = a->span / MGPU_GRANULE_SIZE;
    /* Under MGPU_PLACEMENT=auto a buffer starts whole on the home GPU (one
     * under MGPU_SPREAD_MIN, by default every one) and is spread later if
     * split launches pay for it; so does every buffer once nothing moves
     * buffers any more. Where the home GPU is full, create_and_map takes
     * the next GPU with room. */
    enum mgpu_placement placement =
        a->bytes < pool.settings.spread_min || atomic_load(&new_buffers_home) ? MGPU_PLACE_HOME
                                                                              : pool.placement;
    size_t capacity = 8;
    a->chunks = malloc(capacity * sizeof *a->chunks);
    if (a->chunks == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* A buffer made on the home GPU is still cut where the pool's
     * distributed placement changes owner, so that spreading it later
     * moves whole chunks and copies nothing that stays. */
    bool cut_as_spread = placement != pool.placement && pool.placement == MGPU_PLACE_DISTRIBUTED;
    size_t i = 0;
    while (i < ngranules) {
        int owner = mgpu_placement_owner(placement, i, ngranules, pool.ngpus, NULL);
        int spread_owner = mgpu_placement_owner(pool.placement, i, ngranules, pool.ngpus, NULL);
        size_t j = i + 1;
        while (j < ngranules && (j - i) * MGPU_GRANULE_SIZE < CHUNK_MAX &&
               mgpu_placement_owner(placement, j, ngranules, pool.ngpus, NULL) == owner &&
               (!cut_as_spread || mgpu_placement_owner(pool.placement, j, ngranules, pool.ngpus,
                                                       NULL) == spread_owner))
            j++;
        if (a->nchunks == capacity) {
            capacity *= 2;
            struct mgpu_chunk *grown = realloc(a->chunks, capacity * sizeof *grown);
            if (grown == NULL) {
                release_chunks(a, a->nchunks);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            a->chunks = grown;
        }
        struct mgpu_chunk *c = &a->chunks[a->nchunks];
        c->offset = i * MGPU_GRANULE_SIZE;
        c->bytes = (j - i) * MGPU_GRANULE_SIZE;
        c->gpu = owner;
        CUmemGenericAllocationHandle handle;
        CUresult r = create_and_map(a->start + c->offset, c->bytes, &c->gpu, &handle);
        if (r != CUDA_SUCCESS) {
            release_chunks(a, a->nchunks);
            return r;
        }
        c->handle = handle;
        a->nchunks++;
        i = j;
    }
    CUresult r = grant_access(a->start, a->span);
    if (r != CUDA_SUCCESS)
        release_chunks(a, a->nchunks);
    return r;
}

static void free_now(struct mgpu_allocation *a)
{
    atomic_fetch_add(&layout_version, 1);
    if (a->small) {
        size_t rounded;
        mgpu_suballoc_free(&pool.small, a->start, &rounded);
    } else {
        release_chunks(a, a->nchunks);
        mgpu_address_space_give(&pool.space, a->start, a->span);
    }
    free(a->chunks);
    free(a);
}

/* Stream-ordered frees whose stream has passed them. With `wait`, waits
 * for all of them (before retrying an allocation that ran out). */
static void reclaim_pending(bool wait)
{
    size_t kept = 0;
    for (size_t i = 0; i < pool.npending; i++) {
        struct pending_free *p = &pool.pending[i];
        CUresult r = wait ? mgpu_drv.cuEventSynchronize(p->done) : mgpu_drv.cuEventQuery(p->done);
        if (r == CUDA_ERROR_NOT_READY) {
            pool.pending[kept++] = *p;
            continue;
        }
        mgpu_drv.cuEventDestroy(p->done);
        struct mgpu_allocation *a = mgpu_allocation_table_remove(&pool.table, p->address);
        if (a != NULL)
            free_now(a);
    }
    pool.npending = kept;
}

static CUresult alloc_locked(struct mgpu_allocation *a, size_t bytes)
{
    if (bytes <= MGPU_SUBALLOC_MAX) {
        size_t rounded;
        if (mgpu_suballoc_alloc(&pool.small, bytes, &a->start, &rounded) != 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        a->small = true;
        a->span = rounded;
        return CUDA_SUCCESS;
    }
    a->span = (bytes + MGPU_GRANULE_SIZE - 1) / MGPU_GRANULE_SIZE * MGPU_GRANULE_SIZE;
    if (mgpu_address_space_take(&pool.space, a->span, &a->start) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = map_large(a);
    if (r != CUDA_SUCCESS) {
        free(a->chunks);
        a->chunks = NULL;
        a->nchunks = 0;
        mgpu_address_space_give(&pool.space, a->start, a->span);
    }
    return r;
}

CUresult mgpu_pool_alloc(CUdeviceptr *address, size_t bytes, CUcontext ctx, CUmemoryPool mempool)
{
    *address = 0; /* as the driver leaves it when it fails */
    if (bytes > pool.memory_sum)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct mgpu_allocation *a = calloc(1, sizeof *a);
    if (a == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->bytes = bytes;
    a->context = ctx;
    a->mempool = mempool;
    pthread_mutex_lock(&pool.lock);
    reclaim_pending(false);
    CUresult r = alloc_locked(a, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && pool.npending > 0) {
        reclaim_pending(true);
        r = alloc_locked(a, bytes);
    }
    if (r == CUDA_SUCCESS) {
        atomic_fetch_add(&layout_version, 1);
        a->id = ++pool.next_id;
        if (mgpu_allocation_table_add(&pool.table, a) != 0) {
            free_now(a);
            a = NULL;
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&pool.lock);
    if (r != CUDA_SUCCESS) {
        free(a);
        return r;
    }
    *address = a->start;
    return CUDA_SUCCESS;
}

static bool is_pending(CUdeviceptr address)
{
    for (size_t i = 0; i < pool.npending; i++)
        if (pool.pending[i].address == address)
            return true;
    return false;
}

CUresult mgpu_pool_free(CUdeviceptr address, CUresult freed_error)
{
    /* Like cuMemFree, the free waits for the work that may still use it. */
    CUresult r = mgpu_drv.cuCtxSynchronize();
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_CONTEXT)
        return r;
    pthread_mutex_lock(&pool.lock);
    struct mgpu_allocation *a = NULL;
    if (!is_pending(address))
        a = mgpu_allocation_table_remove(&pool.table, address);
    if (a != NULL)
        free_now(a);
    reclaim_pending(false);
    pthread_mutex_unlock(&pool.lock);
    return a != NULL ? CUDA_SUCCESS : freed_error;
}

CUresult mgpu_pool_free_async(CUdeviceptr address, CUstream stream, CUresult freed_error)
{
    pthread_mutex_lock(&pool.lock);
    CUresult r = freed_error;
    if (!is_pending(address) && mgpu_allocation_table_at(&pool.table, address) != NULL) {
        if (pool.npending == pool.pending_capacity) {
            size_t capacity = pool.pending_capacity ? 2 * pool.pending_capacity : 64;
            struct pending_free *grown = realloc(pool.pending, capacity * sizeof *grown);
            if (grown == NULL) {
                pthread_mutex_unlock(&pool.lock);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            pool.pending = grown;
            pool.pending_capacity = capacity;
        }
        CUevent done = NULL;
        r = mgpu_drv.cuEventCreate(&done, CU_EVENT_DISABLE_TIMING);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuEventRecord(done, stream);
        if (r == CUDA_SUCCESS)
            pool.pending[pool.npending++] = (struct pending_free){address, done};
        else if (done != NULL)
            mgpu_drv.cuEventDestroy(done);
    }
    pthread_mutex_unlock(&pool.lock);
    return r;
}

/* The live allocation holding `address`; the caller holds the lock. */
static struct mgpu_allocation *holding(CUdeviceptr address)
{
    if (!mgpu_pool_holds(address))
        return NULL;
    struct mgpu_allocation *a = mgpu_allocation_table_large_holding(&pool.table, address);
    if (a != NULL)
        return a;
    uint64_t start;
    size_t slot;
    if (!mgpu_suballoc_find(&pool.small, address, &start, &slot))
        return NULL;
    a = mgpu_allocation_table_at(&pool.table, start);
    return a != NULL && address < a->start + a->bytes ? a : NULL;
}

bool mgpu_pool_find(CUdeviceptr address, struct mgpu_pool_block *out)
{
    if (!mgpu_pool_holds(address))
        return false;
    pthread_mutex_lock(&pool.lock);
    struct mgpu_allocation *a = holding(address);
    if (a != NULL && address >= a->start + a->bytes)
        a = NULL; /* past the end the program asked for: the driver knows no such pointer */
    if (a != NULL)
        *out =
            (struct mgpu_pool_block){a->start, a->bytes, a->context, a->mempool, a->id, a->shared};
    pthread_mutex_unlock(&pool.lock);
    return a != NULL;
}

bool mgpu_pool_overruns(CUdeviceptr address, size_t bytes)
{
    struct mgpu_pool_block b;
    return bytes > 0 && mgpu_pool_find(address, &b) && bytes > b.start + b.bytes - address;
}

size_t mgpu_pool_share(CUdeviceptr address, struct mgpu_pool_shared *out,
                       struct mgpu_pool_piece *pieces, size_t max)
{
    if (!mgpu_pool_holds(address) || pool.not_exportable)
        return 0;
    pthread_mutex_lock(&pool.lock);
    size_t n = 0;
    struct mgpu_allocation *a = holding(address);
    if (a != NULL && address < a->start + a->bytes) {
        out->start = a->start;
        out->bytes = a->bytes;
        out->id = a->id;
        if (a->small) { /* its slot's granule, shared with its neighbours */
            uint64_t base = a->start / MGPU_GRANULE_SIZE * MGPU_GRANULE_SIZE;
            for (size_t i = 0; i < pool.nslab_granules && n == 0; i++) {
                if (pool.slab_granules[i].address != base || max == 0)
                    continue;
                if (pieces != NULL)
                    pieces[0] =
                        (struct mgpu_pool_piece){0, MGPU_GRANULE_SIZE, pool.slab_granules[i].handle,
                                                 pool.slab_granules[i].gpu};
                n = 1;
            }
            out->map_base = base;
            out->map_bytes = MGPU_GRANULE_SIZE;
        } else if (a->nchunks <= max) {
            for (size_t i = 0; pieces != NULL && i < a->nchunks; i++)
                pieces[i] = (struct mgpu_pool_piece){
                    a->chunks[i].offset, a->chunks[i].bytes,
                    (CUmemGenericAllocationHandle)a->chunks[i].handle, a->chunks[i].gpu};
            n = a->nchunks;
            out->map_base = a->start;
            out->map_bytes = a->span;
        }
        if (n > 0)
            a->shared = true;
    }
    pthread_mutex_unlock(&pool.lock);
    return n;
}

static int owner_locked(const struct mgpu_allocation *a, uint64_t offset)
{
    if (a->small)
        return slab_granule_owner(a->start);
    for (size_t i = 0; i < a->nchunks; i++)
        if (offset < a->chunks[i].offset + a->chunks[i].bytes)
            return a->chunks[i].gpu;
    return -1;
}

/* Calls piece(gpu, offset, bytes, ctx) for each owner's piece of
 * [address, address + bytes), in address order (offsets relative to
 * `address`), under the pool's lock. Nothing when the range is not inside
 * one allocation. */
static void walk_owners(CUdeviceptr address, size_t bytes,
                        void (*piece)(int gpu, uint64_t offset, uint64_t bytes, void *ctx),
                        void *ctx)
{
    if (bytes == 0 || !mgpu_pool_holds(address))
        return;
    pthread_mutex_lock(&pool.lock);
    struct mgpu_allocation *a = holding(address);
    if (a != NULL && address + bytes <= a->start + a->span) {
        uint64_t from = address - a->start, to = from + bytes;
        if (a->small)
            piece(owner_locked(a, from), 0, bytes, ctx);
        for (size_t i = 0; !a->small && i < a->nchunks; i++) {
            const struct mgpu_chunk *c = &a->chunks[i];
            uint64_t lo = c->offset > from ? c->offset : from;
            uint64_t hi = c->offset + c->bytes < to ? c->offset + c->bytes : to;
            if (lo < hi)
                piece(c->gpu, lo - from, hi - lo, ctx);
        }
    }
    pthread_mutex_unlock(&pool.lock);
}

struct runs_out {
    struct mgpu_owner_run *runs;
    size_t max, n;
};

/* For walk_owners: a piece joins the run before it when on the same GPU. */
static void add_run(int gpu, uint64_t offset, uint64_t bytes, void *ctx)
{
    struct runs_out *o = ctx;
    if (o->n > 0 && o->n <= o->max && o->runs[o->n - 1].gpu == gpu) {
        o->runs[o->n - 1].bytes += bytes;
        return;
    }
    if (o->n < o->max)
        o->runs[o->n] = (struct mgpu_owner_run){offset, bytes, gpu};
    o->n++;
}

size_t mgpu_pool_runs(CUdeviceptr address, size_t bytes, struct mgpu_owner_run *runs, size_t max)
{
    struct runs_out o = {runs, max, 0};
    walk_owners(address, bytes, add_run, &o);
    return o.n;
}

/* For walk_owners: a piece's bytes to its GPU's count. */
static void add_held(int gpu, uint64_t offset, uint64_t bytes, void *ctx)
{
    size_t *held = ctx;
    (void)offset;
    if (gpu >= 0 && gpu < MGPU_MAX_GPUS)
        held[gpu] += bytes;
}

int mgpu_pool_bytes_by_gpu(CUdeviceptr address, size_t bytes, size_t held[MGPU_MAX_GPUS])
{
    memset(held, 0, MGPU_MAX_GPUS * sizeof held[0]);
    walk_owners(address, bytes, add_held, held);
    int holders = 0;
    for (int g = 0; g < MGPU_MAX_GPUS; g++)
        holders += held[g] > 0;
    return holders;
}

int mgpu_pool_owner(CUdeviceptr address)
{
    if (!mgpu_pool_holds(address))
        return -1;
    pthread_mutex_lock(&pool.lock);
    struct mgpu_allocation *a = holding(address);
    int owner = a != NULL ? owner_locked(a, address - a->start) : -1;
    pthread_mutex_unlock(&pool.lock);
    return owner;
}

int mgpu_pool_gpus(CUcontext contexts[MGPU_MAX_GPUS])
{
    pthread_mutex_lock(&pool.lock);
    int n = pool.active ? pool.ngpus : 0;
    for (int g = 0; g < n; g++)
        if ((contexts[g] = pool_context(g)) == NULL)
            n = 0;
    pthread_mutex_unlock(&pool.lock);
    return n;
}

CUcontext mgpu_pool_home_context(void)
{
    pthread_mutex_lock(&pool.lock);
    CUcontext home = pool.active ? pool.contexts[0] : NULL;
    pthread_mutex_unlock(&pool.lock);
    return home;
}

/* --- migration ------------------------------------------------------------------ */

/* Gives back physical memory made for chunks and already unmapped. */
static void release_unmapped(const struct mgpu_chunk *parts, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        mgpu_drv.cuMemRelease((CUmemGenericAllocationHandle)parts[k].handle);
        count_held(parts[k].gpu, parts[k].bytes, false);
    }
}

/* A move is made in steps over every chunk it touches, so that the copies
 * of a spread to several GPUs run at the same time on their links and the
 * host waits once: (1) each chunk's new parts made, each mapped at a
 * scratch address with access for its own device only; (2) each part's
 * bytes copied from the old chunk on a stream of the part's GPU (a GPU
 * that receives pulls its part; a part that stays is copied within its
 * GPU), then every stream waited for; (3) each old chunk unmapped and
 * released, its parts mapped in its place, and access granted to every
 * device once per stretch rebuilt. A chunk that moves whole makes one
 * part and copies only itself: map_large cuts buffers at the boundaries
 * of the pool's placement, so that a spread moves whole chunks. */

struct chunk_move {
    size_t index;          /* of the old chunk in a->chunks before the commit */
    struct mgpu_chunk old; /* as it was */
    struct mgpu_chunk *parts;
    size_t nparts, made;
    uint64_t scratch; /* 0: none taken */
};

struct move_batch {
    struct mgpu_allocation *a;
    struct chunk_move *moves;
    size_t count, capacity;
    uint64_t moving_bytes; /* those that change GPU */
    uint64_t copied_bytes; /* those of every chunk rebuilt */
};

/* The GPU granule `i` of a (an index into its span), now on GPU `now`, is
 * to be on. */
typedef int (*granule_owner_fn)(const struct mgpu_allocation *a, size_t i, int now, void *ctx);

/* Under pool.lock: chunk `index` of a into the batch, cut into runs of one
 * owner each as `owner` says; nothing where every granule stays. */
static CUresult plan_chunk(struct move_batch *b, size_t index, granule_owner_fn owner, void *ctx)
{
    const struct mgpu_chunk *c = &b->a->chunks[index];
    size_t first = c->offset / MGPU_GRANULE_SIZE, last = (c->offset + c->bytes) / MGPU_GRANULE_SIZE;
    size_t nparts = 0;
    bool moves = false;
    int before = -1;
    for (size_t i = first; i < last; i++) {
        int g = owner(b->a, i, c->gpu, ctx);
        moves |= g != c->gpu;
        nparts += i == first || g != before;
        before = g;
    }
    if (!moves)
        return CUDA_SUCCESS;
    if (b->count == b->capacity) {
        size_t capacity = b->capacity ? 2 * b->capacity : 8;
        struct chunk_move *grown = realloc(b->moves, capacity * sizeof *grown);
        if (grown == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
        b->moves = grown;
        b->capacity = capacity;
    }
    struct chunk_move *m = &b->moves[b->count];
    *m = (struct chunk_move){index, *c, calloc(nparts, sizeof *m->parts), 0, 0, 0};
    if (m->parts == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = first; i < last; i++) {
        int g = owner(b->a, i, c->gpu, ctx);
        if (m->nparts == 0 || g != m->parts[m->nparts - 1].gpu)
            m->parts[m->nparts++] = (struct mgpu_chunk){i * MGPU_GRANULE_SIZE, 0, g, 0};
        m->parts[m->nparts - 1].bytes += MGPU_GRANULE_SIZE;
        if (g != c->gpu)
            b->moving_bytes += MGPU_GRANULE_SIZE;
    }
    b->copied_bytes += c->bytes;
    b->count++;
    return CUDA_SUCCESS;
}

/* Access for one device to [va, va + bytes), for the copy into it. */
static CUresult grant_access_to(uint64_t va, size_t bytes, CUdevice device)
{
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return mgpu_drv.cuMemSetAccess(va, bytes, &access, 1);
}

/* Under pool.lock: step (1) for one chunk. */
static CUresult make_parts(struct chunk_move *m)
{
    if (mgpu_address_space_take(&pool.space, m->old.bytes, &m->scratch) != 0) {
        m->scratch = 0;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (; m->made < m->nparts; m->made++) {
        struct mgpu_chunk *p = &m->parts[m->made];
        uint64_t va = m->scratch + p->offset - m->old.offset;
        CUmemGenericAllocationHandle h;
        int where = p->gpu; /* or the next GPU with room */
        CUresult r = create_and_map(va, p->bytes, &where, &h);
        if (r != CUDA_SUCCESS)
            return r;
        p->gpu = where;
        p->handle = h;
        r = grant_access_to(va, p->bytes, pool.devices[where]);
        if (r != CUDA_SUCCESS) {
            m->made++; /* made and mapped: undone with the others */
            return r;
        }
    }
    return CUDA_SUCCESS;
}

/* Under pool.lock: the scratch mappings of a chunk's parts undone; with
 * `release`, the parts' memory given back too (a move that failed). */
static void drop_scratch(struct chunk_move *m, bool release)
{
    if (m->scratch == 0)
        return;
    for (size_t k = 0; k < m->made; k++) {
        mgpu_drv.cuMemUnmap(m->scratch + m->parts[k].offset - m->old.offset, m->parts[k].bytes);
        if (release) {
            mgpu_drv.cuMemRelease((CUmemGenericAllocationHandle)m->parts[k].handle);
            count_held(m->parts[k].gpu, m->parts[k].bytes, false);
        }
    }
    mgpu_address_space_give(&pool.space, m->scratch, m->old.bytes);
    m->scratch = 0;
}

/* Under pool.lock, GPU g's context current: the stream on which moves
 * copy into GPU g, made at its first move. */
static CUstream move_stream(int g)
{
    if (pool.move_streams[g] == NULL &&
        mgpu_drv.cuStreamCreate(&pool.move_streams[g], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        pool.move_streams[g] = NULL;
    return pool.move_streams[g];
}

/* Under pool.lock: step (2), every part's copy queued on its GPU's stream,
 * then each stream used waited for. */
static CUresult copy_parts(struct move_batch *b)
{
    bool used[MGPU_MAX_GPUS] = {false};
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < b->count && r == CUDA_SUCCESS; i++) {
        struct chunk_move *m = &b->moves[i];
        for (size_t k = 0; k < m->nparts && r == CUDA_SUCCESS; k++) {
            const struct mgpu_chunk *p = &m->parts[k];
            CUcontext ctx = pool_context(p->gpu);
            r = ctx != NULL ? mgpu_drv.cuCtxPushCurrent(ctx) : CUDA_ERROR_INVALID_CONTEXT;
            if (r != CUDA_SUCCESS)
                break;
            CUstream stream = move_stream(p->gpu);
            r = stream == NULL
                    ? CUDA_ERROR_OUT_OF_MEMORY
                    : mgpu_drv.cuMemcpyDtoDAsync(m->scratch + p->offset - m->old.offset,
                                                 b->a->start + p->offset, p->bytes, stream);
            used[p->gpu] |= stream != NULL;
            CUcontext popped;
            mgpu_drv.cuCtxPopCurrent(&popped);
        }
    }
    /* Waited for after a failure too: no copy may still write into memory
     * that is given back. */
    for (int g = 0; g < pool.ngpus; g++) {
        if (!used[g])
            continue;
        CUcontext ctx = pool_context(g);
        CUresult w = ctx != NULL ? mgpu_drv.cuCtxPushCurrent(ctx) : CUDA_ERROR_INVALID_CONTEXT;
        if (w == CUDA_SUCCESS) {
            w = mgpu_drv.cuStreamSynchronize(pool.move_streams[g]);
            CUcontext popped;
            mgpu_drv.cuCtxPopCurrent(&popped);
        }
        if (r == CUDA_SUCCESS)
            r = w;
    }
    return r;
}

/* Under pool.lock: step (3) for one chunk, whose copies are done. */
static CUresult commit_parts(struct mgpu_allocation *a, struct chunk_move *m)
{
    drop_scratch(m, false);
    if (m->nparts > 1) {
        struct mgpu_chunk *grown = realloc(a->chunks, (a->nchunks + m->nparts - 1) * sizeof *grown);
        if (grown == NULL) { /* the old chunk stays, with its bytes */
            release_unmapped(m->parts, m->nparts);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        a->chunks = grown;
    }
    unmap_and_release(a->start + m->old.offset, m->old.bytes, m->old.gpu,
                      (CUmemGenericAllocationHandle)m->old.handle);
    CUresult r = CUDA_SUCCESS;
    for (size_t k = 0; k < m->nparts; k++)
        if (mgpu_drv.cuMemMap(a->start + m->parts[k].offset, m->parts[k].bytes, 0,
                              (CUmemGenericAllocationHandle)m->parts[k].handle, 0) != CUDA_SUCCESS)
            r = CUDA_ERROR_UNKNOWN;
    memmove(&a->chunks[m->index + m->nparts], &a->chunks[m->index + 1],
            (a->nchunks - m->index - 1) * sizeof *a->chunks);
    memcpy(&a->chunks[m->index], m->parts, m->nparts * sizeof *m->parts);
    a->nchunks += m->nparts - 1;
    return r;
}

/* Under pool.lock, the GPUs idle: the batch's moves made (steps 1 to 3),
 * or none of them where a part could not be made or copied. */
static CUresult run_batch(struct move_batch *b)
{
    if (b->count == 0)
        return CUDA_SUCCESS;
    /* With MGPU_VERBOSE=2, where the time goes: [0..1] parts made and
     * mapped at scratch addresses, [1..2] copied and waited for, [2..3]
     * unmapped and mapped in place, [3..4] access for every device. */
    long long t[5];
    t[0] = mgpu_monotonic_ns();
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < b->count && r == CUDA_SUCCESS; i++)
        r = make_parts(&b->moves[i]);
    t[1] = mgpu_monotonic_ns();
    if (r == CUDA_SUCCESS)
        r = copy_parts(b);
    t[2] = mgpu_monotonic_ns();
    if (r != CUDA_SUCCESS) {
        for (size_t i = 0; i < b->count; i++)
            drop_scratch(&b->moves[i], true);
        return r;
    }
    /* The last chunk first, so that the indices of those before stay true. */
    for (size_t i = b->count; i-- > 0;) {
        CUresult c = commit_parts(b->a, &b->moves[i]);
        if (r == CUDA_SUCCESS)
            r = c;
    }
    t[3] = mgpu_monotonic_ns();
    /* One grant per stretch of chunks rebuilt side by side. */
    for (size_t i = 0; i < b->count;) {
        uint64_t from = b->moves[i].old.offset, to = from + b->moves[i].old.bytes;
        size_t j = i + 1;
        while (j < b->count && b->moves[j].old.offset == to)
            to += b->moves[j++].old.bytes;
        CUresult g = grant_access(b->a->start + from, to - from);
        if (r == CUDA_SUCCESS)
            r = g;
        i = j;
    }
    t[4] = mgpu_monotonic_ns();
    atomic_fetch_add(&layout_version, 1);
    mgpu_debug("memory: %.1f MiB of a buffer moved (%zu chunk%s, %.1f MiB copied) in %.2f ms: "
               "made and mapped %.2f, copied %.2f, remapped %.2f, access %.2f",
               (double)b->moving_bytes / (1 << 20), b->count, b->count == 1 ? "" : "s",
               (double)b->copied_bytes / (1 << 20), (double)(t[4] - t[0]) / 1e6,
               (double)(t[1] - t[0]) / 1e6, (double)(t[2] - t[1]) / 1e6,
               (double)(t[3] - t[2]) / 1e6, (double)(t[4] - t[3]) / 1e6);
    return r;
}

static void free_batch(struct move_batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        free(b->moves[i].parts);
    free(b->moves);
}

/* Under pool.lock, the GPUs idle: every chunk of a that `owner` moves,
 * moved as one batch. */
static CUresult move_chunks(struct mgpu_allocation *a, granule_owner_fn owner, void *ctx)
{
    struct move_batch b = {a, NULL, 0, 0, 0, 0};
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < a->nchunks && r == CUDA_SUCCESS; i++)
        r = plan_chunk(&b, i, owner, ctx);
    if (r == CUDA_SUCCESS)
        r = run_batch(&b);
    free_batch(&b);
    return r;
}

/* Under pool.lock: the home context idle, so that no kernel uses what
 * moves (split launches join back into its streams). */
static CUresult wait_for_home(void)
{
    return mgpu_drv_synchronize_context(pool.contexts[0]);
}

struct range_move {
    size_t from, to; /* granules */
    int gpu;
};

static int range_owner(const struct mgpu_allocation *a, size_t i, int now, void *ctx)
{
    (void)a;
    const struct range_move *m = ctx;
    return i >= m->from && i < m->to ? m->gpu : now;
}

/* Under pool.lock, the GPUs idle: the granules of [from, to) (offsets in
 * a, granule-aligned) onto `gpu`. */
static CUresult migrate_range(struct mgpu_allocation *a, uint64_t from, uint64_t to, int gpu)
{
    struct range_move m = {from / MGPU_GRANULE_SIZE, to / MGPU_GRANULE_SIZE, gpu};
    return move_chunks(a, range_owner, &m);
}

enum mgpu_context_wait mgpu_pool_wait_for_home_within(unsigned bound_ms)
{
    pthread_mutex_lock(&pool.lock);
    CUcontext home = pool.active ? pool.contexts[0] : NULL;
    pthread_mutex_unlock(&pool.lock);
    return home != NULL ? mgpu_context_wait_within(home, bound_ms) : MGPU_CONTEXT_IDLE;
}

CUresult mgpu_pool_migrate(CUdeviceptr address, size_t bytes, int gpu)
{
    if (!mgpu_pool_holds(address) || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool.lock);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    struct mgpu_allocation *a = holding(address);
    if (a == NULL || a->small || gpu < 0 || gpu >= pool.ngpus ||
        address + bytes > a->start + a->span)
        goto out;
    r = CUDA_ERROR_NOT_PERMITTED;
    if (a->shared) /* another process maps its pages */
        goto out;
    r = wait_for_home();
    uint64_t from = (address - a->start) / MGPU_GRANULE_SIZE * MGPU_GRANULE_SIZE;
    uint64_t to = (address - a->start + bytes + MGPU_GRANULE_SIZE - 1) / MGPU_GRANULE_SIZE *
                  MGPU_GRANULE_SIZE;
    if (r == CUDA_SUCCESS)
        r = migrate_range(a, from, to, gpu);
    if (r == CUDA_SUCCESS)
        pool.migrations++;
out:
    pthread_mutex_unlock(&pool.lock);
    return r;
}

/* Under pool.lock: fn on each run of one owner of large allocation a as
 * the pool's placement lays it out, in order, while it returns true. */
static void each_placed_run(const struct mgpu_allocation *a,
                            bool (*fn)(const struct mgpu_owner_run *run, void *ctx), void *ctx)
{
    size_t ngranules = a->span / MGPU_GRANULE_SIZE;
    for (size_t i = 0; i < ngranules;) {
        int owner = mgpu_placement_owner(pool.placement, i, ngranules, pool.ngpus, NULL);
        size_t j = i + 1;
        while (j < ngranules &&
               mgpu_placement_owner(pool.placement, j, ngranules, pool.ngpus, NULL) == owner)
            j++;
        struct mgpu_owner_run run = {i * MGPU_GRANULE_SIZE, (j - i) * MGPU_GRANULE_SIZE, owner};
        if (!fn(&run, ctx))
            return;
        i = j;
    }
}

static int placed_owner(const struct mgpu_allocation *a, size_t i, int now, void *ctx)
{
    (void)now;
    (void)ctx;
    return mgpu_placement_owner(pool.placement, i, a->span / MGPU_GRANULE_SIZE, pool.ngpus, NULL);
}

CUresult mgpu_pool_spread(CUdeviceptr start)
{
    if (!mgpu_pool_holds(start))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool.lock);
    struct mgpu_allocation *a = mgpu_allocation_table_at(&pool.table, start);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (a != NULL && a->shared)
        r = CUDA_ERROR_NOT_PERMITTED; /* another process maps its pages */
    else if (a != NULL && !a->small) {
        r = wait_for_home();
        if (r == CUDA_SUCCESS)
            r = move_chunks(a, placed_owner, NULL);
        if (r == CUDA_SUCCESS)
            pool.migrations++;
    }
    pthread_mutex_unlock(&pool.lock);
    return r;
}

struct run_list {
    struct mgpu_owner_run *runs;
    size_t max, count;
};

static bool list_run(const struct mgpu_owner_run *run, void *ctx)
{
    struct run_list *l = ctx;
    if (l->count < l->max)
        l->runs[l->count] = *run;
    l->count++;
    return true;
}

size_t mgpu_pool_spread_runs(CUdeviceptr start, struct mgpu_owner_run *runs, size_t max)
{
    if (!mgpu_pool_holds(start))
        return 0;
    pthread_mutex_lock(&pool.lock);
    struct run_list l = {runs, max, 0};
    struct mgpu_allocation *a = mgpu_allocation_table_at(&pool.table, start);
    if (a != NULL && !a->small)
        each_placed_run(a, list_run, &l);
    pthread_mutex_unlock(&pool.lock);
    return l.count;
}

int mgpu_pool_spread_bytes_by_gpu(CUdeviceptr address, size_t bytes, size_t held[MGPU_MAX_GPUS])
{
    memset(held, 0, MGPU_MAX_GPUS * sizeof held[0]);
    if (bytes == 0 || !mgpu_pool_holds(address))
        return 0;
    pthread_mutex_lock(&pool.lock);
    struct mgpu_allocation *a = holding(address);
    if (a != NULL && !a->small && address + bytes <= a->start + a->span)
        mgpu_placement_range_bytes(pool.placement, a->span / MGPU_GRANULE_SIZE, pool.ngpus,
                                   address - a->start, bytes, held);
    pthread_mutex_unlock(&pool.lock);
    int holders = 0;
    for (int g = 0; g < MGPU_MAX_GPUS; g++)
        holders += held[g] > 0;
    return holders;
}

size_t mgpu_pool_large_buffers(struct mgpu_pool_block *out, size_t max)
{
    /* The table keeps the large ones apart: a launch of a kernel mgpu
     * cannot analyse asks for them, so no walk over every small one. */
    pthread_mutex_lock(&pool.lock);
    size_t count = pool.active ? pool.table.nlarge : 0;
    for (size_t i = 0; i < count && i < max; i++) {
        const struct mgpu_allocation *a = pool.table.large[i];
        out[i] =
            (struct mgpu_pool_block){a->start, a->bytes, a->context, a->mempool, a->id, a->shared};
    }
    pthread_mutex_unlock(&pool.lock);
    return count;
}

/* --- figures and the end ------------------------------------------------------- */

void mgpu_pool_usage(struct mgpu_pool_usage *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&pool.lock);
    out->active = pool.active;
    out->placement = mgpu_placement_name(pool.placement);
    snprintf(out->why_off, sizeof out->why_off, "%s", pool.why_off);
    out->gpus = pool.active ? pool.ngpus : 0;
    for (int g = 0; g < out->gpus; g++) {
        out->now[g] = pool.now[g];
        out->peak[g] = pool.peak[g];
    }
    out->peak_total = pool.peak_total;
    out->migrations = pool.migrations;
    pthread_mutex_unlock(&pool.lock);
}

uint64_t mgpu_pool_layout_version(void)
{
    return atomic_load_explicit(&layout_version, memory_order_acquire);
}

struct owner_fill {
    uint8_t *owners;
    size_t granules;
};

static void mark_granules(struct owner_fill *f, uint64_t start, uint64_t bytes, int gpu)
{
    uint64_t first = (start - pool.space.base) / MGPU_GRANULE_SIZE;
    uint64_t end = (start + bytes - pool.space.base + MGPU_GRANULE_SIZE - 1) / MGPU_GRANULE_SIZE;
    for (uint64_t g = first; g < end && g < f->granules; g++)
        f->owners[g] = (uint8_t)gpu;
}

static void fill_owners(struct mgpu_allocation *a, void *ctx)
{
    for (size_t i = 0; !a->small && i < a->nchunks; i++)
        mark_granules(ctx, a->start + a->chunks[i].offset, a->chunks[i].bytes, a->chunks[i].gpu);
}

size_t mgpu_pool_owner_map(struct mgpu_pool_layout *layout, uint8_t *owners, size_t max)
{
    pthread_mutex_lock(&pool.lock);
    memset(layout, 0, sizeof *layout);
    layout->version = mgpu_pool_layout_version();
    if (pool.active) {
        layout->base = pool.space.base;
        layout->granules = pool.space.bytes / MGPU_GRANULE_SIZE;
        layout->granule_shift = (unsigned)__builtin_ctzll(MGPU_GRANULE_SIZE);
    }
    if (owners != NULL && layout->granules <= max) {
        memset(owners, MGPU_POOL_NO_OWNER, layout->granules);
        struct owner_fill fill = {owners, layout->granules};
        mgpu_allocation_table_each(&pool.table, fill_owners, &fill);
        for (size_t i = 0; i < pool.nslab_granules; i++)
            mark_granules(&fill, pool.slab_granules[i].address, MGPU_GRANULE_SIZE,
                          pool.slab_granules[i].gpu);
    }
    pthread_mutex_unlock(&pool.lock);
    return layout->granules;
}

static void free_record(struct mgpu_allocation *a, void *ctx)
{
    (void)ctx;
    if (!a->small)
        release_chunks(a, a->nchunks);
    free(a->chunks);
    free(a);
}

void mgpu_pool_release_all(void)
{
    pthread_mutex_lock(&pool.lock);
    if (!pool.active) {
        pthread_mutex_unlock(&pool.lock);
        return;
    }
    /* Work still queued may use the memory: let it finish first. */
    for (int g = 0; g < pool.ngpus; g++)
        if (pool.contexts[g] != NULL)
            mgpu_drv_synchronize_context(pool.contexts[g]);
    for (size_t i = 0; i < pool.npending; i++)
        mgpu_drv.cuEventDestroy(pool.pending[i].done);
    pool.npending = 0;
    for (int g = 0; g < pool.ngpus; g++)
        if (pool.move_streams[g] != NULL && pool.contexts[g] != NULL &&
            mgpu_drv.cuCtxPushCurrent(pool.contexts[g]) == CUDA_SUCCESS) {
            mgpu_drv.cuStreamDestroy(pool.move_streams[g]);
            pool.move_streams[g] = NULL;
            CUcontext popped;
            mgpu_drv.cuCtxPopCurrent(&popped);
        }
    mgpu_allocation_table_each(&pool.table, free_record, NULL);
    mgpu_allocation_table_destroy(&pool.table);
    mgpu_suballoc_destroy(&pool.small);
    mgpu_drv.cuMemAddressFree(pool.space.base, pool.space.bytes);
    mgpu_address_space_destroy(&pool.space);
    atomic_store(&range_base, 0);
    atomic_store(&range_end, 0);
    release_contexts();
    free(pool.slab_granules);
    free(pool.pending);
    pool.slab_granules = NULL;
    pool.pending = NULL;
    pool.active = false;
    atomic_fetch_add(&layout_version, 1);
    snprintf(pool.why_off, sizeof pool.why_off, "released at exit");
    pthread_mutex_unlock(&pool.lock);
}
