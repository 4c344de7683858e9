/* Owns the fake GPU's streams and events. Work runs when it is queued, on
 * the queueing thread, under the stream's lock (so one stream's work runs
 * in order); a stream is busy (cuStreamQuery: not ready) while it runs. A
 * wait for a value (cuStreamWaitValue32, the waits of cuStreamBatchMemOp)
 * polls the value until it holds, since another thread may still be about
 * to queue the write; past FAKE_CUDA_WAIT_SECONDS (default 30) it prints
 * one line and aborts, so that a hang is a test failure with a reason.
 * Events take the GPU clock, which only kernels advance (2 ms each).
 * Streams and events are never freed, so that a destroyed handle stays
 * unknown to every later call instead of naming a new object. With
 * FAKE_CUDA_HOST_FUNCS_ASYNC=1 host functions run on threads of their own
 * and hold their stream until they return (fake_wait_for_held_streams). */
#include "fake_gpu.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fake_stream {
    struct fake_context *ctx;
    pthread_mutex_t order;
    atomic_int busy;
    int priority;
    unsigned flags;
    /* host functions run on threads of their own (FAKE_CUDA_HOST_FUNCS_ASYNC):
     * begun and returned, under hold_lock */
    unsigned long holds_begun, holds_done;
};

struct fake_event {
    unsigned flags;
    bool recorded;
    uint64_t at_us;
    /* recorded behind a host function still running: done once the
     * stream's holds_done reaches hold_target */
    struct fake_stream *held_by;
    unsigned long hold_target;
};

static double wait_limit_seconds(void);
static double now_seconds(void);

/* --- streams held by host functions (FAKE_CUDA_HOST_FUNCS_ASYNC) ------------------- */

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_changed = PTHREAD_COND_INITIALIZER;
static unsigned long holds_running;

static bool host_funcs_async(void)
{
    const char *v = getenv("FAKE_CUDA_HOST_FUNCS_ASYNC");
    return v != NULL && strcmp(v, "1") == 0;
}

/* Waits, under hold_lock, until done() holds; aborts past the limit. */
static void wait_held(const char *call, bool (*done)(const void *), const void *arg)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    double limit = wait_limit_seconds();
    deadline.tv_sec += (time_t)limit;
    pthread_mutex_lock(&hold_lock);
    while (!done(arg))
        if (pthread_cond_timedwait(&hold_changed, &hold_lock, &deadline) != 0 && !done(arg)) {
            fprintf(stderr, "fake GPU: %s waited %.0f s for a host function that never returned\n",
                    call, limit);
            abort();
        }
    pthread_mutex_unlock(&hold_lock);
}

static bool device_unheld(const void *unused)
{
    (void)unused;
    return holds_running == 0;
}

static bool stream_unheld(const void *arg)
{
    const struct fake_stream *s = arg;
    return s->holds_done >= s->holds_begun;
}

static bool event_unheld(const void *arg)
{
    const struct fake_event *e = arg;
    return e->held_by == NULL || e->held_by->holds_done >= e->hold_target;
}

void fake_wait_for_held_streams(const char *call)
{
    wait_held(call, device_unheld, NULL);
}

/* A host function's call, run by its own thread. */
struct held_call {
    struct fake_stream *s;
    CUstream handle;
    CUhostFn fn;
    CUstreamCallback callback;
    void *data;
};

static void *run_held(void *arg)
{
    struct held_call c = *(struct held_call *)arg;
    free(arg);
    if (c.fn != NULL)
        c.fn(c.data);
    else
        c.callback(c.handle, CUDA_SUCCESS, c.data);
    pthread_mutex_lock(&hold_lock);
    c.s->holds_done++;
    holds_running--;
    pthread_cond_broadcast(&hold_changed);
    pthread_mutex_unlock(&hold_lock);
    return NULL;
}

/* Starts the call on a thread of its own, the stream held until it returns. */
static CUresult start_held(struct held_call *c)
{
    struct held_call *copy = malloc(sizeof *copy);
    if (copy == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *copy = *c;
    pthread_mutex_lock(&hold_lock);
    c->s->holds_begun++;
    holds_running++;
    pthread_mutex_unlock(&hold_lock);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, run_held, copy);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        free(copy);
        pthread_mutex_lock(&hold_lock);
        c->s->holds_done++;
        holds_running--;
        pthread_mutex_unlock(&hold_lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static struct fake_handles streams = FAKE_HANDLES_INIT;
static struct fake_handles events = FAKE_HANDLES_INIT;
static _Atomic uint64_t clock_us;

void fake_clock_advance(uint64_t microseconds)
{
    atomic_fetch_add(&clock_us, microseconds);
}

struct fake_stream *fake_stream_make_default(struct fake_context *ctx)
{
    struct fake_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->ctx = ctx;
    pthread_mutex_init(&s->order, NULL);
    return s;
}

struct fake_stream *fake_stream_of(CUstream handle, CUresult *err)
{
    if (handle == NULL || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD)
        return fake_context_current()->null_stream;
    if (fake_handles_has(&streams, handle))
        return (struct fake_stream *)handle;
    *err = CUDA_ERROR_INVALID_HANDLE;
    return NULL;
}

struct fake_context *fake_stream_context(const struct fake_stream *s)
{
    return s->ctx;
}

void fake_stream_begin(struct fake_stream *s)
{
    atomic_fetch_add(&s->busy, 1);
    pthread_mutex_lock(&s->order);
}

void fake_stream_end(struct fake_stream *s)
{
    pthread_mutex_unlock(&s->order);
    atomic_fetch_sub(&s->busy, 1);
}

#define STREAM_OR_RETURN(var, handle)                                                              \
    CUresult var##_err = CUDA_SUCCESS;                                                             \
    struct fake_stream *var = fake_stream_of((handle), &var##_err);                                \
    if (var == NULL)                                                                               \
        return var##_err;

/* --- streams ----------------------------------------------------------------- */

FAKE_EXPORT CUresult cuStreamCreateWithPriority(CUstream *out, unsigned flags, int priority)
{
    FAKE_ENTER_INIT("cuStreamCreateWithPriority", CUDA_ERROR_OUT_OF_MEMORY);
    struct fake_stream *s = fake_stream_make_default(fake_context_current());
    if (s == NULL || !fake_handles_add(&streams, s)) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->flags = flags;
    s->priority = priority;
    fake_live(FAKE_STREAM, 1);
    *out = (CUstream)s;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream *out, unsigned flags)
{
    FAKE_ENTER_INIT("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY);
    struct fake_stream *s = fake_stream_make_default(fake_context_current());
    if (s == NULL || !fake_handles_add(&streams, s)) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->flags = flags;
    fake_live(FAKE_STREAM, 1);
    *out = (CUstream)s;
    return CUDA_SUCCESS;
}

/* Destroys even when it is the call made to fail (see fake_contexts.c). */
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream handle)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuStreamDestroy_v2");
    struct fake_stream *s = (struct fake_stream *)handle;
    if (!fake_handles_remove(&streams, s))
        return CUDA_ERROR_INVALID_HANDLE;
    fake_live(FAKE_STREAM, -1);
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamDestroy(CUstream handle)
{
    return cuStreamDestroy_v2(handle);
}

static CUresult stream_synchronize(CUstream handle)
{
    STREAM_OR_RETURN(s, handle);
    wait_held("cuStreamSynchronize", stream_unheld, s);
    /* Waits for work another thread is running in it. */
    fake_stream_begin(s);
    fake_stream_end(s);
    return atomic_load(&s->ctx->sticky);
}

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream handle)
{
    FAKE_ENTER_INIT("cuStreamSynchronize", CUDA_ERROR_UNKNOWN);
    return stream_synchronize(handle);
}

FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream handle)
{
    FAKE_ENTER_INIT("cuStreamSynchronize_ptsz", CUDA_ERROR_UNKNOWN);
    return stream_synchronize(handle);
}

static CUresult stream_query(CUstream handle)
{
    STREAM_OR_RETURN(s, handle);
    CUresult sticky = atomic_load(&s->ctx->sticky);
    if (sticky != CUDA_SUCCESS)
        return sticky;
    pthread_mutex_lock(&hold_lock);
    bool held = !stream_unheld(s);
    pthread_mutex_unlock(&hold_lock);
    return atomic_load(&s->busy) > 0 || held ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamQuery(CUstream handle)
{
    FAKE_ENTER_INIT("cuStreamQuery", CUDA_ERROR_UNKNOWN);
    return stream_query(handle);
}

FAKE_EXPORT CUresult cuStreamQuery_ptsz(CUstream handle)
{
    FAKE_ENTER_INIT("cuStreamQuery_ptsz", CUDA_ERROR_UNKNOWN);
    return stream_query(handle);
}

FAKE_EXPORT CUresult cuStreamGetPriority(CUstream handle, int *priority)
{
    FAKE_ENTER_INIT("cuStreamGetPriority", CUDA_ERROR_INVALID_VALUE);
    STREAM_OR_RETURN(s, handle);
    *priority = s->priority;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamGetFlags(CUstream handle, unsigned *flags)
{
    FAKE_ENTER_INIT("cuStreamGetFlags", CUDA_ERROR_INVALID_VALUE);
    STREAM_OR_RETURN(s, handle);
    *flags = s->flags;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamGetCtx(CUstream handle, CUcontext *ctx)
{
    FAKE_ENTER_INIT("cuStreamGetCtx", CUDA_ERROR_INVALID_VALUE);
    STREAM_OR_RETURN(s, handle);
    *ctx = (CUcontext)s->ctx;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream handle, CUcontext *ctx)
{
    return cuStreamGetCtx(handle, ctx);
}

FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream handle, CUstreamCaptureStatus *status)
{
    FAKE_ENTER_INIT("cuStreamIsCapturing", CUDA_ERROR_INVALID_VALUE);
    STREAM_OR_RETURN(s, handle);
    (void)s;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream handle, CUstreamCaptureStatus *status)
{
    return cuStreamIsCapturing(handle, status);
}

/* --- events ------------------------------------------------------------------ */

static struct fake_event *event_of(CUevent handle)
{
    return fake_handles_has(&events, handle) ? (struct fake_event *)handle : NULL;
}

FAKE_EXPORT CUresult cuEventCreate(CUevent *out, unsigned flags)
{
    FAKE_ENTER_INIT("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY);
    struct fake_event *e = calloc(1, sizeof *e);
    if (e == NULL || !fake_handles_add(&events, e)) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->flags = flags;
    fake_live(FAKE_EVENT, 1);
    *out = (CUevent)e;
    return CUDA_SUCCESS;
}

static CUresult event_record(CUevent handle, CUstream stream)
{
    struct fake_event *e = event_of(handle);
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    STREAM_OR_RETURN(s, stream);
    fake_stream_begin(s);
    e->at_us = atomic_load(&clock_us);
    e->recorded = true;
    pthread_mutex_lock(&hold_lock);
    e->held_by = stream_unheld(s) ? NULL : s;
    e->hold_target = s->holds_begun;
    pthread_mutex_unlock(&hold_lock);
    fake_stream_end(s);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent handle, CUstream stream)
{
    FAKE_ENTER_INIT("cuEventRecord", CUDA_ERROR_INVALID_VALUE);
    return event_record(handle, stream);
}

FAKE_EXPORT CUresult cuEventRecord_ptsz(CUevent handle, CUstream stream)
{
    FAKE_ENTER_INIT("cuEventRecord_ptsz", CUDA_ERROR_INVALID_VALUE);
    return event_record(handle, stream);
}

FAKE_EXPORT CUresult cuEventRecordWithFlags(CUevent handle, CUstream stream, unsigned flags)
{
    FAKE_ENTER_INIT("cuEventRecordWithFlags", CUDA_ERROR_INVALID_VALUE);
    (void)flags;
    return event_record(handle, stream);
}

FAKE_EXPORT CUresult cuEventQuery(CUevent handle)
{
    FAKE_ENTER_INIT("cuEventQuery", CUDA_ERROR_UNKNOWN);
    struct fake_event *e = event_of(handle);
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&hold_lock);
    bool held = !event_unheld(e);
    pthread_mutex_unlock(&hold_lock);
    return held ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent handle)
{
    FAKE_ENTER_INIT("cuEventSynchronize", CUDA_ERROR_UNKNOWN);
    struct fake_event *e = event_of(handle);
    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    wait_held("cuEventSynchronize", event_unheld, e);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    FAKE_ENTER_INIT("cuEventElapsedTime", CUDA_ERROR_INVALID_VALUE);
    struct fake_event *a = event_of(start), *b = event_of(end);
    if (a == NULL || b == NULL || (a->flags & CU_EVENT_DISABLE_TIMING) ||
        (b->flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)((double)b->at_us - (double)a->at_us) / 1000.0f;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end)
{
    return cuEventElapsedTime(ms, start, end);
}

/* Destroys even when it is the call made to fail (see fake_contexts.c). */
FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent handle)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuEventDestroy_v2");
    if (!fake_handles_remove(&events, handle))
        return CUDA_ERROR_INVALID_HANDLE;
    fake_live(FAKE_EVENT, -1);
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventDestroy(CUevent handle)
{
    return cuEventDestroy_v2(handle);
}

/* Work before the record has run, so the wait has nothing to wait for; the
 * handles must still be live. */
static CUresult stream_wait_event(CUstream stream, CUevent handle, unsigned flags)
{
    (void)flags;
    if (event_of(handle) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    STREAM_OR_RETURN(s, stream);
    (void)s;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent handle, unsigned flags)
{
    FAKE_ENTER_INIT("cuStreamWaitEvent", CUDA_ERROR_INVALID_VALUE);
    return stream_wait_event(stream, handle, flags);
}

FAKE_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent handle, unsigned flags)
{
    FAKE_ENTER_INIT("cuStreamWaitEvent_ptsz", CUDA_ERROR_INVALID_VALUE);
    return stream_wait_event(stream, handle, flags);
}

/* --- memory operations ---------------------------------------------------------- */

static double wait_limit_seconds(void)
{
    const char *s = getenv("FAKE_CUDA_WAIT_SECONDS");
    return s != NULL ? atof(s) : 30.0;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bool value_holds(uint64_t now, uint64_t wanted, unsigned flags, bool wide)
{
    switch (flags & 0xf) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return wide ? (int64_t)(now - wanted) >= 0
                    : (int32_t)((uint32_t)now - (uint32_t)wanted) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
        return now == wanted;
    case CU_STREAM_WAIT_VALUE_AND:
        return (now & wanted) != 0;
    case CU_STREAM_WAIT_VALUE_NOR:
        return wide ? ~(now | wanted) != 0 : (uint32_t) ~(now | wanted) != 0;
    default:
        return true;
    }
}

/* In stream order (the caller holds the stream). */
static CUresult wait_value(CUdeviceptr address, uint64_t wanted, unsigned flags, bool wide)
{
    if (!fake_memory_valid(address, wide ? 8 : 4))
        return CUDA_ERROR_INVALID_VALUE;
    double deadline = now_seconds() + wait_limit_seconds();
    for (unsigned spins = 0;; spins++) {
        uint64_t now = wide ? atomic_load((_Atomic uint64_t *)(uintptr_t)address)
                            : atomic_load((_Atomic uint32_t *)(uintptr_t)address);
        if (value_holds(now, wanted, flags, wide))
            return CUDA_SUCCESS;
        if (spins < 1000) {
            sched_yield();
            continue;
        }
        if (now_seconds() > deadline) {
            fprintf(stderr, "fake GPU: stream wait at %#llx for %llu never satisfied\n",
                    (unsigned long long)address, (unsigned long long)wanted);
            abort();
        }
        nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

static CUresult write_value(CUdeviceptr address, uint64_t value, bool wide)
{
    if (!fake_memory_valid(address, wide ? 8 : 4))
        return CUDA_ERROR_INVALID_VALUE;
    if (wide)
        atomic_store((_Atomic uint64_t *)(uintptr_t)address, value);
    else
        atomic_store((_Atomic uint32_t *)(uintptr_t)address, (uint32_t)value);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr address, cuuint32_t value,
                                            unsigned flags)
{
    FAKE_ENTER_INIT("cuStreamWaitValue32_v2", CUDA_ERROR_INVALID_VALUE);
    STREAM_OR_RETURN(s, stream);
    fake_stream_begin(s);
    CUresult r = wait_value(address, value, flags, false);
    fake_stream_end(s);
    return r;
}

FAKE_EXPORT CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr address, cuuint32_t value,
                                             unsigned flags)
{
    FAKE_ENTER_INIT("cuStreamWriteValue32_v2", CUDA_ERROR_INVALID_VALUE);
    (void)flags;
    STREAM_OR_RETURN(s, stream);
    fake_stream_begin(s);
    CUresult r = write_value(address, value, false);
    fake_stream_end(s);
    return r;
}

FAKE_EXPORT CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned count,
                                           CUstreamBatchMemOpParams *ops, unsigned flags)
{
    FAKE_ENTER_INIT("cuStreamBatchMemOp_v2", CUDA_ERROR_INVALID_VALUE);
    (void)flags;
    STREAM_OR_RETURN(s, stream);
    if (count > 0 && ops == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    /* The driver checks the whole batch before it queues any of it. */
    for (unsigned i = 0; i < count; i++) {
        const CUstreamBatchMemOpParams *op = &ops[i];
        switch (op->operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            if (!fake_memory_valid(op->waitValue.address, 4))
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            if (!fake_memory_valid(op->writeValue.address, 4))
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER:
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    fake_stream_begin(s);
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < count && r == CUDA_SUCCESS; i++) {
        const CUstreamBatchMemOpParams *op = &ops[i];
        switch (op->operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
            r = wait_value(op->waitValue.address, op->waitValue.value, op->waitValue.flags, false);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            r = wait_value(op->waitValue.address, op->waitValue.value64, op->waitValue.flags, true);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
            r = write_value(op->writeValue.address, op->writeValue.value, false);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            r = write_value(op->writeValue.address, op->writeValue.value64, true);
            break;
        default:
            break;
        }
    }
    fake_stream_end(s);
    return r;
}

/* --- host work in a stream --------------------------------------------------------- */

FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data)
{
    FAKE_ENTER_INIT("cuLaunchHostFunc", CUDA_ERROR_INVALID_VALUE);
    STREAM_OR_RETURN(s, stream);
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (host_funcs_async())
        return start_held(&(struct held_call){.s = s, .handle = stream, .fn = fn, .data = data});
    fake_stream_begin(s);
    fn(data);
    fake_stream_end(s);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void *data,
                                         unsigned flags)
{
    FAKE_ENTER_INIT("cuStreamAddCallback", CUDA_ERROR_INVALID_VALUE);
    STREAM_OR_RETURN(s, stream);
    if (fn == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (host_funcs_async())
        return start_held(
            &(struct held_call){.s = s, .handle = stream, .callback = fn, .data = data});
    fake_stream_begin(s);
    fn(stream, CUDA_SUCCESS, data);
    fake_stream_end(s);
    return CUDA_SUCCESS;
}
