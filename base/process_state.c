/* Owns the process facts of process_state.h: the fork handler, and
 * whether the driver was initialised (cuInit's hook, in
 * src/hooks/context_hooks.c, says). */
#include "base/process_state.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>

atomic_bool mgpu_forked_child;
static atomic_bool driver_initialised;

_Thread_local bool mgpu_thread_counted;
static atomic_int driver_threads;
static pthread_key_t thread_end_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static atomic_bool key_made;

/* At the end of a counted thread (pthread key destructors run then, not
 * at exit() for the threads exit() leaves running). */
static void thread_ended(void *value)
{
    (void)value;
    atomic_fetch_sub(&driver_threads, 1);
}

static void make_key(void)
{
    atomic_store(&key_made, pthread_key_create(&thread_end_key, thread_ended) == 0);
}

static void in_child(void)
{
    /* A child of a process that never initialised the driver may use
     * CUDA as any new process does, with mgpu whole: none of mgpu's
     * threads existed yet, since they start with the first launch. */
    if (atomic_load(&driver_initialised))
        atomic_store(&mgpu_forked_child, true);
}

void mgpu_process_state_start(void)
{
    pthread_atfork(NULL, NULL, in_child);
    pthread_once(&key_once, make_key);
}

void mgpu_process_count_thread(void)
{
    mgpu_thread_counted = true;
    pthread_once(&key_once, make_key);
    /* A thread whose end cannot be seen is never counted: it would hold
     * the pool to the end of every run. */
    if (atomic_load(&key_made) && pthread_setspecific(thread_end_key, (void *)1) == 0)
        atomic_fetch_add(&driver_threads, 1);
}

void mgpu_process_thread_is_mgpus(void)
{
    mgpu_thread_counted = true;
}

int mgpu_process_other_driver_threads(void)
{
    int n = atomic_load(&driver_threads);
    if (mgpu_thread_counted && atomic_load(&key_made) && pthread_getspecific(thread_end_key) != NULL)
        n--;
    return n;
}

void mgpu_process_driver_initialised(void)
{
    atomic_store(&driver_initialised, true);
}
