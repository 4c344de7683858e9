/* Owns the run's link model (see run_links.h): measured once, under its
 * own lock, by the first thread that asks. */
#include "sched/run_links.h"

#include "base/monotonic_clock.h"
#include "base/startup_times.h"

#include "partition/gpu_contexts.h"
#include "partition/gpu_entries.h"
#include "partition/link_measure.h"
#include "base/log.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_link_model model;
static atomic_int state; /* 0: not tried; 1: made; -1: could not be */

static int make_model_now(void);

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
    if (mgpu_link_measure(devices, ndevices, true, device_gbps, err, sizeof err) != 0 ||
        mgpu_link_model_build(&model, e->device, e->count, devices, ndevices, device_gbps) != 0) {
        mgpu_info("no cost model of the links; placement follows the streaks alone and splits "
                  "are tried without an estimate: %s",
                  err);
        return -1;
    }
    char lines[MGPU_MAX_GPUS][512];
    int n = mgpu_link_model_describe(&model, lines, MGPU_MAX_GPUS);
    mgpu_info("copy bandwidths (* modelled: entries of one device, a twelfth of local):");
    for (int i = 0; i < n; i++)
        mgpu_info("  %s", lines[i]);
    return 1;
}

const struct mgpu_link_model *mgpu_run_links(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s == 0) {
        pthread_mutex_lock(&lock);
        s = atomic_load_explicit(&state, memory_order_relaxed);
        if (s == 0) {
            s = make_model();
            atomic_store_explicit(&state, s, memory_order_release);
        }
        pthread_mutex_unlock(&lock);
    }
    return s > 0 ? &model : NULL;
}

void mgpu_run_links_release(void)
{
    pthread_mutex_lock(&lock);
    mgpu_link_measure_release();
    pthread_mutex_unlock(&lock);
}
