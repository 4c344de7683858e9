/* Owns the kernel launch hooks. Nothing is split yet: every launch goes to
 * the driver unchanged. With statistics on, each launch is counted, given the
 * reason it was not split, and timed with events on its own stream. */
#include "hook_table.h"
#include "kernel_stats.h"
#include "kernel_timing.h"
#include "real_driver.h"
#include "runtime.h"
#include "virtual_device.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdatomic.h>

MGPU_DECLARE_HOOK(cuLaunchKernel, PFN_cuLaunchKernel_v4000);
MGPU_DECLARE_HOOK(cuLaunchKernel_ptsz, PFN_cuLaunchKernel_v7000_ptsz);
MGPU_DECLARE_HOOK(cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060);
MGPU_DECLARE_HOOK(cuLaunchKernelEx_ptsz, PFN_cuLaunchKernelEx_v11060_ptsz);
MGPU_DECLARE_HOOK(cuLaunchCooperativeKernel, PFN_cuLaunchCooperativeKernel_v9000);
MGPU_DECLARE_HOOK(cuLaunchCooperativeKernel_ptsz, PFN_cuLaunchCooperativeKernel_v9000_ptsz);

struct launch_shape {
    const void *kernel;
    unsigned grid[3], block[3];
    CUstream stream; /* as the non-_ptsz functions take it */
    bool cooperative;
    bool cluster;
};

static enum mgpu_unsplit_reason why_not_split(const struct launch_shape *s, bool capturing)
{
    if (s->cooperative)
        return MGPU_UNSPLIT_COOPERATIVE;
    if (s->cluster)
        return MGPU_UNSPLIT_CLUSTER;
    if (capturing)
        return MGPU_UNSPLIT_CAPTURE;
    struct mgpu_gpu_summary gpus;
    if (mgpu_virtual_device_summary(&gpus) == 0 && gpus.gpu_count <= 1)
        return MGPU_UNSPLIT_ONE_GPU;
    return MGPU_UNSPLIT_NOT_BUILT;
}

struct launch_record {
    int kernel;
    bool capturing;
    struct mgpu_launch_timer timer;
};

static void before_launch(const struct launch_shape *s, struct launch_record *rec)
{
    mgpu_runtime_program_running();
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (mgpu_drv.cuStreamIsCapturing(s->stream, &capture) != CUDA_SUCCESS)
        capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    rec->capturing = capture != CU_STREAM_CAPTURE_STATUS_NONE;
    rec->kernel = mgpu_kernel_stats_find(s->kernel);
    rec->timer.active = false;
    if (!rec->capturing)
        mgpu_timing_begin(&rec->timer, rec->kernel, s->stream);
}

static void after_launch(const struct launch_shape *s, struct launch_record *rec, CUresult r)
{
    mgpu_timing_end(&rec->timer, s->stream, r);
    if (r == CUDA_SUCCESS)
        mgpu_kernel_stats_count_launch(rec->kernel, s->grid, s->block,
                                       why_not_split(s, rec->capturing));
}

/* The per-thread variants name the per-thread default stream NULL. */
static CUstream per_thread(CUstream s)
{
    return s == NULL ? CU_STREAM_PER_THREAD : s;
}

#define LAUNCH_SHAPE(f, gx, gy, gz, bx, by, bz, s)                                                 \
    {                                                                                              \
        .kernel = (f), .grid = {(gx), (gy), (gz)}, .block = {(bx), (by), (bz)}, .stream = (s)      \
    }

#define OBSERVED_LAUNCH(shape, call)                                                               \
    do {                                                                                           \
        if (!mgpu_stats_enabled)                                                                   \
            return call;                                                                           \
        struct launch_record record;                                                               \
        before_launch(&(shape), &record);                                                          \
        CUresult launch_result = call;                                                             \
        after_launch(&(shape), &record, launch_result);                                            \
        return launch_result;                                                                      \
    } while (0)

static CUresult CUDAAPI hook_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                            unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                            CUstream s, void **params, void **extra)
{
    MGPU_COUNT_CALL(cuLaunchKernel);
    struct launch_shape shape = LAUNCH_SHAPE(f, gx, gy, gz, bx, by, bz, s);
    OBSERVED_LAUNCH(shape,
                    real_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra));
}

static CUresult CUDAAPI hook_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                 unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                                 unsigned shared, CUstream s, void **params,
                                                 void **extra)
{
    MGPU_COUNT_CALL(cuLaunchKernel_ptsz);
    struct launch_shape shape = LAUNCH_SHAPE(f, gx, gy, gz, bx, by, bz, per_thread(s));
    OBSERVED_LAUNCH(shape,
                    real_cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared, s, params, extra));
}

static CUresult CUDAAPI hook_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
                                                       unsigned gz, unsigned bx, unsigned by,
                                                       unsigned bz, unsigned shared, CUstream s,
                                                       void **params)
{
    MGPU_COUNT_CALL(cuLaunchCooperativeKernel);
    struct launch_shape shape = LAUNCH_SHAPE(f, gx, gy, gz, bx, by, bz, s);
    shape.cooperative = true;
    OBSERVED_LAUNCH(shape,
                    real_cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shared, s, params));
}

static CUresult CUDAAPI hook_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                            unsigned gz, unsigned bx, unsigned by,
                                                            unsigned bz, unsigned shared,
                                                            CUstream s, void **params)
{
    MGPU_COUNT_CALL(cuLaunchCooperativeKernel_ptsz);
    struct launch_shape shape = LAUNCH_SHAPE(f, gx, gy, gz, bx, by, bz, per_thread(s));
    shape.cooperative = true;
    OBSERVED_LAUNCH(
        shape, real_cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared, s, params));
}

static struct launch_shape shape_of_config(const CUlaunchConfig *c, CUfunction f, bool ptsz)
{
    struct launch_shape shape =
        LAUNCH_SHAPE(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                     c->blockDimZ, ptsz ? per_thread(c->hStream) : c->hStream);
    for (unsigned i = 0; c->attrs != NULL && i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a->value.cooperative)
            shape.cooperative = true;
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION &&
            a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z > 1)
            shape.cluster = true;
    }
    return shape;
}

static CUresult CUDAAPI hook_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                              void **params, void **extra)
{
    MGPU_COUNT_CALL(cuLaunchKernelEx);
    if (!mgpu_stats_enabled || config == NULL)
        return real_cuLaunchKernelEx(config, f, params, extra);
    struct launch_shape shape = shape_of_config(config, f, false);
    OBSERVED_LAUNCH(shape, real_cuLaunchKernelEx(config, f, params, extra));
}

static CUresult CUDAAPI hook_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                                   void **params, void **extra)
{
    MGPU_COUNT_CALL(cuLaunchKernelEx_ptsz);
    if (!mgpu_stats_enabled || config == NULL)
        return real_cuLaunchKernelEx_ptsz(config, f, params, extra);
    struct launch_shape shape = shape_of_config(config, f, true);
    OBSERVED_LAUNCH(shape, real_cuLaunchKernelEx_ptsz(config, f, params, extra));
}

const struct mgpu_hook mgpu_launch_hooks[] = {
    MGPU_HOOK(cuLaunchKernel),
    MGPU_HOOK(cuLaunchKernel_ptsz),
    MGPU_HOOK(cuLaunchKernelEx),
    MGPU_HOOK(cuLaunchKernelEx_ptsz),
    MGPU_HOOK(cuLaunchCooperativeKernel),
    MGPU_HOOK(cuLaunchCooperativeKernel_ptsz),
    MGPU_HOOK_END,
};
