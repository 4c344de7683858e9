/* A wait for a context's queued work that gives up after a bound (context_wait.c). */
#ifndef MGPU_BASE_CONTEXT_WAIT_H
#define MGPU_BASE_CONTEXT_WAIT_H

#include <cuda.h>
#include <stdbool.h>

/* What mgpu_context_wait_within found. */
enum mgpu_context_wait {
    MGPU_CONTEXT_IDLE,    /* every piece of work queued in ctx before the call is done */
    MGPU_CONTEXT_BUSY,    /* still running when the bound passed, or an earlier wait is */
    MGPU_CONTEXT_FAULTED, /* cuCtxSynchronize answered an error (a faulted kernel) */
};

/* Waits at most `bound_ms` for the work queued in ctx. A thread of mgpu's
 * own calls cuCtxSynchronize, so that the caller is never held by work that
 * waits for the caller itself (a host function that waits for the
 * program's thread, a kernel spinning on a flag the host writes later):
 * launches never block on the GPU, and mgpu's work done inside one must not
 * either. While a wait that timed out is still in the driver, every later
 * call answers BUSY at once. */
enum mgpu_context_wait mgpu_context_wait_within(CUcontext ctx, unsigned bound_ms);

/* Whether a wait that timed out is still in the driver. */
bool mgpu_context_wait_pending(void);

#endif
