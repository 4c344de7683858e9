/* Owns the process facts of process_state.h: the fork handler and the
 * hook that tells whether the driver was initialised (cuInit). */
#include "base/process_state.h"

#include "src/hooks/hook_table.h"

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

MGPU_DECLARE_HOOK(cuInit, PFN_cuInit_v2000);

static CUresult CUDAAPI hook_cuInit(unsigned flags)
{
    MGPU_HOOK_ENTRY(cuInit);
    CUresult r = real_cuInit(flags);
    if (r == CUDA_SUCCESS)
        atomic_store(&driver_initialised, true);
    return r;
}

const struct mgpu_hook mgpu_process_hooks[] = {
    MGPU_HOOK(cuInit),
    MGPU_HOOK_END,
};
