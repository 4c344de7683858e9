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
    int ngpus;                         /* the run's GPUs (entries) */
    CUdevice devices[MGPU_MAX_GPUS];   /* the device each stands on */
    CUcontext contexts[MGPU_MAX_GPUS]; /* its primary context, retained once per entry */
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

/* Physical memory of `bytes` on `gpu`, or on the next GPU that has room
 * when it is full; mapped at `va`. *gpu says where it went. */
static CUresult create_and_map(uint64_t va, size_t bytes, int *gpu,
                               CUmemGenericAllocationHandle *handle)
{
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int k = 0; k < pool.ngpus; k++) {
        int g = (*gpu + k) % pool.ngpus;
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

/* One GPU's primary context, retained on a thread of its own. */
struct retain {
    int gpu;
    CUresult result;
};

static void *retain_one(void *arg)
{
    struct retain *r = arg;
    r->result = mgpu_drv.cuDevicePrimaryCtxRetain(&pool.contexts[r->gpu], pool.devices[r->gpu]);
    return NULL;
}

/* Every GPU's primary context. Making one takes the driver about a tenth
 * of a second on an H200; those of the GPUs other than the home one are
 * retained at the same time, each on a thread of its own (issue 46), the
 * home GPU's on this one. A thread that cannot start leaves its GPU to
 * this thread. */
static bool retain_contexts(void)
{
    struct retain work[MGPU_MAX_GPUS];
    pthread_t threads[MGPU_MAX_GPUS];
    bool started[MGPU_MAX_GPUS] = {false};
    for (int g = 0; g < pool.ngpus; g++) {
        work[g] = (struct retain){g, CUDA_ERROR_NOT_INITIALIZED};
        if (g > 0)
            started[g] = pthread_create(&threads[g], NULL, retain_one, &work[g]) == 0;
    }
    for (int g = 0; g < pool.ngpus; g++) {
        if (g > 0 && started[g])
            continue;
        retain_one(&work[g]);
    }
    for (int g = 1; g < pool.ngpus; g++)
        if (started[g])
            pthread_join(threads[g], NULL);
    for (int g = 0; g < pool.ngpus; g++) {
        if (work[g].result == CUDA_SUCCESS)
            continue;
        for (int k = 0; k < pool.ngpus; k++)
            if (work[k].result == CUDA_SUCCESS)
                mgpu_drv.cuDevicePrimaryCtxRelease(pool.devices[k]);
        return stay_off("the primary context of GPU %d: %s", g, mgpu_cu_error_name(work[g].result));
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
        for (int g = 0; g < pool.ngpus; g++)
            mgpu_drv.cuDevicePrimaryCtxRelease(pool.devices[g]);
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
    return mgpu_context_device(ctx, &dev) == CUDA_SUCCESS && dev == pool.devices[0];
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
    size_t i = 0;
    while (i < ngranules) {
        int owner = mgpu_placement_owner(placement, i, ngranules, pool.ngpus, NULL);
        size_t j = i + 1;
        while (j < ngranules && (j - i) * MGPU_GRANULE_SIZE < CHUNK_MAX &&
               mgpu_placement_owner(placement, j, ngranules, pool.ngpus, NULL) == owner)
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
        contexts[g] = pool.contexts[g];
    pthread_mutex_unlock(&pool.lock);
    return n;
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

/* Rebuilds chunk `index` of `a` as up to three chunks: [offset, cut1) stays
 * on its GPU, [cut1, cut2) goes to `gpu`, [cut2, end) stays. The new
 * physical memory is mapped at a scratch address, filled from the old, and
 * then mapped in place of the old. */
static CUresult rebuild_chunk(struct mgpu_allocation *a, size_t index, uint64_t cut1, uint64_t cut2,
                              int gpu)
{
    struct mgpu_chunk old = a->chunks[index];
    struct mgpu_chunk parts[3];
    size_t nparts = 0;
    uint64_t bounds[4] = {old.offset, cut1, cut2, old.offset + old.bytes};
    for (int k = 0; k < 3; k++)
        if (bounds[k + 1] > bounds[k])
            parts[nparts++] = (struct mgpu_chunk){bounds[k], bounds[k + 1] - bounds[k],
                                                  k == 1 ? gpu : old.gpu, 0};
    uint64_t scratch;
    if (mgpu_address_space_take(&pool.space, old.bytes, &scratch) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* With MGPU_VERBOSE=2, where a move's time goes: [0] made and mapped
     * at the scratch address, [1] its access, [2] the copy and its wait,
     * [3] unmapped and mapped in place, [4] the access there. */
    long long t[6];
    t[0] = mgpu_monotonic_ns();
    size_t made = 0;
    CUresult r = CUDA_SUCCESS;
    for (; made < nparts && r == CUDA_SUCCESS; made++) {
        CUmemGenericAllocationHandle h;
        int where = parts[made].gpu;
        r = create_and_map(scratch + parts[made].offset - old.offset, parts[made].bytes, &where,
                           &h);
        if (r != CUDA_SUCCESS)
            break;
        parts[made].gpu = where;
        parts[made].handle = h;
    }
    t[1] = mgpu_monotonic_ns();
    if (r == CUDA_SUCCESS)
        r = grant_access(scratch, old.bytes);
    t[2] = mgpu_monotonic_ns();
    if (r == CUDA_SUCCESS && mgpu_drv.cuCtxPushCurrent(pool.contexts[0]) == CUDA_SUCCESS) {
        r = mgpu_drv.cuMemcpyDtoD(scratch, a->start + old.offset, old.bytes);
        /* A device-to-device copy returns before it is done. */
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuCtxSynchronize();
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
    }
    t[3] = mgpu_monotonic_ns();
    for (size_t k = 0; k < made; k++)
        mgpu_drv.cuMemUnmap(scratch + parts[k].offset - old.offset, parts[k].bytes);
    mgpu_address_space_give(&pool.space, scratch, old.bytes);
    if (r != CUDA_SUCCESS) {
        release_unmapped(parts, made);
        return r;
    }
    struct mgpu_chunk *grown = realloc(a->chunks, (a->nchunks + 2) * sizeof *grown);
    if (grown == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else
        a->chunks = grown;
    if (r != CUDA_SUCCESS) {
        release_unmapped(parts, nparts);
        return r;
    }
    unmap_and_release(a->start + old.offset, old.bytes, old.gpu,
                      (CUmemGenericAllocationHandle)old.handle);
    for (size_t k = 0; k < nparts; k++)
        if (mgpu_drv.cuMemMap(a->start + parts[k].offset, parts[k].bytes, 0,
                              (CUmemGenericAllocationHandle)parts[k].handle, 0) != CUDA_SUCCESS)
            r = CUDA_ERROR_UNKNOWN;
    t[4] = mgpu_monotonic_ns();
    if (r == CUDA_SUCCESS)
        r = grant_access(a->start + old.offset, old.bytes);
    t[5] = mgpu_monotonic_ns();
    mgpu_debug("memory: %.1f MiB of a buffer onto GPU %d in %.2f ms: made and mapped %.2f, access "
               "%.2f, copied %.2f, remapped %.2f, access %.2f",
               (double)(cut2 - cut1) / (1 << 20), gpu, (double)(t[5] - t[0]) / 1e6,
               (double)(t[1] - t[0]) / 1e6, (double)(t[2] - t[1]) / 1e6,
               (double)(t[3] - t[2]) / 1e6, (double)(t[4] - t[3]) / 1e6,
               (double)(t[5] - t[4]) / 1e6);
    memmove(&a->chunks[index + nparts], &a->chunks[index + 1],
            (a->nchunks - index - 1) * sizeof *a->chunks);
    memcpy(&a->chunks[index], parts, nparts * sizeof *parts);
    a->nchunks += nparts - 1;
    atomic_fetch_add(&layout_version, 1);
    return r;
}

/* Under pool.lock: the home context idle, so that no kernel uses what
 * moves (split launches join back into its streams). */
static CUresult wait_for_home(void)
{
    return mgpu_drv_synchronize_context(pool.contexts[0]);
}

/* Under pool.lock, the GPUs idle: the granules of [from, to) (offsets in
 * a, granule-aligned) onto `gpu`. */
static CUresult migrate_range(struct mgpu_allocation *a, uint64_t from, uint64_t to, int gpu)
{
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < a->nchunks; i++) {
        struct mgpu_chunk c = a->chunks[i];
        uint64_t lo = c.offset > from ? c.offset : from;
        uint64_t hi = c.offset + c.bytes < to ? c.offset + c.bytes : to;
        if (lo >= hi || c.gpu == gpu)
            continue;
        size_t before = a->nchunks;
        r = rebuild_chunk(a, i, lo, hi, gpu);
        i += a->nchunks - before; /* skip the parts just made */
    }
    return r;
}

CUresult mgpu_pool_wait_for_home(void)
{
    pthread_mutex_lock(&pool.lock);
    CUresult r = pool.active ? wait_for_home() : CUDA_SUCCESS;
    pthread_mutex_unlock(&pool.lock);
    return r;
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

struct spreading {
    struct mgpu_allocation *a;
    CUresult r;
};

static bool migrate_run(const struct mgpu_owner_run *run, void *ctx)
{
    struct spreading *s = ctx;
    s->r = migrate_range(s->a, run->offset, run->offset + run->bytes, run->gpu);
    return s->r == CUDA_SUCCESS;
}

CUresult mgpu_pool_spread(CUdeviceptr start)
{
    if (!mgpu_pool_holds(start))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool.lock);
    struct spreading s = {mgpu_allocation_table_at(&pool.table, start), CUDA_ERROR_INVALID_VALUE};
    if (s.a != NULL && s.a->shared)
        s.r = CUDA_ERROR_NOT_PERMITTED; /* another process maps its pages */
    else if (s.a != NULL && !s.a->small) {
        s.r = wait_for_home();
        if (s.r == CUDA_SUCCESS)
            each_placed_run(s.a, migrate_run, &s);
        if (s.r == CUDA_SUCCESS)
            pool.migrations++;
    }
    pthread_mutex_unlock(&pool.lock);
    return s.r;
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
        mgpu_drv_synchronize_context(pool.contexts[g]);
    for (size_t i = 0; i < pool.npending; i++)
        mgpu_drv.cuEventDestroy(pool.pending[i].done);
    pool.npending = 0;
    mgpu_allocation_table_each(&pool.table, free_record, NULL);
    mgpu_allocation_table_destroy(&pool.table);
    mgpu_suballoc_destroy(&pool.small);
    mgpu_drv.cuMemAddressFree(pool.space.base, pool.space.bytes);
    mgpu_address_space_destroy(&pool.space);
    atomic_store(&range_base, 0);
    atomic_store(&range_end, 0);
    for (int g = 0; g < pool.ngpus; g++)
        mgpu_drv.cuDevicePrimaryCtxRelease(pool.devices[g]);
    free(pool.slab_granules);
    free(pool.pending);
    pool.slab_granules = NULL;
    pool.pending = NULL;
    pool.active = false;
    atomic_fetch_add(&layout_version, 1);
    snprintf(pool.why_off, sizeof pool.why_off, "released at exit");
    pthread_mutex_unlock(&pool.lock);
}
