/* Owns the other GPUs' primary contexts that rewritten modules are loaded in
 * (see gpu_contexts.h). All calls go to the real driver. */
#include "partition/gpu_contexts.h"

#include "base/detached_thread.h"
#include "base/monotonic_clock.h"
#include "base/startup_times.h"

#include "base/log.h"
#include "base/real_driver.h"
#include "base/config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

static pthread_mutex_t entries_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_gpu_entries entries;
static atomic_bool entries_ready;

const struct mgpu_gpu_entries *mgpu_run_gpus(void)
{
    if (atomic_load_explicit(&entries_ready, memory_order_acquire))
        return &entries;
    int devices = 0;
    if (mgpu_drv.cuDeviceGetCount == NULL || mgpu_drv.cuDeviceGetCount(&devices) != CUDA_SUCCESS)
        return NULL; /* not initialised yet: ask again later */
    pthread_mutex_lock(&entries_lock);
    if (!atomic_load_explicit(&entries_ready, memory_order_relaxed)) {
        char err[256];
        int rc = mgpu_gpu_entries_make(mgpu_cfg.entries, mgpu_cfg.entries_len, devices, &entries,
                                       err, sizeof err);
        if (rc == 0 && entries.device[0] != 0) {
            snprintf(err, sizeof err, "the first GPU must stand on device 0, the home device");
            rc = -1;
        }
        if (rc != 0) {
            char fix[MGPU_PATH_MAX + 128] = "run the program with mgpu-run";
            if (mgpu_cfg.nvml_kept[0])
                snprintf(fix, sizeof fix,
                         "mgpu-run counted the GPUs from NVML's answers kept in %s: delete that "
                         "file if the machine's GPUs changed",
                         mgpu_cfg.nvml_kept);
            mgpu_warn("MGPU_ENTRIES does not match the driver's devices (%s); each of the %d "
                      "devices is one GPU of the run (%s)",
                      err, devices, fix);
            mgpu_gpu_entries_make(NULL, 0, devices, &entries, err, sizeof err);
        }
        atomic_store_explicit(&entries_ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&entries_lock);
    return &entries;
}

static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[MGPU_MAX_GPUS]; /* index: device ordinal; [0] unused */
static int gpu_count;                    /* entries; 0 until the first call succeeds */
static const struct mgpu_gpu_entries *run_gpus;
/* Home contexts whose peer access to and from the other GPUs is on. */
static CUcontext peered_homes[8];
static int peered_home_count;
static bool others_peered;

/* Set at exit: retain_others stops before its next device. */
static atomic_bool stopping;
/* On the warming thread: its time is off the program's path, and not
 * added to the start-up figures (gpu_contexts.h). */
static _Thread_local bool warming_here;

/* The primary context of every device other than device 0 that an entry
 * stands on. */
static int retain_others(char *err, size_t errlen)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (e == NULL) {
        snprintf(err, errlen, "the driver is not initialised");
        return -1;
    }
    for (int g = 0; g < e->count; g++) {
        int d = e->device[g];
        if (d == 0 || primary[d] != NULL)
            continue;
        if (atomic_load(&stopping)) {
            snprintf(err, errlen, "the program is exiting");
            return -1; /* the contexts made so far stay, as at success */
        }
        CUdevice dev;
        CUresult r = mgpu_drv.cuDeviceGet(&dev, d);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuDevicePrimaryCtxRetain(&primary[d], dev);
        if (r != CUDA_SUCCESS) {
            snprintf(err, errlen, "the primary context of device %d: %s", d, mgpu_cu_error_name(r));
            for (int k = 1; k < MGPU_MAX_GPUS; k++) {
                CUdevice other;
                if (primary[k] != NULL && mgpu_drv.cuDeviceGet(&other, k) == CUDA_SUCCESS)
                    mgpu_drv.cuDevicePrimaryCtxRelease(other);
                primary[k] = NULL;
            }
            return -1;
        }
    }
    run_gpus = e;
    gpu_count = e->count;
    return 0;
}

/* The warming thread (gpu_contexts.h): started once, finished when
 * `warming` is false again; exit waits on `warmed`. */
static pthread_mutex_t warm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t warmed = PTHREAD_COND_INITIALIZER;
static bool warm_started, warming;
static atomic_bool warm_done;

/* The warming thread first waits this long (gpu_contexts.h): a program
 * that ends by then never pays for the other GPUs. */
#define WARM_AFTER_MS 100

static void *warm_thread(void *arg)
{
    CUcontext contexts[MGPU_MAX_GPUS];
    int n = 0;
    char why[200];
    warming_here = true;
    /* The program may be capturing a graph in global mode meanwhile: this
     * thread's calls must not end its capture (as the GPU workers'). */
    mgpu_drv_relax_capture_mode();
    struct timespec after = mgpu_deadline_in_ms(WARM_AFTER_MS);
    pthread_mutex_lock(&warm_lock);
    int waited = 0;
    while (!atomic_load(&stopping) && waited == 0)
        waited = pthread_cond_timedwait(&warmed, &warm_lock, &after);
    pthread_mutex_unlock(&warm_lock);
    long long begin = mgpu_monotonic_ns();
    if (atomic_load(&stopping))
        snprintf(why, sizeof why, "the program ended first");
    else if (mgpu_gpu_contexts(arg, contexts, &n, why, sizeof why) == 0)
        mgpu_info("the other GPUs' contexts and peer access made ahead of their first launch in "
                  "%.2f s",
                  (double)(mgpu_monotonic_ns() - begin) * 1e-9);
    else
        mgpu_debug("the other GPUs' contexts not made ahead: %s", why);
    pthread_mutex_lock(&warm_lock);
    warming = false;
    atomic_store(&warm_done, true);
    pthread_cond_broadcast(&warmed);
    pthread_mutex_unlock(&warm_lock);
    return NULL;
}

void mgpu_gpu_contexts_warm(CUcontext home)
{
    if (mgpu_cfg.split == MGPU_SPLIT_NEVER)
        return; /* no launch leaves the home GPU: they are made when first needed, if ever */
    pthread_mutex_lock(&warm_lock);
    if (!warm_started && !atomic_load(&stopping)) {
        warm_started = warming = true;
        if (!mgpu_thread_start_detached(warm_thread, home)) {
            warming = false; /* made by the first launch off the home GPU instead */
            atomic_store(&warm_done, true);
        }
    }
    pthread_mutex_unlock(&warm_lock);
}

bool mgpu_gpu_contexts_warmed(void)
{
    return atomic_load(&warm_done);
}

void mgpu_gpu_contexts_stop_warming(unsigned wait_ms)
{
    atomic_store(&stopping, true);
    struct timespec deadline = mgpu_deadline_in_ms(wait_ms);
    pthread_mutex_lock(&warm_lock);
    pthread_cond_broadcast(&warmed); /* a thread still waiting to begin */
    int rc = 0;
    while (warming && rc == 0)
        rc = pthread_cond_timedwait(&warmed, &warm_lock, &deadline);
    pthread_mutex_unlock(&warm_lock);
}

CUresult mgpu_context_device(CUcontext ctx, CUdevice *dev)
{
    if (mgpu_drv.cuCtxPushCurrent == NULL || mgpu_drv.cuCtxPopCurrent == NULL ||
        mgpu_drv.cuCtxGetDevice == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = mgpu_drv.cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = mgpu_drv.cuCtxGetDevice(dev);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return r;
}

/* Peer access between two contexts: the pairs mgpu enabled for its split
 * launches, and the pairs the program enabled itself, each as the driver
 * alone would have answered it (mgpu_program_enable_peer). Under
 * contexts_lock. */
struct peer_pair {
    CUcontext from, to;
};
#define MAX_PEER_PAIRS 512
struct peer_pairs {
    struct peer_pair pair[MAX_PEER_PAIRS];
    int count;
};
static struct peer_pairs mgpu_peers, program_peers;

static int find_pair(const struct peer_pairs *p, CUcontext from, CUcontext to)
{
    for (int i = 0; i < p->count; i++)
        if (p->pair[i].from == from && p->pair[i].to == to)
            return i;
    return -1;
}

static void add_pair(struct peer_pairs *p, CUcontext from, CUcontext to)
{
    if (find_pair(p, from, to) < 0 && p->count < MAX_PEER_PAIRS)
        p->pair[p->count++] = (struct peer_pair){from, to};
}

static void remove_pair(struct peer_pairs *p, int i)
{
    p->pair[i] = p->pair[--p->count];
}

/* Lets the kernels of context `from` reach the memory of context `to`. */
static CUresult enable_peer(CUcontext from, CUcontext to)
{
    CUresult r = mgpu_drv.cuCtxPushCurrent(from);
    if (r != CUDA_SUCCESS)
        return r;
    r = mgpu_drv.cuCtxEnablePeerAccess(to, 0);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) /* the program's already: mgpu's too now */
        r = CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        add_pair(&mgpu_peers, from, to);
    return r;
}

CUresult mgpu_program_enable_peer(CUcontext peer, unsigned flags,
                                  CUresult (*enable)(CUcontext, unsigned))
{
    CUcontext current = NULL;
    if (mgpu_drv.cuCtxGetCurrent == NULL || mgpu_drv.cuCtxGetCurrent(&current) != CUDA_SUCCESS ||
        current == NULL)
        return enable(peer, flags);
    pthread_mutex_lock(&contexts_lock);
    CUresult r;
    if (find_pair(&program_peers, current, peer) >= 0) {
        r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    } else {
        r = enable(peer, flags);
        if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED &&
            find_pair(&mgpu_peers, current, peer) >= 0)
            r = CUDA_SUCCESS; /* enabled by mgpu, not yet by the program */
        if (r == CUDA_SUCCESS)
            add_pair(&program_peers, current, peer);
    }
    pthread_mutex_unlock(&contexts_lock);
    return r;
}

CUresult mgpu_program_disable_peer(CUcontext peer, CUresult (*disable)(CUcontext))
{
    CUcontext current = NULL;
    if (mgpu_drv.cuCtxGetCurrent == NULL || mgpu_drv.cuCtxGetCurrent(&current) != CUDA_SUCCESS ||
        current == NULL)
        return disable(peer);
    pthread_mutex_lock(&contexts_lock);
    int mine = find_pair(&program_peers, current, peer);
    bool mgpus = find_pair(&mgpu_peers, current, peer) >= 0;
    CUresult r;
    if (mgpus) /* mgpu's access stays; the program's view follows its calls */
        r = mine >= 0 ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    else
        r = disable(peer);
    if (mine >= 0 && (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED))
        remove_pair(&program_peers, mine);
    pthread_mutex_unlock(&contexts_lock);
    return r;
}

/* Under contexts_lock: peer access both ways between every pair of
 * distinct devices, so that a slice of a split kernel on any GPU reaches
 * what the program allocated with the driver and the module variables'
 * storage on the home GPU. Entries of one device need none. */
static int enable_peer_access(CUcontext home, char *err, size_t errlen)
{
    for (int i = 0; i < peered_home_count; i++)
        if (peered_homes[i] == home)
            return 0;
    int devices[MGPU_MAX_GPUS];
    int n = mgpu_gpu_entries_distinct(run_gpus, devices);
    if (n > 1 && mgpu_drv.cuCtxEnablePeerAccess == NULL) {
        snprintf(err, errlen, "the CUDA driver lacks cuCtxEnablePeerAccess");
        return -1;
    }
    CUresult r = CUDA_SUCCESS;
    int a = 0, b = 0;
    for (int i = 1; i < n && r == CUDA_SUCCESS; i++) {
        a = 0, b = devices[i];
        r = enable_peer(home, primary[b]);
        if (r == CUDA_SUCCESS)
            a = devices[i], b = 0, r = enable_peer(primary[a], home);
    }
    for (int i = 1; !others_peered && i < n && r == CUDA_SUCCESS; i++)
        for (int j = 1; j < n && r == CUDA_SUCCESS; j++)
            if (i != j)
                a = devices[i], b = devices[j], r = enable_peer(primary[a], primary[b]);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen,
                 "device %d cannot reach device %d's memory (%s); choose GPUs with peer access "
                 "with --gpus",
                 a, b, mgpu_cu_error_name(r));
        return -1;
    }
    others_peered = true;
    if (peered_home_count < (int)(sizeof peered_homes / sizeof peered_homes[0]))
        peered_homes[peered_home_count++] = home;
    return 0;
}

/* The checks both calls below make first. */
static int check_home(CUcontext home, char *err, size_t errlen)
{
    if (mgpu_drv.cuDevicePrimaryCtxRetain == NULL || mgpu_drv.cuDevicePrimaryCtxRelease == NULL ||
        mgpu_drv.cuCtxPushCurrent == NULL || mgpu_drv.cuCtxPopCurrent == NULL ||
        mgpu_drv.cuCtxGetDevice == NULL) {
        snprintf(err, errlen, "the CUDA driver lacks the context calls mgpu needs");
        return -1;
    }
    CUdevice dev = -1;
    CUresult r = mgpu_context_device(home, &dev);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "the program's context: %s", mgpu_cu_error_name(r));
        return -1;
    }
    CUdevice first;
    if (mgpu_drv.cuDeviceGet(&first, 0) != CUDA_SUCCESS || dev != first) {
        snprintf(err, errlen,
                 "the program runs it on device %d, not on device 0 (the GPUs mgpu "
                 "joins)",
                 (int)dev);
        return -1;
    }
    return 0;
}

int mgpu_gpu_home_check(CUcontext home, int *count, char *err, size_t errlen)
{
    if (check_home(home, err, errlen) != 0)
        return -1;
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (e == NULL) {
        snprintf(err, errlen, "the driver is not initialised");
        return -1;
    }
    *count = e->count;
    return 0;
}

int mgpu_gpu_contexts(CUcontext home, CUcontext out[MGPU_MAX_GPUS], int *count, char *err,
                      size_t errlen)
{
    if (check_home(home, err, errlen) != 0)
        return -1;
    pthread_mutex_lock(&contexts_lock);
    long long begin = mgpu_monotonic_ns();
    int rc = gpu_count > 0 ? 0 : retain_others(err, errlen);
    long long retained = mgpu_monotonic_ns();
    if (!warming_here)
        mgpu_startup_add(MGPU_STARTUP_CONTEXTS, retained - begin);
    if (rc == 0)
        rc = enable_peer_access(home, err, errlen);
    if (!warming_here)
        mgpu_startup_add(MGPU_STARTUP_PEER_ACCESS, mgpu_monotonic_ns() - retained);
    if (rc == 0) {
        for (int g = 0; g < gpu_count; g++)
            out[g] = run_gpus->device[g] == 0 ? home : primary[run_gpus->device[g]];
        *count = gpu_count;
    }
    pthread_mutex_unlock(&contexts_lock);
    return rc;
}
