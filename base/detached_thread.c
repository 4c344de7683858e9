/* Owns starting the detached threads of mgpu's own (detached_thread.h):
 * the slice watch, the GPU workers, the IPC server, the links'
 * measurement, NCCL's communicator, the bounded context wait, the report
 * made from a host callback. */
#include "base/detached_thread.h"

#include <pthread.h>

bool mgpu_thread_start_detached(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return false;
    pthread_t thread;
    bool started = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                   pthread_create(&thread, &attr, fn, arg) == 0;
    pthread_attr_destroy(&attr);
    return started;
}
