/* Owns the runtime's start and end inside the program: configuration, the real
 * driver, the hooks, and the work done at exit. */
#include <build_config.h>

#include "src/runtime.h"

#include "src/mgpu.h"

#include "base/detached_thread.h"
#include "base/driver_locate.h"
#include "src/hooks/export_map.h"
#include "src/hooks/hook_table.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "memory/memory_pool.h"
#include "memory/copy_router.h"
#include "base/callback_thread.h"
#include "sched/footprint_record.h"
#include "sched/placement_follow.h"
#include "sched/run_links.h"
#include "mirror/nccl_collectives.h"
#include "modules/program_modules.h"
#include "partition/gpu_contexts.h"
#include "probes/probe_runtime.h"
#include "base/process_state.h"
#include "base/startup_times.h"
#include "base/monotonic_clock.h"
#include "base/real_driver.h"
#include "mirror/replicas.h"
#include "src/report/report.h"
#include "sched/slice_watch.h"
#include "src/report/trace.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

struct mgpu_config mgpu_cfg;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static const char *start_shim_path;

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* What every export returns when there is no driver to forward to. */
static CUresult CUDAAPI no_driver_entry(void)
{
    return CUDA_ERROR_NO_DEVICE;
}

static atomic_bool exit_work_done;
static pthread_once_t late_exit_once = PTHREAD_ONCE_INIT;

/* How long the exit waits for the slice watch to leave its loop, and,
 * on a driver callback thread, for the report. */
#define WATCH_STOP_SECONDS 5
#define CALLBACK_REPORT_SECONDS 10
/* How long the exit waits for mgpu's threads that call the driver (the
 * links' measurement, NCCL's communicator) to finish or give up. */
#define THREADS_STOP_MS 10000
#define THREADS_STOP_MS_IN_CALLBACK 500

static void report_and_trace(void)
{
    if (mgpu_cfg.report)
        mgpu_report_print();
    if (mgpu_cfg.trace_path[0])
        mgpu_trace_write(mgpu_cfg.trace_path, mgpu_cfg.rank);
}

static struct {
    pthread_mutex_t lock;
    pthread_cond_t finished;
    bool done;
} reporter = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};

static void *report_on_own_thread(void *unused)
{
    (void)unused;
    report_and_trace();
    pthread_mutex_lock(&reporter.lock);
    reporter.done = true;
    pthread_cond_signal(&reporter.finished);
    pthread_mutex_unlock(&reporter.lock);
    return NULL;
}

/* The report of a program that exits in a host callback. Written by a
 * thread of its own, which may ask the driver what it needs (the callback
 * thread may not), and waited for a while only: a thread of the program
 * may hold a lock of mgpu's while it waits for the GPU, and the GPU's
 * stream waits for this very callback. */
static void report_from_callback(void)
{
    if (!mgpu_thread_start_detached(report_on_own_thread, NULL)) {
        mgpu_warn("exit in a host callback: no thread for the report, which is left out");
        return;
    }
    struct timespec deadline = mgpu_deadline_in_ms(CALLBACK_REPORT_SECONDS * 1000);
    pthread_mutex_lock(&reporter.lock);
    int rc = 0;
    while (!reporter.done && rc == 0)
        rc = pthread_cond_timedwait(&reporter.finished, &reporter.lock, &deadline);
    bool done = reporter.done;
    pthread_mutex_unlock(&reporter.lock);
    if (!done)
        mgpu_warn("exit in a host callback: the report did not finish within %d s and is left "
                  "out (a thread of the program holds what it needs)",
                  CALLBACK_REPORT_SECONDS);
}

/* The end of a run is two handlers of exit(). at_exit, registered again
 * whenever a part starts (the pool, the probes, the first launch with
 * --report), so that it runs before the CUDA runtime's own handlers:
 * the start-up figures, the probes' results, the report and the trace,
 * while the pool still holds what they count. Then final_exit, registered
 * once at the program's first successful cuInit (every CUDA program calls
 * it, or its CUDA runtime does, before it touches the GPU; failing that,
 * when the pool starts), so that it runs after every handler the program
 * registers later: they may still read and free device memory. Not
 * earlier: a handler registered while the libraries are being loaded,
 * before main (the shim's constructor runs then for a program linked with
 * -lcuda), runs only after the libraries' destructors, the driver's among
 * them. It gives the pool's memory back, after waiting for the GPUs' work,
 * and then stops the slice watch (not before: with sequence flags the
 * pool's wait can end only when the watch writes the join flag of a GPU
 * that faulted).
 *
 * The pool is left to the driver, which frees all of a process's memory
 * as it ends, where giving it back is not safe: while other threads of
 * the program that called the driver are still alive (exit() does not
 * stop them, and one may be copying from the pool), and when exit() is
 * called in a host callback, on the driver's callback thread, where no
 * CUDA call is allowed and any wait for the GPU waits for the callback
 * itself (the launches still in flight go untimed then). */
/* The pool waits for every GPU, then gives its memory back; the replicas'
 * copies go after it. */
static void release_memory(void)
{
    mgpu_copy_router_release();
    mgpu_pool_release_all();
    mgpu_replicas_release_all();
    mgpu_run_links_release();
}

static void at_exit(void)
{
    if (atomic_exchange(&exit_work_done, true))
        return;
    /* A forked child's pool, threads and counts are copies of the
     * parent's, which the parent releases and reports. */
    if (atomic_load(&mgpu_forked_child))
        return;
    bool in_callback = mgpu_on_callback_thread();
    char startup[400];
    if (mgpu_cfg.verbose >= 1 && mgpu_startup_describe(startup, sizeof startup) > 0)
        mgpu_info("%s", startup);
    if (!in_callback)
        mgpu_probes_finish();
    if (mgpu_stats_enabled) {
        if (in_callback) {
            report_from_callback();
        } else {
            mgpu_timing_flush_all();
            report_and_trace();
        }
    }
}

static void final_exit(void)
{
    static atomic_bool done;
    if (atomic_exchange(&done, true))
        return;
    long long begin = mgpu_monotonic_ns();
    at_exit(); /* when no part registered it */
    if (atomic_load(&mgpu_forked_child))
        return;
    /* The other GPUs' contexts made ahead, the links' measurement, the
     * communicator's making and the modules' loaders stopped first, whatever else is left to the
     * driver; not waited for long in a host callback, where their driver calls may wait for this
     * very callback. */
    unsigned stop_ms = mgpu_on_callback_thread() ? THREADS_STOP_MS_IN_CALLBACK : THREADS_STOP_MS;
    mgpu_gpu_contexts_stop_warming(stop_ms);
    mgpu_run_links_stop(stop_ms);
    mgpu_nccl_wait_made(stop_ms);
    mgpu_program_modules_wait_loaders(stop_ms);
    int others = mgpu_process_other_driver_threads();
    if (mgpu_on_callback_thread())
        mgpu_info("exit in a host callback: the pool's memory is left to the driver, which frees "
                  "it as the process ends");
    else if (others > 0)
        mgpu_debug("exit with %d other thread%s of the program that called the driver still "
                   "running: the pool's memory is left to the driver, which frees it as the "
                   "process ends",
                   others, others == 1 ? "" : "s");
    else
        release_memory();
    mgpu_slice_watch_stop(WATCH_STOP_SECONDS);
    mgpu_info("exit: %.1f ms in mgpu after the program's last exit handler", mgpu_ms_since(begin));
}

static pthread_once_t final_exit_once = PTHREAD_ONCE_INIT;

static void register_final_exit(void)
{
    atexit(final_exit);
}

void mgpu_runtime_driver_initialised(void)
{
    pthread_once(&final_exit_once, register_final_exit);
}

/* Called when the memory pool starts (and the probes load): the report's
 * work at exit is registered again, after the CUDA runtime's own exit
 * handlers, so that it runs before them, while contexts are alive; the
 * pool's end too, where the program's cuInit did not register it. */
static void release_at_exit(void)
{
    mgpu_runtime_driver_initialised(); /* when cuInit did not */
    atexit(at_exit);
}

static void configure_pool(void)
{
    struct mgpu_pool_settings pool = {
        .off = mgpu_cfg.memory == MGPU_MEMORY_DRIVER,
        .why_off = "MGPU_MEMORY=driver",
        .placement = mgpu_cfg.placement == MGPU_PLACEMENT_AUTO
                         ? MGPU_PLACE_DISTRIBUTED
                         : (enum mgpu_placement)mgpu_cfg.placement,
        .spread_min = mgpu_cfg.placement == MGPU_PLACEMENT_AUTO ? mgpu_cfg.spread_min : 0,
        .started = release_at_exit,
    };
    mgpu_pool_configure(&pool);
    mgpu_follow_configure(mgpu_cfg.placement == MGPU_PLACEMENT_AUTO);
    struct mgpu_replica_settings mirrors = {
        .on = mgpu_cfg.mirror != MGPU_MIRROR_NEVER,
        .copy_per_entry = mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS,
        .nccl = mgpu_cfg.nccl,
        .budget_bytes = mgpu_cfg.mirror_budget_bytes,
        .budget_fraction = mgpu_cfg.mirror_budget_percent / 100.0,
    };
    mgpu_replicas_configure(&mirrors);
}

static void start_library(void);

/* libmgpu's own start, timed for the start-up figures. */
static void start(void)
{
    long long begin = mgpu_monotonic_ns();
    start_library();
    mgpu_startup_add(MGPU_STARTUP_LIBRARY, mgpu_monotonic_ns() - begin);
}

static void start_library(void)
{
    char err[512];
    if (mgpu_config_parse(&mgpu_cfg, env_get, err, sizeof err) != 0) {
        mgpu_error("%s", err);
        /* Keep going with the defaults: the launcher rejects bad values before
         * the program starts, so this is a hand-made environment. */
        mgpu_config_defaults(&mgpu_cfg);
    }
    mgpu_log_set_level(mgpu_cfg.verbose);
    mgpu_log_set_rank(mgpu_cfg.rank);
    mgpu_process_state_start();
    configure_pool();

    char path[MGPU_PATH_MAX];
    if (mgpu_driver_locate(start_shim_path, path, sizeof path, err, sizeof err) != 0 ||
        mgpu_driver_load(path, err, sizeof err) != 0) {
        mgpu_error("%s", err);
        return;
    }
    mgpu_hooks_bind();
    mgpu_info("interposing the CUDA driver %s", path);
    if (mgpu_probes_load(mgpu_cfg.probes, mgpu_cfg.probe_out, release_at_exit, err, sizeof err) !=
        0)
        mgpu_error("%s; the program runs without probes", err);
    mgpu_footprint_record_start();
    if (mgpu_cfg.report || mgpu_cfg.trace_path[0]) {
        mgpu_stats_enabled = true;
        atexit(at_exit);
    }
}

bool mgpu_runtime_logs_calls(void)
{
    return mgpu_cfg.call_log;
}

static void register_late_exit(void)
{
    atexit(at_exit);
}

void mgpu_runtime_program_running(void)
{
    pthread_once(&late_exit_once, register_late_exit);
}

void mgpu_runtime_start(const char *shim_path)
{
    start_shim_path = shim_path;
    pthread_once(&start_once, start);
}

void *mgpu_runtime_resolve_export(const char *name, void *exported, void **driver)
{
    pthread_once(&start_once, start);
    *driver = NULL;
    if (!mgpu_driver_loaded())
        return (void *)no_driver_entry;
    void *entry = mgpu_driver_symbol(name);
    *driver = entry;
    mgpu_export_map_add(entry, exported);
    const struct mgpu_hook *h = mgpu_hook_find(name);
    if (h != NULL)
        return h->hook;
    if (entry == NULL)
        mgpu_debug("the driver has no %s; calls to it return CUDA_ERROR_NOT_SUPPORTED", name);
    return entry;
}

MGPU_EXPORT const char *mgpu_version(void)
{
    return PACKAGE_VERSION;
}
