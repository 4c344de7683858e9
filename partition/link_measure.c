/* Owns the measurement of copy bandwidth between devices (see
 * link_measure.h). All driver calls go to the real driver; the caller's
 * current context is left as it was. */
#include "partition/link_measure.h"

#include "base/real_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct device_side {
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr src, dst;
    CUstream stream;
    CUevent start, stop;
};

/* The measurement's memory kept to the end (mgpu_link_measure with
 * keep_memory): cuMemFree waits for the whole device, and a measurement
 * made inside the program's launch must not wait for its queued work,
 * which may wait for the launching thread itself. */
static struct kept_memory {
    CUcontext ctx; /* retained */
    CUdevice dev;
    CUdeviceptr src, dst;
} kept[MGPU_MAX_GPUS];
static int nkept;

static void release(struct device_side *d, bool keep_memory)
{
    if (d->ctx == NULL)
        return;
    if (keep_memory && (d->src || d->dst) && nkept < MGPU_MAX_GPUS) {
        kept[nkept++] = (struct kept_memory){d->ctx, d->dev, d->src, d->dst};
        if (mgpu_drv.cuDevicePrimaryCtxRetain(&d->ctx, d->dev) != CUDA_SUCCESS)
            nkept--; /* without a retain of its own the context may go: free now */
        else
            d->src = d->dst = 0;
    }
    if (mgpu_drv.cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS) {
        if (d->src)
            mgpu_drv.cuMemFree(d->src);
        if (d->dst)
            mgpu_drv.cuMemFree(d->dst);
        if (d->start)
            mgpu_drv.cuEventDestroy(d->start);
        if (d->stop)
            mgpu_drv.cuEventDestroy(d->stop);
        if (d->stream)
            mgpu_drv.cuStreamDestroy(d->stream);
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
    }
    mgpu_drv.cuDevicePrimaryCtxRelease(d->dev);
}

/* Each device's memory, stream and events; its source filled with ones
 * (never time on zeros) by a set in its stream, unless `fill_later`:
 * the busy home GPU's, which fill_from_peer fills. */
static CUresult prepare(struct device_side *d, int device, bool fill_later)
{
    memset(d, 0, sizeof *d);
    CUresult r = mgpu_drv.cuDeviceGet(&d->dev, device);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
    if (r != CUDA_SUCCESS) {
        d->ctx = NULL;
        return r;
    }
    r = mgpu_drv.cuCtxPushCurrent(d->ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = mgpu_drv.cuMemAlloc(&d->src, MGPU_LINK_MEASURE_BYTES);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemAlloc(&d->dst, MGPU_LINK_MEASURE_BYTES);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS && !fill_later)
        r = mgpu_drv.cuMemsetD32Async(d->src, 0x3f800000u, MGPU_LINK_MEASURE_BYTES / 4, d->stream);
    if (r == CUDA_SUCCESS && !fill_later)
        r = mgpu_drv.cuStreamSynchronize(d->stream);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuEventCreate(&d->start, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuEventCreate(&d->stop, CU_EVENT_DEFAULT);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return r;
}

/* The busy home GPU's source, filled from another device's by that
 * device's copy engine: a set would be a kernel, which on the home GPU
 * waits behind the program's kernels (on 4 x H200 the measurement took
 * 255 ms, two of SGEMM's 126 ms launches), and a copy from pageable host
 * memory waits for the program's stream there (gpu-exit-paths: a host
 * function holding that stream kept the measurement, and the program's
 * exit, waiting). */
static CUresult fill_from_peer(struct device_side *home, struct device_side *other)
{
    CUresult r = mgpu_drv.cuCtxPushCurrent(other->ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = mgpu_drv.cuMemcpyPeerAsync(home->src, home->ctx, other->src, other->ctx,
                                   MGPU_LINK_MEASURE_BYTES, other->stream);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuStreamSynchronize(other->stream);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return r;
}

/* The best of three copies from `from`'s memory into `to`'s, in GB/s. */
static CUresult time_copies(struct device_side *from, struct device_side *to, double *gbps)
{
    CUresult r = mgpu_drv.cuCtxPushCurrent(to->ctx);
    if (r != CUDA_SUCCESS)
        return r;
    float best_ms = 0;
    for (int rep = 0; rep < 3 && r == CUDA_SUCCESS; rep++) {
        r = mgpu_drv.cuEventRecord(to->start, to->stream);
        if (r == CUDA_SUCCESS)
            r = from == to ? mgpu_drv.cuMemcpyDtoDAsync(to->dst, from->src, MGPU_LINK_MEASURE_BYTES,
                                                        to->stream)
                           : mgpu_drv.cuMemcpyPeerAsync(to->dst, to->ctx, from->src, from->ctx,
                                                        MGPU_LINK_MEASURE_BYTES, to->stream);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuEventRecord(to->stop, to->stream);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuEventSynchronize(to->stop);
        float ms = 0;
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuEventElapsedTime(&ms, to->start, to->stop);
        if (r == CUDA_SUCCESS && ms > 0 && (best_ms == 0 || ms < best_ms))
            best_ms = ms;
    }
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    if (r == CUDA_SUCCESS && best_ms <= 0)
        r = CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS)
        *gbps = (double)MGPU_LINK_MEASURE_BYTES / (best_ms * 1e-3) / 1e9;
    return r;
}

/* For each device, the one whose copies within itself are timed for it:
 * itself, except the first where it is busy (the home GPU, whose kernels
 * the program is running: a copy within a device is a kernel, and it would
 * wait behind them) and another device of the same name can stand for it. */
static void local_stand_ins(const int *devices, int n, bool first_busy, int stand_in[])
{
    char first[128] = "", name[128];
    CUdevice dev;
    for (int a = 0; a < n; a++)
        stand_in[a] = a;
    if (!first_busy || n < 2 || mgpu_drv.cuDeviceGetName == NULL ||
        mgpu_drv.cuDeviceGet(&dev, devices[0]) != CUDA_SUCCESS ||
        mgpu_drv.cuDeviceGetName(first, sizeof first, dev) != CUDA_SUCCESS)
        return;
    for (int a = 1; a < n; a++)
        if (mgpu_drv.cuDeviceGet(&dev, devices[a]) == CUDA_SUCCESS &&
            mgpu_drv.cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS &&
            strcmp(name, first) == 0) {
            stand_in[0] = a;
            return;
        }
}

void mgpu_link_measure_release(void)
{
    for (int i = 0; i < nkept; i++) {
        struct kept_memory *k = &kept[i];
        if (mgpu_drv.cuCtxPushCurrent(k->ctx) == CUDA_SUCCESS) {
            if (k->src)
                mgpu_drv.cuMemFree(k->src);
            if (k->dst)
                mgpu_drv.cuMemFree(k->dst);
            CUcontext popped;
            mgpu_drv.cuCtxPopCurrent(&popped);
        }
        mgpu_drv.cuDevicePrimaryCtxRelease(k->dev);
    }
    nkept = 0;
}

int mgpu_link_measure(const int *devices, int n, bool first_busy, bool keep_memory,
                      const atomic_bool *stop, double gbps[][MGPU_MAX_GPUS], char *err,
                      size_t errlen)
{
    if (n < 1 || n > MGPU_MAX_GPUS) {
        snprintf(err, errlen, "no devices to measure");
        return -1;
    }
    /* Entry points the driver table may lack (the fake GPU has no peer
     * copy): said, not called through a null pointer. */
    if (mgpu_drv.cuMemAlloc == NULL || mgpu_drv.cuMemFree == NULL ||
        mgpu_drv.cuStreamCreate == NULL || mgpu_drv.cuMemsetD32Async == NULL ||
        mgpu_drv.cuMemcpyDtoDAsync == NULL || (n > 1 && mgpu_drv.cuMemcpyPeerAsync == NULL)) {
        snprintf(err, errlen, "the driver lacks a copy or allocation call the measurement uses");
        return -1;
    }
    struct device_side sides[MGPU_MAX_GPUS];
    memset(sides, 0, sizeof sides);
    CUresult r = CUDA_SUCCESS;
    int prepared = 0, failed_at = -1;
    bool stopped = false;
    /* The busy home GPU's source waits for another device's (n > 1). */
    bool home_from_peer = first_busy && n > 1;
    for (; prepared < n && r == CUDA_SUCCESS && !(stopped = stop && atomic_load(stop));
         prepared++) {
        r = prepare(&sides[prepared], devices[prepared], prepared == 0 && home_from_peer);
        if (r != CUDA_SUCCESS)
            failed_at = devices[prepared];
    }
    if (r == CUDA_SUCCESS && !stopped && home_from_peer) {
        r = fill_from_peer(&sides[0], &sides[1]);
        if (r != CUDA_SUCCESS)
            failed_at = devices[0];
    }
    int stand_in[MGPU_MAX_GPUS];
    local_stand_ins(devices, n, first_busy, stand_in);
    for (int a = 0; a < n && r == CUDA_SUCCESS && !stopped; a++)
        for (int b = 0; b < n && r == CUDA_SUCCESS && !(stopped = stop && atomic_load(stop)); b++) {
            if (a == b && stand_in[a] != a)
                continue;
            r = time_copies(&sides[a], &sides[b], &gbps[a][b]);
            if (r != CUDA_SUCCESS)
                failed_at = devices[b];
        }
    for (int a = 0; a < n; a++)
        if (stand_in[a] != a)
            gbps[a][a] = gbps[stand_in[a]][stand_in[a]];
    for (int i = 0; i < prepared; i++)
        release(&sides[i], keep_memory);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "measuring copies to device %d failed (%s)", failed_at,
                 mgpu_cu_error_name(r));
        return -1;
    }
    if (stopped) {
        snprintf(err, errlen, "the measurement was stopped (the program is ending)");
        return -1;
    }
    return 0;
}
