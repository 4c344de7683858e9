/* Owns the per-GPU worker threads (see gpu_workers.h). A job is posted by
 * setting a worker's `posted` flag; the worker spins on it for a while
 * after its last job and only then sleeps on a condition variable. Posting
 * and sleeping follow one rule: each side writes its own flag, then reads
 * the other's, both sequentially consistent, so that a job is never posted
 * to a worker that has gone to sleep without being woken. */
#include "partition/gpu_workers.h"

#include "base/detached_thread.h"
#include "base/process_state.h"

#include "base/log.h"
#include "base/monotonic_clock.h"
#include "base/real_driver.h"
#include "partition/thread_binding.h"

#include <pthread.h>
#include <stdatomic.h>

/* How long a worker keeps spinning after its last job. Long enough to
 * cover the gap between a program's back-to-back launches, short enough
 * that an idle program does not keep cores busy for long. */
#define SPIN_NANOSECONDS 2000000LL
/* How long the caller spins for the workers before it sleeps: submitting
 * a slice takes microseconds, a pageable copy milliseconds. */
#define CALLER_SPIN_NANOSECONDS 200000LL

struct worker {
    atomic_bool posted;
    atomic_bool sleeping;
    mgpu_gpu_work_fn fn;
    void *arg;
    CUcontext context;
    int gpu;
    pthread_cond_t wake;
};

static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t caller_wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER; /* begin .. wait */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static struct worker workers[MGPU_MAX_GPUS];
static atomic_int worker_count; /* written under start_lock */
static atomic_int pending;
static atomic_bool caller_sleeping;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spins until *flag reads `want` or `budget_ns` has passed. */
static bool spin_until(atomic_bool *flag, bool want, long long budget_ns)
{
    long long deadline = mgpu_monotonic_ns() + budget_ns;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(flag, memory_order_acquire) == want)
            return true;
        cpu_relax();
        if ((i & 255) == 0 && mgpu_monotonic_ns() > deadline)
            return false;
    }
}

static bool no_jobs_pending(void)
{
    return atomic_load_explicit(&pending, memory_order_acquire) == 0;
}

/* Near its GPU, the worker's waits and the host memory it touches stay on
 * the GPU's side of the machine. */
static void bind_near_gpu(const struct worker *w)
{
    CUdevice dev;
    char bus_id[32], err[200];
    if (mgpu_drv.cuDeviceGetPCIBusId == NULL || mgpu_drv.cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
        mgpu_drv.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, dev) != CUDA_SUCCESS)
        return;
    if (mgpu_bind_thread_near_gpu(bus_id, err, sizeof err) != 0)
        mgpu_info("the worker thread of GPU %d stays unbound: %s", w->gpu, err);
}

static void *worker_main(void *p)
{
    struct worker *w = p;
    mgpu_process_thread_is_mgpus();
    mgpu_drv_relax_capture_mode();
    mgpu_drv.cuCtxSetCurrent(w->context);
    bool bound = false;
    for (;;) {
        /* Bound once the topology is in, never waiting for it. */
        if (!bound && mgpu_thread_binding_ready()) {
            bind_near_gpu(w);
            bound = true;
        }
        if (!spin_until(&w->posted, true, SPIN_NANOSECONDS)) {
            pthread_mutex_lock(&sleep_lock);
            atomic_store(&w->sleeping, true);
            while (!atomic_load(&w->posted))
                pthread_cond_wait(&w->wake, &sleep_lock);
            atomic_store(&w->sleeping, false);
            pthread_mutex_unlock(&sleep_lock);
        }
        w->fn(w->gpu, w->arg);
        atomic_store_explicit(&w->posted, false, memory_order_release);
        if (atomic_fetch_sub(&pending, 1) == 1 && atomic_load(&caller_sleeping)) {
            pthread_mutex_lock(&sleep_lock);
            pthread_cond_signal(&caller_wake);
            pthread_mutex_unlock(&sleep_lock);
        }
    }
    return NULL;
}

int mgpu_gpu_workers_start(int ngpus, const CUcontext *contexts)
{
    if (atomic_load_explicit(&worker_count, memory_order_acquire) >= ngpus)
        return 0; /* every launch asks: no lock once they run */
    pthread_mutex_lock(&start_lock);
    mgpu_thread_binding_prepare();
    int rc = 0;
    for (int g = worker_count; g < ngpus && rc == 0; g++) {
        struct worker *w = &workers[g];
        pthread_cond_init(&w->wake, NULL);
        w->context = contexts[g];
        w->gpu = g;
        if (!mgpu_thread_start_detached(worker_main, w))
            rc = -1;
        else
            atomic_store_explicit(&worker_count, g + 1, memory_order_release);
    }
    pthread_mutex_unlock(&start_lock);
    return rc;
}

void mgpu_gpu_workers_begin(const bool wanted[MGPU_MAX_GPUS], mgpu_gpu_work_fn fn, void *arg)
{
    pthread_mutex_lock(&owner_lock);
    int count = atomic_load_explicit(&worker_count, memory_order_acquire);
    for (int g = 0; g < count; g++) {
        if (!wanted[g])
            continue;
        struct worker *w = &workers[g];
        w->fn = fn;
        w->arg = arg;
        atomic_fetch_add(&pending, 1);
        atomic_store(&w->posted, true);
        if (atomic_load(&w->sleeping)) {
            pthread_mutex_lock(&sleep_lock);
            pthread_cond_signal(&w->wake);
            pthread_mutex_unlock(&sleep_lock);
        }
    }
}

void mgpu_gpu_workers_wait(void)
{
    long long deadline = mgpu_monotonic_ns() + CALLER_SPIN_NANOSECONDS;
    for (unsigned i = 1; !no_jobs_pending(); i++) {
        cpu_relax();
        if ((i & 255) == 0 && mgpu_monotonic_ns() > deadline) {
            pthread_mutex_lock(&sleep_lock);
            atomic_store(&caller_sleeping, true);
            while (!no_jobs_pending())
                pthread_cond_wait(&caller_wake, &sleep_lock);
            atomic_store(&caller_sleeping, false);
            pthread_mutex_unlock(&sleep_lock);
        }
    }
    pthread_mutex_unlock(&owner_lock);
}

void mgpu_gpu_workers_run(const bool wanted[MGPU_MAX_GPUS], mgpu_gpu_work_fn fn, void *arg)
{
    mgpu_gpu_workers_begin(wanted, fn, arg);
    mgpu_gpu_workers_wait();
}
