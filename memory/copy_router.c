/* Owns splitting copies and sets by owner (see copy_router.h): the plan of
 * runs per GPU, one internal stream and one join event per GPU, a fork
 * event per program context, and the use of the per-GPU workers for
 * pageable host memory: copies from it go through each GPU's own pinned
 * buffers (host_staging.h), copies to it through the driver's staging, in
 * each GPU's worker thread. */
#include "memory/copy_router.h"

#include "partition/gpu_workers.h"
#include "memory/host_staging.h"
#include "memory/memory_pool.h"
#include "base/real_driver.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* Below this a copy is not worth the fork and join (tens of microseconds). */
#define SPLIT_MIN ((size_t)8 << 20)
#define RUNS_MAX 4096
#define FORK_CONTEXTS_MAX 8

enum direction { TO_DEVICE, TO_HOST, ON_DEVICE, SET };

struct plan {
    enum direction direction;
    uint64_t dst, src; /* addresses, host or device as the direction says */
    unsigned value, element_size;
    bool pageable; /* the host side is not pinned: blocking calls on workers */
    struct mgpu_owner_run runs[RUNS_MAX];
    size_t nruns;
    bool used[MGPU_MAX_GPUS];
    CUresult results[MGPU_MAX_GPUS];
};

static pthread_mutex_t router_lock = PTHREAD_MUTEX_INITIALIZER;
static bool resources_tried, resources_ready;
static int gpu_count;
static CUcontext gpu_contexts[MGPU_MAX_GPUS];
static CUstream gpu_streams[MGPU_MAX_GPUS];
static CUevent join_events[MGPU_MAX_GPUS];
static struct {
    CUcontext context;
    CUevent event;
} forks[FORK_CONTEXTS_MAX];
static struct plan shared_plan; /* large; used under router_lock only */
static atomic_ulong splits;

unsigned long mgpu_copy_router_splits(void)
{
    return atomic_load(&splits);
}

static bool make_resources(void)
{
    gpu_count = mgpu_pool_gpus(gpu_contexts);
    if (gpu_count < 2 || mgpu_drv.cuStreamCreate == NULL || mgpu_drv.cuStreamWaitEvent == NULL ||
        mgpu_drv.cuMemcpyHtoDAsync == NULL || mgpu_drv.cuMemcpyDtoHAsync == NULL ||
        mgpu_drv.cuMemsetD8Async == NULL || mgpu_drv.cuPointerGetAttribute == NULL ||
        mgpu_drv.cuStreamSynchronize == NULL || mgpu_drv.cuCtxSetCurrent == NULL)
        return false;
    for (int g = 0; g < gpu_count; g++) {
        if (mgpu_drv.cuCtxPushCurrent(gpu_contexts[g]) != CUDA_SUCCESS)
            return false;
        CUresult r = mgpu_drv.cuStreamCreate(&gpu_streams[g], CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuEventCreate(&join_events[g], CU_EVENT_DISABLE_TIMING);
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
        if (r != CUDA_SUCCESS)
            return false;
    }
    return mgpu_gpu_workers_start(gpu_count, gpu_contexts) == 0;
}

/* Destroys what was made in ctx: `stream` and `event`, either may be NULL. */
static void destroy_in(CUcontext ctx, CUstream stream, CUevent event)
{
    if (ctx == NULL || mgpu_drv.cuCtxPushCurrent(ctx) != CUDA_SUCCESS)
        return;
    if (stream != NULL)
        mgpu_drv.cuStreamDestroy(stream);
    if (event != NULL)
        mgpu_drv.cuEventDestroy(event);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
}

void mgpu_copy_router_release(void)
{
    pthread_mutex_lock(&router_lock);
    if (resources_ready && mgpu_drv.cuStreamDestroy != NULL && mgpu_drv.cuEventDestroy != NULL) {
        for (int g = 0; g < gpu_count; g++) {
            destroy_in(gpu_contexts[g], gpu_streams[g], join_events[g]);
            gpu_streams[g] = NULL;
            join_events[g] = NULL;
        }
        for (int i = 0; i < FORK_CONTEXTS_MAX; i++) {
            destroy_in(forks[i].context, NULL, forks[i].event);
            forks[i].context = NULL;
            forks[i].event = NULL;
        }
    }
    resources_tried = true;
    resources_ready = false;
    pthread_mutex_unlock(&router_lock);
}

/* The fork event of the context `stream` belongs to, made on first use. */
static CUevent fork_event(CUstream stream)
{
    CUcontext ctx = NULL;
    if (mgpu_drv.cuStreamGetCtx(stream, &ctx) != CUDA_SUCCESS || ctx == NULL)
        return NULL;
    for (int i = 0; i < FORK_CONTEXTS_MAX; i++) {
        if (forks[i].context == ctx)
            return forks[i].event;
        if (forks[i].context != NULL)
            continue;
        CUevent e = NULL;
        if (mgpu_drv.cuCtxPushCurrent(ctx) != CUDA_SUCCESS)
            return NULL;
        CUresult r = mgpu_drv.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
        if (r != CUDA_SUCCESS)
            return NULL;
        forks[i].context = ctx;
        forks[i].event = e;
        return e;
    }
    return NULL;
}

static bool capturing(CUstream stream)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    return mgpu_drv.cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS ||
           status != CU_STREAM_CAPTURE_STATUS_NONE;
}

static bool host_pinned(uint64_t address)
{
    unsigned type = 0;
    return mgpu_drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          (CUdeviceptr)address) == CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_HOST;
}

static CUresult run_one(const struct plan *p, const struct mgpu_owner_run *run)
{
    CUstream s = gpu_streams[run->gpu];
    switch (p->direction) {
    case TO_DEVICE: {
        const void *from = (const void *)(uintptr_t)(p->src + run->offset);
        if (p->pageable) {
            CUresult r = mgpu_staged_to_device(run->gpu, p->dst + run->offset, from, run->bytes, s);
            if (r != CUDA_ERROR_NOT_SUPPORTED)
                return r;
        }
        return mgpu_drv.cuMemcpyHtoDAsync(p->dst + run->offset, from, run->bytes, s);
    }
    case TO_HOST:
        return mgpu_drv.cuMemcpyDtoHAsync((void *)(uintptr_t)(p->dst + run->offset),
                                          p->src + run->offset, run->bytes, s);
    case ON_DEVICE:
        return mgpu_drv.cuMemcpyDtoDAsync(p->dst + run->offset, p->src + run->offset, run->bytes,
                                          s);
    case SET:
        if (p->element_size == 1)
            return mgpu_drv.cuMemsetD8Async(p->dst + run->offset, (unsigned char)p->value,
                                            run->bytes, s);
        if (p->element_size == 2)
            return mgpu_drv.cuMemsetD16Async(p->dst + run->offset, (unsigned short)p->value,
                                             run->bytes / 2, s);
        return mgpu_drv.cuMemsetD32Async(p->dst + run->offset, p->value, run->bytes / 4, s);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* One GPU's share of the plan, on its own stream, then its join event. */
static void run_gpu(int gpu, void *arg)
{
    struct plan *p = arg;
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < p->nruns && r == CUDA_SUCCESS; i++)
        if (p->runs[i].gpu == gpu)
            r = run_one(p, &p->runs[i]);
    CUresult recorded = mgpu_drv.cuEventRecord(join_events[gpu], gpu_streams[gpu]);
    p->results[gpu] = r != CUDA_SUCCESS ? r : recorded;
}

static void run_gpu_pushed(int gpu, void *arg)
{
    if (mgpu_drv.cuCtxPushCurrent(gpu_contexts[gpu]) != CUDA_SUCCESS) {
        ((struct plan *)arg)->results[gpu] = CUDA_ERROR_INVALID_CONTEXT;
        return;
    }
    run_gpu(gpu, arg);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
}

/* Fork from the program's stream, every GPU's share, join back. */
static CUresult execute(struct plan *p, struct mgpu_copy_call call, CUevent fork)
{
    CUresult r = mgpu_drv.cuEventRecord(fork, call.stream);
    if (r != CUDA_SUCCESS)
        return r;
    for (int g = 0; g < gpu_count && r == CUDA_SUCCESS; g++)
        if (p->used[g])
            r = mgpu_drv.cuStreamWaitEvent(gpu_streams[g], fork, 0);
    if (r != CUDA_SUCCESS)
        return r;
    if (p->pageable) {
        mgpu_gpu_workers_run(p->used, run_gpu, p);
    } else {
        for (int g = 0; g < gpu_count; g++)
            if (p->used[g])
                run_gpu_pushed(g, p);
    }
    CUresult first_error = CUDA_SUCCESS;
    for (int g = 0; g < gpu_count; g++) {
        if (!p->used[g])
            continue;
        if (p->results[g] != CUDA_SUCCESS && first_error == CUDA_SUCCESS)
            first_error = p->results[g];
        /* Join even after an error, so the program's stream never runs ahead
         * of work already queued on a GPU. */
        CUresult w = mgpu_drv.cuStreamWaitEvent(call.stream, join_events[g], 0);
        if (w != CUDA_SUCCESS && first_error == CUDA_SUCCESS)
            first_error = w;
    }
    return first_error;
}

/* Plans the split of a `bytes`-long operation whose device side at
 * `device` (in the pool, at least SPLIT_MIN long) decides the owners;
 * false when it has one owner or too many runs. */
static bool plan_runs(struct plan *p, CUdeviceptr device, size_t bytes)
{
    p->nruns = mgpu_pool_runs(device, bytes, p->runs, RUNS_MAX);
    if (p->nruns < 2 || p->nruns > RUNS_MAX)
        return false;
    memset(p->used, 0, sizeof p->used);
    int owners = 0;
    for (size_t i = 0; i < p->nruns; i++) {
        if (p->runs[i].gpu < 0 || p->runs[i].gpu >= gpu_count)
            return false;
        if (!p->used[p->runs[i].gpu])
            owners++;
        p->used[p->runs[i].gpu] = true;
    }
    return owners > 1;
}

/* Whether the pool's memory at [device, device + bytes) has more than one
 * owner, asked before the router's resources are made. */
static bool several_owners(CUdeviceptr device, size_t bytes)
{
    struct mgpu_owner_run runs[2];
    size_t n = mgpu_pool_runs(device, bytes, runs, 2);
    return n > 2 || (n == 2 && runs[1].gpu != runs[0].gpu);
}

/* Locks, checks and plans; on true the caller runs `execute` and unlocks. */
static bool begin(CUdeviceptr device, size_t bytes, struct mgpu_copy_call call, CUevent *fork)
{
    if (bytes < SPLIT_MIN || !mgpu_pool_holds(device))
        return false;
    pthread_mutex_lock(&router_lock);
    /* The other GPUs' contexts, streams and workers only for a copy that
     * has several owners: a program whose buffers stay home never makes
     * them. */
    if (!resources_tried && !several_owners(device, bytes)) {
        pthread_mutex_unlock(&router_lock);
        return false;
    }
    if (!resources_tried) {
        resources_tried = true;
        resources_ready = make_resources();
    }
    if (resources_ready && !capturing(call.stream) && plan_runs(&shared_plan, device, bytes) &&
        (*fork = fork_event(call.stream)) != NULL)
        return true;
    pthread_mutex_unlock(&router_lock);
    return false;
}

static bool finish(struct plan *p, struct mgpu_copy_call call, CUevent fork, CUresult *result)
{
    CUresult r = execute(p, call, fork);
    pthread_mutex_unlock(&router_lock);
    if (r == CUDA_SUCCESS && call.synchronous)
        r = mgpu_drv.cuStreamSynchronize(call.stream);
    atomic_fetch_add(&splits, 1);
    *result = r;
    return true;
}

bool mgpu_copy_to_device(CUdeviceptr dst, const void *src, size_t bytes, struct mgpu_copy_call call,
                         CUresult *result)
{
    CUevent fork;
    if (src == NULL || !begin(dst, bytes, call, &fork))
        return false;
    struct plan *p = &shared_plan;
    p->direction = TO_DEVICE;
    p->dst = dst;
    p->src = (uint64_t)(uintptr_t)src;
    p->pageable = !host_pinned(p->src);
    return finish(p, call, fork, result);
}

bool mgpu_copy_to_host(void *dst, CUdeviceptr src, size_t bytes, struct mgpu_copy_call call,
                       CUresult *result)
{
    CUevent fork;
    if (dst == NULL || !begin(src, bytes, call, &fork))
        return false;
    struct plan *p = &shared_plan;
    p->direction = TO_HOST;
    p->dst = (uint64_t)(uintptr_t)dst;
    p->src = src;
    p->pageable = !host_pinned(p->dst);
    return finish(p, call, fork, result);
}

bool mgpu_copy_on_device(CUdeviceptr dst, CUdeviceptr src, size_t bytes, struct mgpu_copy_call call,
                         CUresult *result)
{
    /* Each GPU writes its own part; the source may be anywhere. */
    CUevent fork;
    if (src == 0 || !begin(dst, bytes, call, &fork))
        return false;
    struct plan *p = &shared_plan;
    p->direction = ON_DEVICE;
    p->dst = dst;
    p->src = src;
    p->pageable = false;
    return finish(p, call, fork, result);
}

/* What kind of memory `address` is: device, pinned host, or -1 for
 * pageable host memory (the driver does not know it). */
static int memory_kind(CUdeviceptr address)
{
    if (mgpu_pool_holds(address))
        return CU_MEMORYTYPE_DEVICE;
    unsigned type = 0;
    if (mgpu_drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address) !=
        CUDA_SUCCESS)
        return -1;
    return (int)type;
}

bool mgpu_copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t bytes, struct mgpu_copy_call call,
                       CUresult *result)
{
    if (bytes < SPLIT_MIN || (!mgpu_pool_holds(dst) && !mgpu_pool_holds(src)))
        return false;
    int dst_kind = memory_kind(dst), src_kind = memory_kind(src);
    bool dst_host = dst_kind == -1 || dst_kind == CU_MEMORYTYPE_HOST;
    bool src_host = src_kind == -1 || src_kind == CU_MEMORYTYPE_HOST;
    if (mgpu_pool_holds(dst) && src_host)
        return mgpu_copy_to_device(dst, (const void *)(uintptr_t)src, bytes, call, result);
    if (mgpu_pool_holds(src) && dst_host)
        return mgpu_copy_to_host((void *)(uintptr_t)dst, src, bytes, call, result);
    if (mgpu_pool_holds(dst) && src_kind == CU_MEMORYTYPE_DEVICE)
        return mgpu_copy_on_device(dst, src, bytes, call, result);
    return false; /* device to device into memory outside the pool: one GPU writes it all */
}

bool mgpu_set_device(CUdeviceptr dst, unsigned value, unsigned element_size, size_t count,
                     struct mgpu_copy_call call, CUresult *result)
{
    if (dst % element_size != 0 || count > SIZE_MAX / element_size)
        return false; /* the driver has its own answer for these */
    CUevent fork;
    if (!begin(dst, count * element_size, call, &fork))
        return false;
    struct plan *p = &shared_plan;
    /* Runs break at granule edges, so each holds whole elements. */
    p->direction = SET;
    p->dst = dst;
    p->value = value;
    p->element_size = element_size;
    p->pageable = false;
    return finish(p, call, fork, result);
}
