/* Owns the per-GPU worker threads (see gpu_workers.h): a condition variable
 * per worker to hand it a job, one shared count of jobs still running. */
#include "gpu_workers.h"

#include "real_driver.h"

#include <pthread.h>

struct worker {
    pthread_cond_t wake;
    mgpu_gpu_work_fn fn; /* NULL while idle */
    void *arg;
    CUcontext context;
    int gpu;
};

static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static struct worker workers[MGPU_MAX_GPUS];
static int worker_count, running;

static void *worker_main(void *p)
{
    struct worker *w = p;
    mgpu_drv.cuCtxSetCurrent(w->context);
    pthread_mutex_lock(&workers_lock);
    for (;;) {
        while (w->fn == NULL)
            pthread_cond_wait(&w->wake, &workers_lock);
        mgpu_gpu_work_fn fn = w->fn;
        void *arg = w->arg;
        pthread_mutex_unlock(&workers_lock);
        fn(w->gpu, arg);
        pthread_mutex_lock(&workers_lock);
        w->fn = NULL;
        if (--running == 0)
            pthread_cond_broadcast(&all_done);
    }
    return NULL;
}

int mgpu_gpu_workers_start(int ngpus, const CUcontext contexts[MGPU_MAX_GPUS])
{
    pthread_mutex_lock(&workers_lock);
    int rc = 0;
    for (int g = worker_count; g < ngpus && rc == 0; g++) {
        struct worker *w = &workers[g];
        pthread_cond_init(&w->wake, NULL);
        w->context = contexts[g];
        w->gpu = g;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t thread;
        if (pthread_create(&thread, &attr, worker_main, w) != 0)
            rc = -1;
        else
            worker_count = g + 1;
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&workers_lock);
    return rc;
}

void mgpu_gpu_workers_run(const bool wanted[MGPU_MAX_GPUS], mgpu_gpu_work_fn fn, void *arg)
{
    pthread_mutex_lock(&workers_lock);
    for (int g = 0; g < worker_count; g++) {
        if (!wanted[g])
            continue;
        workers[g].fn = fn;
        workers[g].arg = arg;
        running++;
        pthread_cond_signal(&workers[g].wake);
    }
    while (running > 0)
        pthread_cond_wait(&all_done, &workers_lock);
    pthread_mutex_unlock(&workers_lock);
}
