/* Owns mgpu's use of NCCL for mirrors (nccl_collectives.h): loading the
 * library, the communicator over the run's distinct devices, its streams
 * and the events that fork them from the program's stream and join them
 * back, the broadcasts of a buffer's parts and the reductions into a
 * buffer. Driver calls go to the
 * real driver; the calling thread's current context is put back after
 * every NCCL call, which may change it. */
#include "mirror/nccl_collectives.h"

#include "base/callback_thread.h"
#include "base/config.h"
#include "base/detached_thread.h"
#include "base/monotonic_clock.h"
#include "base/process_state.h"
#include "base/startup_times.h"

#include "partition/gpu_contexts.h"
#include "partition/gpu_entries.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "memory/memory_pool.h"
#include "mirror/nccl_watch.h"
#include "ptx/ptx_analysis.h"
#include "base/real_driver.h"
#include "mirror/nccl_types.h"
#include "mirror/own_writes.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_RUNS (4 * MGPU_MAX_GPUS)

static struct {
    bool allowed, ready;
    atomic_bool mgpu_loaded; /* written by the thread that makes the communicator */
    void *lib;
    ncclResult_t (*comm_init_all)(ncclComm_t *, int, const int *);
    ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
                           ncclComm_t, cudaStream_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    const char *(*error_string)(ncclResult_t);
    int ranks;
    int device_of_rank[MGPU_MAX_GPUS];
    int rank_of_entry[MGPU_MAX_GPUS];
    int entry_of_rank[MGPU_MAX_GPUS]; /* the first entry on the rank's device */
    bool first_on_device[MGPU_MAX_GPUS];
    ncclComm_t comms[MGPU_MAX_GPUS];
    CUcontext primary[MGPU_MAX_GPUS];
    CUstream streams[MGPU_MAX_GPUS];
    CUevent joins[MGPU_MAX_GPUS];
    CUevent fork; /* in the home context */
    unsigned long collectives;
    unsigned long long bytes;
} nccl;

bool mgpu_nccl_loaded_by_program(void)
{
    if (mgpu_nccl_watched())
        return mgpu_nccl_bound_by_program();
    if (atomic_load(&nccl.mgpu_loaded))
        return false; /* asked before mgpu loaded it; see mgpu_nccl_ready */
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL)
        return false;
    dlclose(lib);
    return true;
}

static bool with_context(CUcontext ctx)
{
    return mgpu_drv.cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
}

static void back(void)
{
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
}

/* Ranks in the order of the distinct devices; each entry's rank. */
static bool map_ranks(char *why, size_t whylen)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (e == NULL) {
        snprintf(why, whylen, "the run's GPUs are not known yet");
        return false;
    }
    nccl.ranks = mgpu_gpu_entries_distinct(e, nccl.device_of_rank);
    for (int g = 0; g < e->count; g++) {
        for (int r = 0; r < nccl.ranks; r++)
            if (nccl.device_of_rank[r] == e->device[g])
                nccl.rank_of_entry[g] = r;
        nccl.first_on_device[g] = true;
        for (int f = 0; f < g; f++)
            if (e->device[f] == e->device[g])
                nccl.first_on_device[g] = false;
        if (nccl.first_on_device[g])
            nccl.entry_of_rank[nccl.rank_of_entry[g]] = g;
    }
    return nccl.ranks > 0;
}

/* How long exit waits for a communicator still being made. */
#define EXIT_WAIT_MS 10000
#define EXIT_WAIT_MS_IN_CALLBACK 500

static pthread_once_t exit_wait_once = PTHREAD_ONCE_INIT;
static pthread_once_t exit_wait_early_once = PTHREAD_ONCE_INIT;

/* An exit handler registered when the communicator's thread starts and
 * again once NCCL and what it uses are loaded (hold_exit_for_nccl), so
 * that it runs before their exit handlers: exit
 * waits there for a communicator still being made. Its making runs on a
 * thread of its own that nothing else waits for under MGPU_MIRROR=auto,
 * and a short program ended inside ncclCommInitAll once NCCL's
 * destructors had run (a segmentation fault after the report in the
 * examples' SPLIT=always runs on 4 x H200). */
static void wait_at_exit(void)
{
    if (atomic_load(&mgpu_forked_child))
        return; /* the thread making it is the parent's */
    mgpu_nccl_wait_made(mgpu_on_callback_thread() ? EXIT_WAIT_MS_IN_CALLBACK : EXIT_WAIT_MS);
}

static void register_exit_wait(void)
{
    atexit(wait_at_exit);
}

static bool load_library(char *why, size_t whylen)
{
    nccl.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    atomic_store(&nccl.mgpu_loaded, true);
    if (nccl.lib == NULL) {
        snprintf(why, whylen, "libnccl.so.2 does not load (%s)", dlerror());
        return false;
    }
    *(void **)&nccl.comm_init_all = dlsym(nccl.lib, "ncclCommInitAll");
    *(void **)&nccl.broadcast = dlsym(nccl.lib, "ncclBroadcast");
    *(void **)&nccl.reduce = dlsym(nccl.lib, "ncclReduce");
    *(void **)&nccl.group_start = dlsym(nccl.lib, "ncclGroupStart");
    *(void **)&nccl.group_end = dlsym(nccl.lib, "ncclGroupEnd");
    *(void **)&nccl.error_string = dlsym(nccl.lib, "ncclGetErrorString");
    if (!nccl.comm_init_all || !nccl.broadcast || !nccl.reduce || !nccl.group_start ||
        !nccl.group_end || !nccl.error_string) {
        snprintf(why, whylen, "libnccl.so.2 lacks the calls mgpu uses");
        return false;
    }
    return true;
}

/* Each rank's primary context, stream and join event; false with why. */
static bool make_streams(CUcontext home, char *why, size_t whylen)
{
    for (int r = 0; r < nccl.ranks; r++) {
        CUdevice dev;
        if (mgpu_drv.cuDeviceGet(&dev, nccl.device_of_rank[r]) != CUDA_SUCCESS ||
            mgpu_drv.cuDevicePrimaryCtxRetain(&nccl.primary[r], dev) != CUDA_SUCCESS) {
            snprintf(why, whylen, "no primary context on device %d", nccl.device_of_rank[r]);
            return false;
        }
        if (r == 0 && nccl.primary[0] != home) {
            snprintf(why, whylen, "the program's context is not device %d's primary context",
                     nccl.device_of_rank[0]);
            return false;
        }
        bool ok = with_context(nccl.primary[r]);
        ok = ok &&
             mgpu_drv.cuStreamCreate(&nccl.streams[r], CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
             mgpu_drv.cuEventCreate(&nccl.joins[r], CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
        back();
        if (!ok) {
            snprintf(why, whylen, "no stream for NCCL on device %d", nccl.device_of_rank[r]);
            return false;
        }
    }
    if (mgpu_drv.cuEventCreate(&nccl.fork, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
        snprintf(why, whylen, "no event for NCCL's fork");
        return false;
    }
    return true;
}

void mgpu_nccl_allow(bool allowed)
{
    nccl.allowed = allowed;
}

/* One broadcast and one reduce of a few bytes on every rank, waited for:
 * the first collectives load NCCL's kernels (lazily, as CUDA loads
 * modules) and set up what they use, which would otherwise fall inside the
 * first launch that mirrors, one the cost models may be timing
 * (tests/programs/atomic_sum's integer kernel under MGPU_MIRROR=auto, 2 x
 * H200: its 5 launches took 27.6 ms with neither this nor the connections
 * made at init, 12.3 ms with the connections only, 3.0 ms with both,
 * against 3.8 ms on one GPU). Called with the home context current;
 * a failure only leaves that cost where it was. */
static void warm_up(void)
{
    CUdeviceptr scratch[MGPU_MAX_GPUS] = {0};
    bool ok = true;
    for (int k = 0; k < nccl.ranks && ok; k++) {
        ok = with_context(nccl.primary[k]);
        if (ok) {
            ok = mgpu_drv.cuMemAlloc(&scratch[k], 64) == CUDA_SUCCESS &&
                 mgpu_drv.cuMemsetD8Async(scratch[k], 0, 64, nccl.streams[k]) == CUDA_SUCCESS;
            back();
        }
    }
    mgpu_own_writes_begin(); /* mgpu's own scratch, not the program's */
    for (int pass = 0; pass < 2 && ok; pass++) {
        ncclResult_t sent = nccl.group_start();
        for (int k = 0; k < nccl.ranks && sent == ncclSuccess; k++) {
            void *p = (void *)(uintptr_t)scratch[k];
            sent = pass == 0
                       ? nccl.broadcast(p, p, 16, ncclInt32, 0, nccl.comms[k], nccl.streams[k])
                       : nccl.reduce(p, p, 16, ncclFloat32, ncclSum, 0, nccl.comms[k],
                                     nccl.streams[k]);
        }
        ok = nccl.group_end() == ncclSuccess && sent == ncclSuccess;
    }
    mgpu_own_writes_end();
    for (int k = 0; k < nccl.ranks; k++) {
        if (scratch[k] == 0 || !with_context(nccl.primary[k]))
            continue;
        ok = mgpu_drv.cuStreamSynchronize(nccl.streams[k]) == CUDA_SUCCESS && ok;
        mgpu_drv.cuMemFree(scratch[k]);
        back();
    }
    if (!ok)
        mgpu_info("mirrors: NCCL's first collectives could not be run ahead; the first "
                  "launch that mirrors pays for them");
}

/* The communicator is made on a thread of its own: ncclCommInitAll and the
 * warm-up allocate and free device memory, and cuMemFree waits for every
 * stream of the device, so made inside a launch it would wait for the
 * program's queued work, which may wait for the launching thread itself (a
 * host function the program releases later: tests/fake-exit.sh). Under
 * MGPU_MIRROR=auto nothing waits for it: it takes 0.6-1 s, which the first
 * mirrored launch or GEMM try paid inside the program (a one-time set-up
 * in the program's stream order, issue 45), and the mirrors use device
 * copies until it is made. Under always the first asker waits for it at
 * most INIT_WAIT_MS, so that the tests see NCCL at work. */
#define INIT_WAIT_MS 5000

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t init_finished = PTHREAD_COND_INITIALIZER;
static atomic_int init_state; /* 0: not begun; 1: being made; 2: made or failed (nccl.ready) */

/* Whether the communicator is made (its fields then read-only). */
static bool made(void)
{
    return atomic_load_explicit(&init_state, memory_order_acquire) == 2 && nccl.ready;
}

/* Exit handlers run last registered first, so the exit wait must be
 * registered after everything whose handlers would tear down what
 * ncclCommInitAll uses: NCCL itself (its static destructors, registered as
 * it loads), the libraries it loads while making the communicator (NVML
 * for the topology, verbs unless NCCL_IB_DISABLE=1; loaded here first,
 * kept loaded, absent ones skipped; a net plugin is not foreseen) and the
 * CUDA runtime linked into
 * NCCL, whose state and exit handler are made at its first call (made here
 * by a small ncclMemAlloc, where NCCL has it). Without this an exit while
 * the communicator was being made ran those handlers under NCCL's feet.
 * Called on the communicator's thread, the home context current. */
static void hold_exit_for_nccl(void)
{
    (void)dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    const char *ib_disable = getenv("NCCL_IB_DISABLE");
    if (ib_disable == NULL || strcmp(ib_disable, "1") != 0)
        (void)dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    ncclResult_t (*mem_alloc)(void **, size_t);
    ncclResult_t (*mem_free)(void *);
    *(void **)&mem_alloc = dlsym(nccl.lib, "ncclMemAlloc");
    *(void **)&mem_free = dlsym(nccl.lib, "ncclMemFree");
    void *p = NULL;
    if (mem_alloc != NULL && mem_free != NULL) {
        mgpu_own_writes_begin();
        if (mem_alloc(&p, 1) == ncclSuccess)
            mem_free(p);
        mgpu_own_writes_end();
    }
    pthread_once(&exit_wait_once, register_exit_wait);
}

static void init_now(CUcontext home)
{
    long long begin = mgpu_monotonic_ns();
    char why[200] = "";
    bool ok = map_ranks(why, sizeof why) && !mgpu_nccl_loaded_by_program() &&
              load_library(why, sizeof why) && make_streams(home, why, sizeof why);
    if (ok) {
        CUcontext current = NULL;
        mgpu_drv.cuCtxGetCurrent(&current);
        /* Connections made now, not in the first collectives (NCCL 2.22
         * on makes them there, unless told otherwise), where a launch
         * timed by the cost models would pay for them (warm_up). The
         * program's own setting stands. */
        setenv("NCCL_RUNTIME_CONNECT", "0", 0);
        hold_exit_for_nccl();
        mgpu_drv.cuCtxSetCurrent(current);
        mgpu_own_writes_begin();
        ncclResult_t made = nccl.comm_init_all(nccl.comms, nccl.ranks, nccl.device_of_rank);
        mgpu_own_writes_end();
        mgpu_drv.cuCtxSetCurrent(current);
        if (made != ncclSuccess) {
            snprintf(why, sizeof why, "ncclCommInitAll: %s", nccl.error_string(made));
            ok = false;
        }
    }
    nccl.ready = ok;
    if (ok) {
        CUcontext current = NULL;
        mgpu_drv.cuCtxGetCurrent(&current);
        warm_up();
        mgpu_drv.cuCtxSetCurrent(current);
        mgpu_info("mirrors: collectives through NCCL, one communicator over %d device%s",
                  nccl.ranks, nccl.ranks == 1 ? "" : "s");
        mgpu_startup_add(MGPU_STARTUP_NCCL, mgpu_monotonic_ns() - begin);
    } else {
        mgpu_info("mirrors: device copies and mgpu's own kernels, not NCCL: %s",
                  why[0] ? why : "the program has NCCL loaded");
    }
}

static void *init_thread(void *arg)
{
    CUcontext home = arg;
    /* The program may capture a graph in global mode meanwhile: this
     * thread's allocations must not end its capture. */
    mgpu_drv_relax_capture_mode();
    bool current = with_context(home); /* for the fork event, made in it */
    init_now(home);
    if (current)
        back();
    pthread_mutex_lock(&init_lock);
    atomic_store_explicit(&init_state, 2, memory_order_release);
    pthread_cond_broadcast(&init_finished);
    pthread_mutex_unlock(&init_lock);
    return NULL;
}

/* Under init_lock: waits at most `ms` while the communicator's thread is
 * making it; whether that is over. */
static bool wait_made_locked(unsigned ms)
{
    struct timespec deadline = mgpu_deadline_in_ms(ms);
    int rc = 0;
    while (atomic_load_explicit(&init_state, memory_order_acquire) == 1 && rc == 0)
        rc = pthread_cond_timedwait(&init_finished, &init_lock, &deadline);
    return atomic_load_explicit(&init_state, memory_order_acquire) == 2;
}

bool mgpu_nccl_ready(CUcontext home)
{
    if (!nccl.allowed)
        return false;
    int state = atomic_load_explicit(&init_state, memory_order_acquire);
    if (state == 2)
        return nccl.ready;
    if (state == 1)
        return false; /* still being made: device copies meanwhile */
    pthread_mutex_lock(&init_lock);
    if (atomic_load_explicit(&init_state, memory_order_relaxed) == 0) {
        atomic_store_explicit(&init_state, 1, memory_order_relaxed);
        /* Registered again once NCCL is loaded (hold_exit_for_nccl), to
         * run before its exit handlers; this one covers an exit that comes
         * before the thread has loaded it. */
        pthread_once(&exit_wait_early_once, register_exit_wait);
        if (!mgpu_thread_start_detached(init_thread, home)) {
            init_now(home);
            atomic_store_explicit(&init_state, 2, memory_order_release);
        }
        if (mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS && !wait_made_locked(INIT_WAIT_MS))
            mgpu_info("mirrors: NCCL's communicator not made within %d s (slow, or held by the "
                      "program's queued work): device copies until it is",
                      INIT_WAIT_MS / 1000);
    }
    pthread_mutex_unlock(&init_lock);
    return made();
}

void mgpu_nccl_wait_made(unsigned wait_ms)
{
    pthread_mutex_lock(&init_lock);
    wait_made_locked(wait_ms);
    pthread_mutex_unlock(&init_lock);
}

int mgpu_nccl_rank_of(int gpu, bool *first_on_device)
{
    bool known = made() && gpu >= 0 && gpu < MGPU_MAX_GPUS;
    *first_on_device = known && nccl.first_on_device[gpu];
    return known ? nccl.rank_of_entry[gpu] : 0;
}

int mgpu_nccl_ranks(void)
{
    return made() ? nccl.ranks : 0;
}

/* Every rank's stream after the work `stream` holds now; with a trace,
 * each rank's part timed as `label` on its first entry's track. */
static CUresult fork_from(CUstream stream, const char *label,
                          struct mgpu_launch_timer timers[MGPU_MAX_GPUS])
{
    CUresult r = mgpu_drv.cuEventRecord(nccl.fork, stream);
    for (int k = 0; k < nccl.ranks && r == CUDA_SUCCESS; k++)
        r = mgpu_drv.cuStreamWaitEvent(nccl.streams[k], nccl.fork, 0);
    for (int k = 0; k < nccl.ranks; k++) {
        timers[k].active = false;
        if (r == CUDA_SUCCESS && mgpu_timing_traced() && with_context(nccl.primary[k])) {
            mgpu_timing_begin_own(&timers[k], label, nccl.streams[k], nccl.entry_of_rank[k]);
            back();
        }
    }
    return r;
}

/* `stream` after every rank's stream, whatever happened before, so that
 * nothing they hold is left behind the program's back; r is the answer
 * so far. */
static CUresult join_into(CUstream stream, CUresult r, struct mgpu_launch_timer *timers)
{
    for (int k = 0; k < nccl.ranks; k++) {
        bool pushed = with_context(nccl.primary[k]);
        if (timers[k].active)
            mgpu_timing_end(&timers[k], nccl.streams[k], CUDA_SUCCESS);
        CUresult joined = mgpu_drv.cuEventRecord(nccl.joins[k], nccl.streams[k]);
        if (pushed)
            back();
        if (joined == CUDA_SUCCESS)
            joined = mgpu_drv.cuStreamWaitEvent(stream, nccl.joins[k], 0);
        if (r == CUDA_SUCCESS)
            r = joined;
    }
    return r;
}

CUresult mgpu_nccl_broadcast(CUdeviceptr start, size_t bytes, const CUdeviceptr *copy_of_rank,
                             CUstream stream)
{
    if (!made())
        return CUDA_ERROR_NOT_SUPPORTED;
    struct mgpu_owner_run runs[MAX_RUNS];
    size_t nruns = mgpu_pool_runs(start, bytes, runs, MAX_RUNS);
    if (nruns == 0 || nruns > MAX_RUNS)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct mgpu_launch_timer timers[MGPU_MAX_GPUS];
    CUresult r = fork_from(stream, "mirror: ncclBroadcast", timers);
    if (r != CUDA_SUCCESS)
        return r;
    CUcontext current = NULL;
    mgpu_drv.cuCtxGetCurrent(&current);
    mgpu_own_writes_begin(); /* NCCL's own launches and copies fill the copies */
    ncclResult_t sent = nccl.group_start();
    for (size_t i = 0; i < nruns && sent == ncclSuccess; i++) {
        int root = nccl.rank_of_entry[runs[i].gpu];
        for (int k = 0; k < nccl.ranks && sent == ncclSuccess; k++)
            sent = nccl.broadcast((const void *)(uintptr_t)(start + runs[i].offset),
                                  (void *)(uintptr_t)(copy_of_rank[k] + runs[i].offset),
                                  runs[i].bytes, ncclUint8, root, nccl.comms[k], nccl.streams[k]);
    }
    ncclResult_t ended = nccl.group_end();
    mgpu_own_writes_end();
    mgpu_drv.cuCtxSetCurrent(current);
    r = join_into(stream, r, timers);
    if (sent != ncclSuccess || ended != ncclSuccess) {
        mgpu_warn("mirrors: NCCL broadcast failed (%s); refreshing by device copies",
                  nccl.error_string(sent != ncclSuccess ? sent : ended));
        return CUDA_ERROR_UNKNOWN;
    }
    if (r == CUDA_SUCCESS) {
        nccl.collectives += nruns;
        nccl.bytes += (unsigned long long)bytes * (unsigned long long)nccl.ranks;
    }
    return r;
}

/* NCCL's names for a reduction code; false for none. */
static bool nccl_reduction(unsigned code, ncclDataType_t *type, ncclRedOp_t *op)
{
    switch (MGPU_REDUCTION_TYPE(code)) {
    case MGPU_REDUCE_U32:
        *type = ncclUint32;
        break;
    case MGPU_REDUCE_S32:
        *type = ncclInt32;
        break;
    case MGPU_REDUCE_U64:
        *type = ncclUint64;
        break;
    case MGPU_REDUCE_S64:
        *type = ncclInt64;
        break;
    case MGPU_REDUCE_F32:
        *type = ncclFloat32;
        break;
    case MGPU_REDUCE_F64:
        *type = ncclFloat64;
        break;
    default:
        return false;
    }
    switch (MGPU_REDUCTION_OP(code)) {
    case MGPU_REDUCE_ADD:
        *op = ncclSum;
        return true;
    case MGPU_REDUCE_MIN:
        *op = ncclMin;
        return true;
    case MGPU_REDUCE_MAX:
        *op = ncclMax;
        return true;
    }
    return false;
}

CUresult mgpu_nccl_reduce(CUdeviceptr buffer, const CUdeviceptr *send_of_rank, size_t count,
                          unsigned code, CUstream stream)
{
    ncclDataType_t type;
    ncclRedOp_t op;
    if (!made() || !nccl_reduction(code, &type, &op))
        return CUDA_ERROR_NOT_SUPPORTED;
    struct mgpu_launch_timer timers[MGPU_MAX_GPUS];
    CUresult r = fork_from(stream, "mirror: ncclReduce", timers);
    if (r != CUDA_SUCCESS)
        return r;
    CUcontext current = NULL;
    mgpu_drv.cuCtxGetCurrent(&current);
    mgpu_own_writes_begin(); /* the buffer's new contents are told by the launch */
    ncclResult_t sent = nccl.group_start();
    for (int k = 0; k < nccl.ranks && sent == ncclSuccess; k++) {
        const void *send = (const void *)(uintptr_t)(k == 0 ? buffer : send_of_rank[k]);
        void *receive = (void *)(uintptr_t)(k == 0 ? buffer : send_of_rank[k]);
        sent = nccl.reduce(send, receive, count, type, op, 0, nccl.comms[k], nccl.streams[k]);
    }
    ncclResult_t ended = nccl.group_end();
    mgpu_own_writes_end();
    mgpu_drv.cuCtxSetCurrent(current);
    r = join_into(stream, r, timers);
    if (sent != ncclSuccess || ended != ncclSuccess) {
        mgpu_warn("mirrors: NCCL reduce failed (%s); the launch reports the error",
                  nccl.error_string(sent != ncclSuccess ? sent : ended));
        return CUDA_ERROR_UNKNOWN;
    }
    if (r == CUDA_SUCCESS) {
        nccl.collectives++;
        nccl.bytes += (unsigned long long)count * mgpu_reduction_element_size(code) *
                      (unsigned long long)nccl.ranks;
    }
    return r;
}

void mgpu_nccl_stats(struct mgpu_nccl_stats *out)
{
    out->ranks = made() ? nccl.ranks : 0;
    out->collectives = nccl.collectives;
    out->bytes = nccl.bytes;
}
