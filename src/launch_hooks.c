/* Owns the kernel launch hooks. Nothing is split yet: a kernel whose module
 * has per-GPU copies runs whole from the home GPU's copy (program_modules.c),
 * any other as the program launched it. With statistics on, each launch is
 * counted, given the reason it was not split, and timed with events on its
 * own stream. */
#include "hook_table.h"
#include "kernel_stats.h"
#include "kernel_timing.h"
#include "program_modules.h"
#include "real_driver.h"
#include "runtime.h"

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
    enum mgpu_unsplit_reason why; /* from the module copies */
};

static enum mgpu_unsplit_reason why_not_split(const struct launch_shape *s, bool capturing)
{
    if (s->cooperative)
        return MGPU_UNSPLIT_COOPERATIVE;
    if (s->cluster)
        return MGPU_UNSPLIT_CLUSTER;
    if (capturing)
        return MGPU_UNSPLIT_CAPTURE;
    return s->why;
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

/* Launches `call`, in which `fn`, `prm` and `ext` stand for the function,
 * parameters and extra of the launch: the module copy's where it has one,
 * else the program's `f`, `params` and `extra`. */
#define OBSERVED_LAUNCH(shape, f_, params_, extra_, call)                                          \
    do {                                                                                           \
        struct mgpu_copy_launch copy;                                                              \
        bool from_copy = mgpu_copy_launch_prepare((f_), (shape).stream, (shape).grid, (params_),   \
                                                  (extra_), &copy, &(shape).why);                  \
        CUfunction fn = from_copy ? copy.fn : (f_);                                                \
        void **prm = from_copy ? copy.params : (params_);                                          \
        void **ext = from_copy ? copy.extra : (extra_);                                            \
        CUresult launch_result;                                                                    \
        if (!mgpu_stats_enabled) {                                                                 \
            launch_result = call;                                                                  \
        } else {                                                                                   \
            struct launch_record record;                                                           \
            before_launch(&(shape), &record);                                                      \
            launch_result = call;                                                                  \
            after_launch(&(shape), &record, launch_result);                                        \
        }                                                                                          \
        if (from_copy)                                                                             \
            mgpu_copy_launch_done(&copy, launch_result);                                           \
        (void)ext;                                                                                 \
        return launch_result;                                                                      \
    } while (0)

static CUresult CUDAAPI hook_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                            unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                            CUstream s, void **params, void **extra)
{
    MGPU_COUNT_CALL(cuLaunchKernel);
    struct launch_shape shape = LAUNCH_SHAPE(f, gx, gy, gz, bx, by, bz, s);
    OBSERVED_LAUNCH(shape, f, params, extra,
                    real_cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, shared, s, prm, ext));
}

static CUresult CUDAAPI hook_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                 unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                                 unsigned shared, CUstream s, void **params,
                                                 void **extra)
{
    MGPU_COUNT_CALL(cuLaunchKernel_ptsz);
    struct launch_shape shape = LAUNCH_SHAPE(f, gx, gy, gz, bx, by, bz, per_thread(s));
    OBSERVED_LAUNCH(shape, f, params, extra,
                    real_cuLaunchKernel_ptsz(fn, gx, gy, gz, bx, by, bz, shared, s, prm, ext));
}

static CUresult CUDAAPI hook_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
                                                       unsigned gz, unsigned bx, unsigned by,
                                                       unsigned bz, unsigned shared, CUstream s,
                                                       void **params)
{
    MGPU_COUNT_CALL(cuLaunchCooperativeKernel);
    struct launch_shape shape = LAUNCH_SHAPE(f, gx, gy, gz, bx, by, bz, s);
    shape.cooperative = true;
    OBSERVED_LAUNCH(shape, f, params, NULL,
                    real_cuLaunchCooperativeKernel(fn, gx, gy, gz, bx, by, bz, shared, s, prm));
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
        shape, f, params, NULL,
        real_cuLaunchCooperativeKernel_ptsz(fn, gx, gy, gz, bx, by, bz, shared, s, prm));
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
    if (config == NULL)
        return real_cuLaunchKernelEx(config, f, params, extra);
    struct launch_shape shape = shape_of_config(config, f, false);
    OBSERVED_LAUNCH(shape, f, params, extra, real_cuLaunchKernelEx(config, fn, prm, ext));
}

static CUresult CUDAAPI hook_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                                   void **params, void **extra)
{
    MGPU_COUNT_CALL(cuLaunchKernelEx_ptsz);
    if (config == NULL)
        return real_cuLaunchKernelEx_ptsz(config, f, params, extra);
    struct launch_shape shape = shape_of_config(config, f, true);
    OBSERVED_LAUNCH(shape, f, params, extra, real_cuLaunchKernelEx_ptsz(config, fn, prm, ext));
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
