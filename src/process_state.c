/* Owns the process facts of process_state.h: the fork handler and the
 * hooks that tell them (cuInit, and the calls that queue the program's
 * host functions, whose functions are wrapped to mark the driver's thread
 * while they run). */
#include "process_state.h"

#include "hook_table.h"
#include "real_driver.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdlib.h>

atomic_bool mgpu_forked_child;
static atomic_bool driver_initialised;
static _Thread_local int callbacks_running; /* nested: a callback may run another's code */

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

bool mgpu_on_callback_thread(void)
{
    return callbacks_running > 0;
}

MGPU_DECLARE_HOOK(cuInit, PFN_cuInit_v2000);
MGPU_DECLARE_HOOK(cuLaunchHostFunc, PFN_cuLaunchHostFunc_v10000);
MGPU_DECLARE_HOOK(cuLaunchHostFunc_ptsz, PFN_cuLaunchHostFunc_v10000_ptsz);
MGPU_DECLARE_HOOK(cuStreamAddCallback, PFN_cuStreamAddCallback_v5000);
MGPU_DECLARE_HOOK(cuStreamAddCallback_ptsz, PFN_cuStreamAddCallback_v7000_ptsz);

static CUresult CUDAAPI hook_cuInit(unsigned flags)
{
    MGPU_HOOK_ENTRY(cuInit);
    CUresult r = real_cuInit(flags);
    if (r == CUDA_SUCCESS)
        atomic_store(&driver_initialised, true);
    return r;
}

/* The program's function and its argument, handed to the wrapper. */
struct host_call {
    CUhostFn fn;
    CUstreamCallback callback;
    void *data;
    bool kept; /* captured into a graph, whose node may run many times */
};

/* A record is freed before the program's function runs: a function that
 * calls exit() never returns here. */
static void CUDA_CB run_host_fn(void *arg)
{
    struct host_call call = *(struct host_call *)arg;
    if (!call.kept)
        free(arg);
    callbacks_running++;
    call.fn(call.data);
    callbacks_running--;
}

static void CUDA_CB run_stream_callback(CUstream stream, CUresult status, void *arg)
{
    struct host_call call = *(struct host_call *)arg;
    if (!call.kept)
        free(arg);
    callbacks_running++;
    call.callback(stream, status, call.data);
    callbacks_running--;
}

/* A wrapper record for a host function queued on `stream` (as the
 * non-_ptsz calls name it), or NULL to queue the program's function as it
 * is: when the driver cannot say whether the stream is captured, and when
 * no memory is left. In a stream capture the function becomes a graph
 * node that may run any number of times, so its record is never freed: a
 * few bytes per captured call. */
static struct host_call *wrap(CUstream stream, CUhostFn fn, CUstreamCallback callback, void *data)
{
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (mgpu_drv.cuStreamIsCapturing == NULL ||
        mgpu_drv.cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS)
        return NULL;
    struct host_call *call = malloc(sizeof *call);
    if (call != NULL)
        *call = (struct host_call){fn, callback, data, capture != CU_STREAM_CAPTURE_STATUS_NONE};
    return call;
}

static CUresult CUDAAPI hook_cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data)
{
    MGPU_HOOK_ENTRY(cuLaunchHostFunc);
    struct host_call *call = fn != NULL ? wrap(stream, fn, NULL, data) : NULL;
    if (call == NULL)
        return real_cuLaunchHostFunc(stream, fn, data);
    CUresult r = real_cuLaunchHostFunc(stream, run_host_fn, call);
    if (r != CUDA_SUCCESS)
        free(call);
    return r;
}

static CUresult CUDAAPI hook_cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void *data)
{
    MGPU_HOOK_ENTRY(cuLaunchHostFunc_ptsz);
    struct host_call *call = fn != NULL ? wrap(mgpu_per_thread_stream(stream), fn, NULL, data) : NULL;
    if (call == NULL)
        return real_cuLaunchHostFunc_ptsz(stream, fn, data);
    CUresult r = real_cuLaunchHostFunc_ptsz(stream, run_host_fn, call);
    if (r != CUDA_SUCCESS)
        free(call);
    return r;
}

static CUresult CUDAAPI hook_cuStreamAddCallback(CUstream stream, CUstreamCallback callback,
                                                 void *data, unsigned flags)
{
    MGPU_HOOK_ENTRY(cuStreamAddCallback);
    struct host_call *call = callback != NULL ? wrap(stream, NULL, callback, data) : NULL;
    if (call == NULL)
        return real_cuStreamAddCallback(stream, callback, data, flags);
    CUresult r = real_cuStreamAddCallback(stream, run_stream_callback, call, flags);
    if (r != CUDA_SUCCESS)
        free(call);
    return r;
}

static CUresult CUDAAPI hook_cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback callback,
                                                      void *data, unsigned flags)
{
    MGPU_HOOK_ENTRY(cuStreamAddCallback_ptsz);
    struct host_call *call =
        callback != NULL ? wrap(mgpu_per_thread_stream(stream), NULL, callback, data) : NULL;
    if (call == NULL)
        return real_cuStreamAddCallback_ptsz(stream, callback, data, flags);
    CUresult r = real_cuStreamAddCallback_ptsz(stream, run_stream_callback, call, flags);
    if (r != CUDA_SUCCESS)
        free(call);
    return r;
}

const struct mgpu_hook mgpu_process_hooks[] = {
    MGPU_HOOK(cuInit),
    MGPU_HOOK(cuLaunchHostFunc),
    MGPU_HOOK(cuLaunchHostFunc_ptsz),
    MGPU_HOOK(cuStreamAddCallback),
    MGPU_HOOK(cuStreamAddCallback_ptsz),
    MGPU_HOOK_END,
};
