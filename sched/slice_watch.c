/* Owns the slice watch thread (see slice_watch.h). Going to sleep and
 * being woken follow one rule: the watch sets `asleep`, then looks at the
 * slice streams once more; a launch queues its slices, then reads
 * `asleep`. Both orders are sequentially consistent, so slices queued
 * after the last look always find the watch marked asleep and wake it.
 * The thread is detached and says when it has stopped, so that stopping
 * it at exit can give up after a while instead of joining for ever. */
#include "sched/slice_watch.h"

#include "base/detached_thread.h"
#include "base/log.h"
#include "base/monotonic_clock.h"
#include "base/real_driver.h"
#include "sched/slice_errors.h"
#include "sched/slice_streams.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

/* How long a fault on another GPU can go unseen: short against a
 * program's reaction to an error, long against a cuStreamQuery per GPU. */
#define LOOK_INTERVAL_NANOSECONDS 1000000L

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool woken;         /* under sleep_lock */
static bool stopping;      /* under sleep_lock */
static bool stopped;       /* under sleep_lock: the watch has left its loop */
static pthread_cond_t gone = PTHREAD_COND_INITIALIZER;
static atomic_bool asleep; /* the watch waits for `wake` */
static atomic_bool running;

static void *watch(void *unused)
{
    (void)unused;
    mgpu_drv_relax_capture_mode();
    const struct timespec interval = {0, LOOK_INTERVAL_NANOSECONDS};
    for (;;) {
        pthread_mutex_lock(&sleep_lock);
        bool stop = stopping;
        if (stop) {
            stopped = true;
            pthread_cond_broadcast(&gone);
        }
        pthread_mutex_unlock(&sleep_lock);
        if (stop)
            return NULL;
        if (mgpu_slice_streams_watch(mgpu_slice_errors_found)) {
            nanosleep(&interval, NULL);
            continue;
        }
        atomic_store(&asleep, true);
        if (mgpu_slice_streams_watch(mgpu_slice_errors_found)) {
            atomic_store(&asleep, false);
            continue;
        }
        pthread_mutex_lock(&sleep_lock);
        while (!woken && !stopping)
            pthread_cond_wait(&wake, &sleep_lock);
        woken = false;
        atomic_store(&asleep, false);
        pthread_mutex_unlock(&sleep_lock);
    }
}

bool mgpu_slice_watch_stop(int seconds)
{
    if (!atomic_load(&running))
        return true;
    struct timespec deadline = mgpu_deadline_in_ms((unsigned)seconds * 1000);
    pthread_mutex_lock(&sleep_lock);
    stopping = true;
    pthread_cond_signal(&wake);
    int rc = 0;
    while (!stopped && rc == 0)
        rc = pthread_cond_timedwait(&gone, &sleep_lock, &deadline);
    bool done = stopped;
    pthread_mutex_unlock(&sleep_lock);
    if (!done)
        mgpu_info("the slice watch did not stop within %d s; the process ends with it running",
                  seconds);
    return done;
}

static void start_watch(void)
{
    if (!mgpu_thread_start_detached(watch, NULL)) {
        mgpu_error("cannot start the slice watch thread; a GPU that faults in a split kernel "
                   "may stall the program");
        return;
    }
    atomic_store(&running, true);
}

void mgpu_slice_watch_awaiting(void)
{
    if (!atomic_load_explicit(&running, memory_order_relaxed))
        pthread_once(&start_once, start_watch);
    if (!atomic_load(&asleep))
        return;
    pthread_mutex_lock(&sleep_lock);
    woken = true;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&sleep_lock);
}
