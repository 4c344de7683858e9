/* Owns the fake GPU's contexts: one primary context per device (retained
 * and released, its handle the same for the whole run, as the driver's),
 * contexts made with cuCtxCreate, each thread's stack of current contexts,
 * and peer access between contexts of distinct devices. A thread with no
 * current context works in device 0's primary context, which is what the
 * tests written for the old stand-in driver (one context, always current)
 * expect. */
#include "fake_gpu.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STACK_DEPTH 64

static struct fake_context primaries[FAKE_MAX_DEVICES];
static pthread_mutex_t primaries_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_handles created = FAKE_HANDLES_INIT;
static _Thread_local struct fake_context *stack[STACK_DEPTH];
static _Thread_local int depth;

/* Device d's primary context, its default stream made on first use. */
static struct fake_context *primary(CUdevice d)
{
    struct fake_context *c = &primaries[d];
    pthread_mutex_lock(&primaries_lock);
    if (c->null_stream == NULL) {
        c->device = d;
        c->primary = true;
        c->null_stream = fake_stream_make_default(c);
    }
    pthread_mutex_unlock(&primaries_lock);
    return c;
}

struct fake_context *fake_context_of(CUcontext ctx)
{
    struct fake_context *c = (struct fake_context *)ctx;
    if (c >= primaries && c < primaries + fake_visible_count)
        return primary((CUdevice)(c - primaries));
    return fake_handles_has(&created, c) ? c : NULL;
}

struct fake_context *fake_context_current(void)
{
    return depth > 0 ? stack[depth - 1] : primary(0);
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    FAKE_ENTER_INIT("cuCtxGetCurrent", CUDA_ERROR_INVALID_CONTEXT);
    *ctx = (CUcontext)fake_context_current();
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    FAKE_ENTER_INIT("cuCtxSetCurrent", CUDA_ERROR_INVALID_CONTEXT);
    if (ctx == NULL) {
        if (depth > 0)
            depth--;
        return CUDA_SUCCESS;
    }
    struct fake_context *c = fake_context_of(ctx);
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == 0)
        depth = 1;
    stack[depth - 1] = c;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    FAKE_ENTER_INIT("cuCtxPushCurrent_v2", CUDA_ERROR_INVALID_CONTEXT);
    struct fake_context *c = fake_context_of(ctx);
    if (c == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == STACK_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = c;
    return CUDA_SUCCESS;
}

/* Not counted and never failed: after a push it cannot fail, and a pop
 * that failed there would be no driver's behaviour. */
FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (ctx != NULL)
        *ctx = (CUcontext)stack[depth];
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
    FAKE_ENTER_INIT("cuCtxGetDevice", CUDA_ERROR_INVALID_CONTEXT);
    *dev = fake_context_current()->device;
    return CUDA_SUCCESS;
}

/* FAKE_CUDA_CONTEXT_MS: making the primary context of a device other than
 * device 0 takes that long, the first time (a real one takes about 0.1 s,
 * and the driver makes one at a time). */
static void making_takes_time(void)
{
    static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
    const char *ms = getenv("FAKE_CUDA_CONTEXT_MS");
    long wait = ms != NULL ? atol(ms) : 0;
    if (wait <= 0)
        return;
    pthread_mutex_lock(&one_at_a_time);
    struct timespec t = {wait / 1000, (wait % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0)
        ;
    pthread_mutex_unlock(&one_at_a_time);
}

/* FAKE_CUDA_SYNC_MS: a context's synchronisation takes that long, as if
 * that much work were queued in it. */
static void queued_work(void)
{
    const char *ms = getenv("FAKE_CUDA_SYNC_MS");
    long wait = ms != NULL ? atol(ms) : 0;
    if (wait > 0) {
        struct timespec t = {wait / 1000, (wait % 1000) * 1000000L};
        while (nanosleep(&t, &t) != 0)
            ;
    }
}

FAKE_EXPORT CUresult cuCtxSynchronize(void)
{
    FAKE_ENTER_INIT("cuCtxSynchronize", CUDA_ERROR_UNKNOWN);
    queued_work();
    fake_wait_for_held_streams("cuCtxSynchronize");
    return atomic_load(&fake_context_current()->sticky);
}

FAKE_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    FAKE_ENTER_INIT("cuCtxSynchronize_v2", CUDA_ERROR_UNKNOWN);
    queued_work();
    fake_wait_for_held_streams("cuCtxSynchronize_v2");
    struct fake_context *c = ctx != NULL ? fake_context_of(ctx) : fake_context_current();
    return c != NULL ? atomic_load(&c->sticky) : CUDA_ERROR_INVALID_CONTEXT;
}

FAKE_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned *version)
{
    FAKE_ENTER_INIT("cuCtxGetApiVersion", CUDA_ERROR_INVALID_CONTEXT);
    (void)ctx;
    *version = 3020;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetFlags(unsigned *flags)
{
    FAKE_ENTER_INIT("cuCtxGetFlags", CUDA_ERROR_INVALID_CONTEXT);
    *flags = 0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    FAKE_ENTER_INIT("cuCtxGetStreamPriorityRange", CUDA_ERROR_INVALID_CONTEXT);
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    FAKE_ENTER_INIT("cuDevicePrimaryCtxRetain", CUDA_ERROR_OUT_OF_MEMORY);
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    struct fake_context *c = primary(dev);
    pthread_mutex_lock(&primaries_lock);
    bool made = c->retains++ == 0 && !c->made_once;
    c->made_once = true;
    pthread_mutex_unlock(&primaries_lock);
    if (made && dev != 0)
        making_takes_time();
    fake_live(FAKE_PRIMARY_RETAIN, 1);
    *ctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

/* Releases take effect even when the call is the one made to fail: the
 * driver reports errors of earlier asynchronous work from such calls too,
 * and a release that did nothing would only be a leak of the fake's. */
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuDevicePrimaryCtxRelease_v2");
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    struct fake_context *c = primary(dev);
    pthread_mutex_lock(&primaries_lock);
    bool retained = c->retains > 0;
    if (retained)
        c->retains--;
    pthread_mutex_unlock(&primaries_lock);
    if (!retained)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_live(FAKE_PRIMARY_RETAIN, -1);
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    FAKE_ENTER_INIT("cuDevicePrimaryCtxReset_v2", CUDA_ERROR_UNKNOWN);
    return fake_device_valid(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    FAKE_ENTER_INIT("cuDevicePrimaryCtxGetState", CUDA_ERROR_UNKNOWN);
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    struct fake_context *c = primary(dev);
    pthread_mutex_lock(&primaries_lock);
    *active = c->retains > 0;
    pthread_mutex_unlock(&primaries_lock);
    *flags = 0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned flags)
{
    FAKE_ENTER_INIT("cuDevicePrimaryCtxSetFlags_v2", CUDA_ERROR_INVALID_VALUE);
    (void)flags;
    return fake_device_valid(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FAKE_EXPORT CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned flags, CUdevice dev)
{
    FAKE_ENTER_INIT("cuCtxCreate_v2", CUDA_ERROR_OUT_OF_MEMORY);
    (void)flags;
    if (!fake_device_valid(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    struct fake_context *c = calloc(1, sizeof *c);
    if (c == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->device = dev;
    c->null_stream = fake_stream_make_default(c);
    if (c->null_stream == NULL || depth == STACK_DEPTH || !fake_handles_add(&created, c)) {
        free(c->null_stream);
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_live(FAKE_CONTEXT, 1);
    stack[depth++] = c; /* a new context is made current */
    *ctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxCreate_v4(CUcontext *ctx, CUctxCreateParams *params, unsigned flags,
                                    CUdevice dev)
{
    (void)params;
    return cuCtxCreate_v2(ctx, flags, dev);
}

FAKE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuCtxDestroy_v2");
    struct fake_context *c = (struct fake_context *)ctx;
    if (!fake_handles_remove(&created, c))
        return CUDA_ERROR_INVALID_CONTEXT;
    for (int i = 0; i < depth; i++)
        if (stack[i] == c) {
            memmove(&stack[i], &stack[i + 1], (size_t)(depth - i - 1) * sizeof *stack);
            depth--;
            i--;
        }
    fake_live(FAKE_CONTEXT, -1);
    /* The context's memory is not reused: another thread may still hold
     * its handle, and a call with it must find it gone, not another. */
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
    FAKE_ENTER_INIT("cuCtxEnablePeerAccess", CUDA_ERROR_INVALID_VALUE);
    struct fake_context *c = fake_context_current(), *p = fake_context_of(peer);
    if (p == NULL || flags != 0)
        return p == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    if (p->device == c->device)
        return CUDA_ERROR_INVALID_DEVICE;
    if (fake_devices_listed("FAKE_CUDA_NO_PEER", c->device, p->device))
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    uint64_t bit = 1ull << p->device;
    if (atomic_fetch_or(&c->peers, bit) & bit)
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    return CUDA_SUCCESS;
}

/* For the tests: the devices whose memory context ctx's kernels may reach,
 * as bits; what the driver holds, whatever a program was told. */
FAKE_EXPORT uint64_t fake_context_peer_bits(CUcontext ctx);
uint64_t fake_context_peer_bits(CUcontext ctx)
{
    struct fake_context *c = fake_context_of(ctx);
    return c != NULL ? atomic_load(&c->peers) : 0;
}

FAKE_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    FAKE_ENTER_INIT("cuCtxDisablePeerAccess", CUDA_ERROR_INVALID_VALUE);
    struct fake_context *c = fake_context_current(), *p = fake_context_of(peer);
    if (p == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t bit = 1ull << p->device;
    if (!(atomic_fetch_and(&c->peers, ~bit) & bit))
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    return CUDA_SUCCESS;
}
