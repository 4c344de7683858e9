/* Owns the run's link model (see run_links.h): measured once, on a thread
 * of its own started by the first thread that asks. */
#include "sched/run_links.h"

#include "base/detached_thread.h"
#include "base/monotonic_clock.h"
#include "base/real_driver.h"
#include "base/startup_times.h"

#include "partition/gpu_contexts.h"
#include "partition/gpu_entries.h"
#include "partition/link_cache.h"
#include "partition/link_measure.h"
#include "base/log.h"
#include "base/config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_link_model model;
static atomic_int state; /* 0: not tried; 1: made; -1: could not be */

static int make_model_now(void);
/* Set at exit: the measurement's thread gives up between two copies. */
static atomic_bool stopping;

/* The model, its measurement timed for the start-up figures. */
static int make_model(void)
{
    long long begin = mgpu_monotonic_ns();
    int made = make_model_now();
    mgpu_startup_add(MGPU_STARTUP_LINKS, mgpu_monotonic_ns() - begin);
    return made;
}

static int make_model_now(void)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    int devices[MGPU_MAX_GPUS];
    static double device_gbps[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    char err[200] = "the run's GPUs are not known yet";
    if (e == NULL)
        return -1;
    int ndevices = mgpu_gpu_entries_distinct(e, devices);
    /* Kept from an earlier run on these devices (link_cache.h), else
     * measured and kept for the next. */
    struct mgpu_link_cache_file file;
    bool named = mgpu_link_cache_find(devices, ndevices, &file) == 0;
    bool kept = named && mgpu_link_cache_load(&file, ndevices, device_gbps) == 0;
    if (!kept && named)
        mgpu_debug("the links' bandwidths are not kept for devices %s on machine key %016" PRIx64
                   " (%s): measuring them",
                   file.devices, file.key, file.path);
    int measured = kept ? 0
                        : mgpu_link_measure(devices, ndevices, true, true, &stopping, device_gbps,
                                            err, sizeof err);
    if (!kept && measured == 0 && named)
        mgpu_link_cache_store(&file, ndevices, (const double(*)[MGPU_MAX_GPUS])device_gbps);
    if (measured != 0 ||
        mgpu_link_model_build(&model, e->device, e->count, devices, ndevices, device_gbps) != 0) {
        mgpu_info("no cost model of the links; placement follows the streaks alone and splits "
                  "are tried without an estimate: %s",
                  err);
        return -1;
    }
    char lines[MGPU_MAX_GPUS][512];
    int n = mgpu_link_model_describe(&model, lines, MGPU_MAX_GPUS);
    mgpu_info("copy bandwidths (%s; * modelled: entries of one device, a twelfth of local):",
              kept ? "kept from earlier runs on these devices" : "measured");
    for (int i = 0; i < n; i++)
        mgpu_info("  %s", lines[i]);
    return 1;
}

/* The measurement runs on a thread of its own. Under MGPU_SPLIT=auto
 * nobody waits for it but the exit: it is one-time set-up, which never
 * goes into the program's stream order (issue 45). Under always (tests),
 * the first asker waits for it at most LINKS_WAIT_MS, so that the moves
 * the tests look for are weighed with the model. The copies are mgpu's,
 * but the driver calls around them (allocations, frees) may wait for work
 * the program queued, and a launch must never wait on the GPU
 * (gpu-exit-paths: a host function held the program's stream until the
 * program's thread had queued more launches; the first split launch
 * measured the links and never returned). A launch that waited for it up to a second (until
 * the twenty-first session) lost the measurement's whole time, 65 ms on
 * one H200 listed twice: a grid-stride loop ran at 1.5 ms a launch
 * against 0.45 plain (gpu-split-launch). Until the thread is done there
 * is no model, and the decisions that need one wait
 * (mgpu_run_links_pending). */
#define LINKS_WAIT_MS 1000

static pthread_cond_t measured = PTHREAD_COND_INITIALIZER;
static atomic_bool measuring;
static bool asked; /* under lock: mgpu_run_links has waited once */

static void *measure_thread(void *unused)
{
    (void)unused;
    mgpu_drv_relax_capture_mode(); /* a graph the program captures meanwhile */
    int s = make_model();
    pthread_mutex_lock(&lock);
    atomic_store_explicit(&state, s, memory_order_release);
    atomic_store(&measuring, false);
    pthread_cond_broadcast(&measured);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Under lock: the measurement started, on its thread where one can be
 * made, else here. */
static void start_measuring(void)
{
    atomic_store(&measuring, true);
    if (!mgpu_thread_start_detached(measure_thread, NULL)) {
        atomic_store_explicit(&state, make_model(), memory_order_release);
        atomic_store(&measuring, false);
    }
}

/* Under lock: waits at most `ms` for the measurement's thread to finish;
 * whether it has. */
static bool wait_measured(unsigned ms)
{
    struct timespec deadline = mgpu_deadline_in_ms(ms);
    int rc = 0;
    while (atomic_load(&measuring) && rc == 0)
        rc = pthread_cond_timedwait(&measured, &lock, &deadline);
    return !atomic_load(&measuring);
}

const struct mgpu_link_model *mgpu_run_links(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s == 0 && mgpu_cfg.split == MGPU_SPLIT_AUTO) {
        mgpu_run_links_start();
    } else if (s == 0) {
        pthread_mutex_lock(&lock);
        bool first = atomic_load_explicit(&state, memory_order_relaxed) == 0 && !asked;
        asked = true;
        if (first) {
            if (!atomic_load(&measuring) && !atomic_load(&stopping))
                start_measuring();
            if (!wait_measured(LINKS_WAIT_MS))
                mgpu_info("the links' measurement did not finish within %d ms (slow, or held "
                          "by the program's queued work): no cost model until it does",
                          LINKS_WAIT_MS);
        }
        s = atomic_load_explicit(&state, memory_order_relaxed);
        pthread_mutex_unlock(&lock);
    }
    return s > 0 ? &model : NULL;
}

bool mgpu_run_links_pending(void)
{
    return mgpu_cfg.split == MGPU_SPLIT_AUTO &&
           atomic_load_explicit(&state, memory_order_acquire) == 0 && !atomic_load(&stopping);
}

void mgpu_run_links_start(void)
{
    if (atomic_load_explicit(&state, memory_order_acquire) != 0 || atomic_load(&measuring))
        return;
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&state, memory_order_relaxed) == 0 && !atomic_load(&measuring) &&
        !atomic_load(&stopping))
        start_measuring();
    pthread_mutex_unlock(&lock);
}

void mgpu_run_links_stop(unsigned wait_ms)
{
    atomic_store(&stopping, true);
    pthread_mutex_lock(&lock);
    wait_measured(wait_ms);
    pthread_mutex_unlock(&lock);
}

void mgpu_run_links_release(void)
{
    pthread_mutex_lock(&lock);
    if (!atomic_load(&measuring)) /* else still in the driver: its memory left to the driver */
        mgpu_link_measure_release();
    pthread_mutex_unlock(&lock);
}
