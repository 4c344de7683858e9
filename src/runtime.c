/* Owns the runtime's start and end inside the program: configuration, the real
 * driver, the hooks, and the work done at exit. */
#include <build_config.h>

#include "runtime.h"

#include "mgpu.h"

#include "driver_locate.h"
#include "export_map.h"
#include "hook_table.h"
#include "kernel_timing.h"
#include "log.h"
#include "memory_pool.h"
#include "process_state.h"
#include "real_driver.h"
#include "report.h"
#include "slice_watch.h"
#include "trace.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

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

/* How long the exit waits for the slice watch to leave its loop. */
#define WATCH_STOP_SECONDS 5

/* The report first, while the pool still holds what it counts; then the
 * pool's memory goes back, after it has waited for the GPUs' work; then
 * the slice watch stops. Not before: with sequence flags the pool's wait
 * can end only when the watch writes the join flag of a GPU that faulted.
 * One function, not one atexit handler per part, because handlers run in
 * the reverse order of their registration, which follows the program's
 * first allocation and first split launch, not what each part needs. */
static void at_exit(void)
{
    if (atomic_exchange(&exit_work_done, true))
        return;
    /* A forked child's pool, threads and counts are copies of the
     * parent's, which the parent releases and reports. */
    if (atomic_load(&mgpu_forked_child))
        return;
    if (mgpu_stats_enabled) {
        mgpu_timing_flush_all();
        if (mgpu_cfg.report)
            mgpu_report_print();
        if (mgpu_cfg.trace_path[0])
            mgpu_trace_write(mgpu_cfg.trace_path);
    }
    mgpu_pool_release_all();
    mgpu_slice_watch_stop(WATCH_STOP_SECONDS);
}

/* Called when the memory pool starts: the work at exit is registered again,
 * after the CUDA runtime's own exit handlers, so that it runs before them
 * and the pool's memory is given back while contexts are alive. */
static void release_at_exit(void)
{
    atexit(at_exit);
}

static void configure_pool(void)
{
    struct mgpu_pool_settings pool = {
        .off = mgpu_cfg.memory == MGPU_MEMORY_DRIVER,
        .why_off = "MGPU_MEMORY=driver",
        .placement = (enum mgpu_placement)mgpu_cfg.placement,
        .started = release_at_exit,
    };
    mgpu_pool_configure(&pool);
}

static void start(void)
{
    char err[512];
    if (mgpu_config_parse(&mgpu_cfg, env_get, err, sizeof err) != 0) {
        mgpu_error("%s", err);
        /* Keep going with the defaults: the launcher rejects bad values before
         * the program starts, so this is a hand-made environment. */
        mgpu_config_defaults(&mgpu_cfg);
    }
    mgpu_log_set_level(mgpu_cfg.verbose);
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

void *mgpu_runtime_resolve_export(const char *name, void *exported)
{
    pthread_once(&start_once, start);
    if (!mgpu_driver_loaded())
        return (void *)no_driver_entry;
    void *entry = mgpu_driver_symbol(name);
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
