/* Owns the bounded wait for a context's queued work (context_wait.h): one
 * detached waiter thread, made at the first wait, that synchronises the
 * context it is handed while the caller waits on a condition variable with
 * a deadline. A wait that times out leaves the waiter in the driver; it
 * finishes on its own when the work does, and until then no other wait is
 * started (each would be one more thread stuck on the same work). */
#include "base/context_wait.h"

#include "base/detached_thread.h"
#include "base/monotonic_clock.h"
#include "base/real_driver.h"

#include <errno.h>
#include <pthread.h>

static struct {
    pthread_mutex_t lock;
    pthread_cond_t asked, answered;
    bool started;
    bool busy;          /* a wait handed to the waiter and not answered yet */
    CUcontext ctx;      /* what it waits for */
    unsigned long asks; /* numbers the waits */
    unsigned long done; /* the number of the last answered */
    CUresult result;
} waiter = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .asked = PTHREAD_COND_INITIALIZER,
    .answered = PTHREAD_COND_INITIALIZER,
};

static void *wait_loop(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&waiter.lock);
    for (;;) {
        while (waiter.done == waiter.asks)
            pthread_cond_wait(&waiter.asked, &waiter.lock);
        CUcontext ctx = waiter.ctx;
        unsigned long ask = waiter.asks;
        pthread_mutex_unlock(&waiter.lock);
        CUresult r = mgpu_drv_synchronize_context(ctx);
        pthread_mutex_lock(&waiter.lock);
        waiter.result = r;
        waiter.done = ask;
        waiter.busy = false;
        pthread_cond_broadcast(&waiter.answered);
    }
    return NULL;
}

static bool start_waiter(void)
{
    if (!waiter.started)
        waiter.started = mgpu_thread_start_detached(wait_loop, NULL);
    return waiter.started;
}

enum mgpu_context_wait mgpu_context_wait_within(CUcontext ctx, unsigned bound_ms)
{
    pthread_mutex_lock(&waiter.lock);
    if (waiter.busy) {
        pthread_mutex_unlock(&waiter.lock);
        return MGPU_CONTEXT_BUSY;
    }
    if (!start_waiter()) { /* no thread: the plain wait, as before */
        pthread_mutex_unlock(&waiter.lock);
        return mgpu_drv_synchronize_context(ctx) == CUDA_SUCCESS ? MGPU_CONTEXT_IDLE
                                                                 : MGPU_CONTEXT_FAULTED;
    }
    unsigned long ask = ++waiter.asks;
    waiter.ctx = ctx;
    waiter.busy = true;
    pthread_cond_signal(&waiter.asked);
    struct timespec deadline = mgpu_deadline_in_ms(bound_ms);
    int rc = 0;
    while (waiter.done < ask && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&waiter.answered, &waiter.lock, &deadline);
    enum mgpu_context_wait found = MGPU_CONTEXT_BUSY;
    if (waiter.done >= ask)
        found = waiter.result == CUDA_SUCCESS ? MGPU_CONTEXT_IDLE : MGPU_CONTEXT_FAULTED;
    pthread_mutex_unlock(&waiter.lock);
    return found;
}

bool mgpu_context_wait_pending(void)
{
    pthread_mutex_lock(&waiter.lock);
    bool busy = waiter.busy;
    pthread_mutex_unlock(&waiter.lock);
    return busy;
}
