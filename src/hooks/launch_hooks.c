/* Owns the kernel launch hooks: each describes the program's launch
 * (struct mgpu_launch) and hands it to the launch pipeline
 * (sched/launch.c), with the driver's own entry point to launch it whole. */
#include "sched/launch.h"
#include "src/hooks/hook_table.h"
#include "src/runtime.h"

#include <cuda.h>
#include <cudaTypedefs.h>

MGPU_DECLARE_HOOK(cuLaunchKernel, PFN_cuLaunchKernel_v4000);
MGPU_DECLARE_HOOK(cuLaunchKernel_ptsz, PFN_cuLaunchKernel_v7000_ptsz);
MGPU_DECLARE_HOOK(cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060);
MGPU_DECLARE_HOOK(cuLaunchKernelEx_ptsz, PFN_cuLaunchKernelEx_v11060_ptsz);
MGPU_DECLARE_HOOK(cuLaunchCooperativeKernel, PFN_cuLaunchCooperativeKernel_v9000);
MGPU_DECLARE_HOOK(cuLaunchCooperativeKernel_ptsz, PFN_cuLaunchCooperativeKernel_v9000_ptsz);

/* The stream the program passed: the _ptsz entry points take NULL as the
 * per-thread default stream, which the pipeline is told as such. */
static CUstream as_passed(const struct mgpu_launch *l)
{
    return l->stream == CU_STREAM_PER_THREAD ? NULL : l->stream;
}

/* The driver's launch of each hook, with the function, parameters and
 * extra the pipeline chose. */
static CUresult whole_kernel(const struct mgpu_launch *l, CUfunction fn, void **prm, void **ext)
{
    return real_cuLaunchKernel(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                               l->block[2], l->shared_bytes, l->stream, prm, ext);
}

static CUresult whole_kernel_ptsz(const struct mgpu_launch *l, CUfunction fn, void **prm,
                                  void **ext)
{
    return real_cuLaunchKernel_ptsz(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                    l->block[1], l->block[2], l->shared_bytes, as_passed(l), prm,
                                    ext);
}

static CUresult whole_cooperative(const struct mgpu_launch *l, CUfunction fn, void **prm,
                                  void **ext)
{
    (void)ext;
    return real_cuLaunchCooperativeKernel(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                          l->block[1], l->block[2], l->shared_bytes, l->stream,
                                          prm);
}

static CUresult whole_cooperative_ptsz(const struct mgpu_launch *l, CUfunction fn, void **prm,
                                       void **ext)
{
    (void)ext;
    return real_cuLaunchCooperativeKernel_ptsz(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                               l->block[1], l->block[2], l->shared_bytes,
                                               as_passed(l), prm);
}

static CUresult whole_ex(const struct mgpu_launch *l, CUfunction fn, void **prm, void **ext)
{
    return real_cuLaunchKernelEx(l->config, fn, prm, ext);
}

static CUresult whole_ex_ptsz(const struct mgpu_launch *l, CUfunction fn, void **prm, void **ext)
{
    return real_cuLaunchKernelEx_ptsz(l->config, fn, prm, ext);
}

/* What every hook does first: the report's exit work is registered at
 * the program's first launch. */
static void starting(void)
{
    if (mgpu_stats_enabled)
        mgpu_runtime_program_running();
}

static CUresult CUDAAPI hook_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                            unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                            CUstream s, void **params, void **extra)
{
    MGPU_HOOK_ENTRY(cuLaunchKernel);
    starting();
    struct mgpu_launch l = {f,     {gx, gy, gz}, {bx, by, bz}, shared, s,
                            false, false,        params,       extra,  NULL};
    return mgpu_launch(&l, whole_kernel);
}

static CUresult CUDAAPI hook_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                 unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                                 unsigned shared, CUstream s, void **params,
                                                 void **extra)
{
    MGPU_HOOK_ENTRY(cuLaunchKernel_ptsz);
    starting();
    struct mgpu_launch l = {f,     {gx, gy, gz}, {bx, by, bz}, shared, mgpu_per_thread_stream(s),
                            false, false,        params,       extra,  NULL};
    return mgpu_launch(&l, whole_kernel_ptsz);
}

static CUresult CUDAAPI hook_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
                                                       unsigned gz, unsigned bx, unsigned by,
                                                       unsigned bz, unsigned shared, CUstream s,
                                                       void **params)
{
    MGPU_HOOK_ENTRY(cuLaunchCooperativeKernel);
    starting();
    struct mgpu_launch l = {f,    {gx, gy, gz}, {bx, by, bz}, shared, s,
                            true, false,        params,       NULL,   NULL};
    return mgpu_launch(&l, whole_cooperative);
}

static CUresult CUDAAPI hook_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                            unsigned gz, unsigned bx, unsigned by,
                                                            unsigned bz, unsigned shared,
                                                            CUstream s, void **params)
{
    MGPU_HOOK_ENTRY(cuLaunchCooperativeKernel_ptsz);
    starting();
    struct mgpu_launch l = {f,    {gx, gy, gz}, {bx, by, bz}, shared, mgpu_per_thread_stream(s),
                            true, false,        params,       NULL,   NULL};
    return mgpu_launch(&l, whole_cooperative_ptsz);
}

/* cuLaunchKernelEx's launch: its shape, and its attributes that keep a
 * launch whole. */
static struct mgpu_launch launch_of_config(const CUlaunchConfig *c, CUfunction f, void **params,
                                           void **extra, bool ptsz)
{
    struct mgpu_launch l = {.function = f,
                            .grid = {c->gridDimX, c->gridDimY, c->gridDimZ},
                            .block = {c->blockDimX, c->blockDimY, c->blockDimZ},
                            .shared_bytes = c->sharedMemBytes,
                            .stream = ptsz ? mgpu_per_thread_stream(c->hStream) : c->hStream,
                            .params = params,
                            .extra = extra,
                            .config = c};
    for (unsigned i = 0; c->attrs != NULL && i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a->value.cooperative)
            l.cooperative = true;
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION &&
            a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z > 1)
            l.cluster = true;
    }
    return l;
}

static CUresult CUDAAPI hook_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                              void **params, void **extra)
{
    MGPU_HOOK_ENTRY(cuLaunchKernelEx);
    if (config == NULL)
        return real_cuLaunchKernelEx(config, f, params, extra);
    starting();
    struct mgpu_launch l = launch_of_config(config, f, params, extra, false);
    return mgpu_launch(&l, whole_ex);
}

static CUresult CUDAAPI hook_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                                   void **params, void **extra)
{
    MGPU_HOOK_ENTRY(cuLaunchKernelEx_ptsz);
    if (config == NULL)
        return real_cuLaunchKernelEx_ptsz(config, f, params, extra);
    starting();
    struct mgpu_launch l = launch_of_config(config, f, params, extra, true);
    return mgpu_launch(&l, whole_ex_ptsz);
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
