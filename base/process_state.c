/* Owns the process facts of process_state.h: the fork handler, and
 * whether the driver was initialised (cuInit's hook, in
 * src/hooks/context_hooks.c, says). */
#include "base/process_state.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>

atomic_bool mgpu_forked_child;
static atomic_bool driver_initialised;

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
}

void mgpu_process_driver_initialised(void)
{
    atomic_store(&driver_initialised, true);
}
