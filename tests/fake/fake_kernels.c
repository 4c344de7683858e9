/* Owns the fake GPU's kernel launches: checks a launch as the driver does
 * (a live function of the stream's context, a grid and block, parameters as
 * an array or an `extra` buffer), and runs the kernels of test_kernels.h on
 * the host, block by block and thread by thread, with 32-bit index
 * arithmetic as their PTX has. A function with mgpu's __mgpu_grid parameter
 * (a rewritten copy) is run as the rewritten PTX behaves: its blocks see
 * their place in the whole grid, and a rewritten grid-stride loop runs the
 * iteration range the parameter names; so results are right only if mgpu
 * split the launch right. A kernel that would touch memory outside the
 * device memory the fake gave out faults: its context's calls return
 * CUDA_ERROR_ILLEGAL_ADDRESS from then on, as on a GPU. Every kernel takes
 * 2 ms of the fake GPU clock; other kernels do nothing else. */
#include "fake_gpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

extern unsigned long fake_launches, fake_launches_ptsz;

struct launch {
    const struct fake_function *f;
    unsigned grid[3], block[3];
    void **params;
    const unsigned char *buffer;
    size_t buffer_size;
    struct fake_context *ctx;
};

/* Parameter i's bytes, or NULL when the buffer is too short. */
static const void *param(const struct launch *l, unsigned i)
{
    if (i >= l->f->nparams)
        return NULL;
    if (l->params != NULL)
        return l->params[i];
    if (l->f->offsets[i] + l->f->sizes[i] > l->buffer_size)
        return NULL;
    return l->buffer + l->f->offsets[i];
}

/* The grid as the kernel's blocks see it. */
struct grid_view {
    unsigned first[3], whole[3];
    bool iterations;
    uint32_t begin, end;
};

static bool grid_view(const struct launch *l, struct grid_view *v)
{
    memset(v, 0, sizeof *v);
    memcpy(v->whole, l->grid, sizeof v->whole);
    if (!l->f->grid_param)
        return true;
    const void *p = param(l, l->f->nparams - 1);
    if (p == NULL)
        return false;
    struct fake_grid_param g;
    memcpy(&g, p, sizeof g);
    memcpy(v->first, g.first, sizeof v->first);
    memcpy(v->whole, g.grid, sizeof v->whole);
    v->iterations = g.iteration_split != 0;
    /* The rewritten loop reads the low words (ld.param.u32). */
    v->begin = (uint32_t)g.iteration_begin;
    v->end = (uint32_t)g.iteration_end;
    return true;
}

static bool read_param(const struct launch *l, unsigned i, void *out, size_t size)
{
    const void *p = param(l, i);
    if (p == NULL || l->f->sizes[i] != size)
        return false;
    memcpy(out, p, size);
    return true;
}

static void fault(const struct launch *l, const char *what)
{
    fprintf(stderr, "fake GPU: kernel %s %s outside the device memory given out\n", l->f->name,
            what);
    CUresult none = CUDA_SUCCESS;
    atomic_compare_exchange_strong(&l->ctx->sticky, &none, CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* y[i] = a * x[i] + y[i] for i = blockIdx.x * blockDim.x + threadIdx.x < n. */
static CUresult run_axpy(const struct launch *l, const struct grid_view *v)
{
    uint64_t y, x;
    float a;
    uint32_t n;
    if (!read_param(l, 0, &y, 8) || !read_param(l, 1, &x, 8) || !read_param(l, 2, &a, 4) ||
        !read_param(l, 3, &n, 4))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t lo = (uint64_t)v->first[0] * l->block[0];
    uint64_t hi = lo + (uint64_t)l->grid[0] * l->block[0];
    if (hi > n)
        hi = n;
    if (lo < hi && (!fake_memory_valid(y + 4 * lo, 4 * (hi - lo)) ||
                    !fake_memory_valid(x + 4 * lo, 4 * (hi - lo)))) {
        fault(l, "reads or writes");
        return CUDA_SUCCESS;
    }
    float *yp = (float *)(uintptr_t)y;
    const float *xp = (const float *)(uintptr_t)x;
    for (unsigned bz = 0; bz < l->grid[2]; bz++)
        for (unsigned by = 0; by < l->grid[1]; by++)
            for (unsigned bx = 0; bx < l->grid[0]; bx++)
                for (unsigned t = 0; t < l->block[0] * l->block[1] * l->block[2]; t++) {
                    uint32_t tx = t % l->block[0];
                    uint32_t i = (bx + v->first[0]) * l->block[0] + tx;
                    if (i < n)
                        yp[i] = fmaf(xp[i], a, yp[i]);
                }
    return CUDA_SUCCESS;
}

/* p[i] = value + i for every i < n, as a grid-stride loop; rewritten, the
 * loop of a slice runs [begin, min(end, n)) stepping by the slice's
 * threads. */
static CUresult run_fill(const struct launch *l, const struct grid_view *v)
{
    uint64_t p;
    uint32_t value, n;
    if (!read_param(l, 0, &p, 8) || !read_param(l, 1, &value, 4) || !read_param(l, 2, &n, 4))
        return CUDA_ERROR_INVALID_VALUE;
    uint32_t end = v->iterations ? (v->end < n ? v->end : n) : n;
    uint32_t lo = v->iterations ? v->begin : v->first[0] * l->block[0];
    if (lo < end && !fake_memory_valid(p + 4 * (uint64_t)lo, 4 * (uint64_t)(end - lo))) {
        fault(l, "writes");
        return CUDA_SUCCESS;
    }
    uint32_t *out = (uint32_t *)(uintptr_t)p;
    uint32_t step = (v->iterations ? l->grid[0] : v->whole[0]) * l->block[0];
    for (unsigned bz = 0; bz < l->grid[2]; bz++)
        for (unsigned by = 0; by < l->grid[1]; by++)
            for (unsigned bx = 0; bx < l->grid[0]; bx++)
                for (unsigned t = 0; t < l->block[0] * l->block[1] * l->block[2]; t++) {
                    uint32_t tx = t % l->block[0];
                    uint32_t i = (bx + v->first[0]) * l->block[0] + tx;
                    if (v->iterations)
                        i = i - v->first[0] * l->block[0] + v->begin;
                    if (i >= end)
                        continue;
                    do {
                        out[i] = value + i;
                        i += step;
                    } while (i < end);
                }
    return CUDA_SUCCESS;
}

/* The parameter buffer of `extra`; false when it is malformed. */
static bool read_extra(void **extra, struct launch *l)
{
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            l->buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            l->buffer_size = *(const size_t *)extra[i + 1];
        else
            return false;
    }
    return l->buffer != NULL;
}

static CUresult launch(CUfunction fn, const unsigned grid[3], const unsigned block[3],
                       CUstream stream, void **params, void **extra)
{
    if (fake_function_is_magic(fn)) {
        fake_clock_advance(2000);
        return CUDA_SUCCESS;
    }
    struct launch l = {.f = fake_function_of(fn), .params = params};
    if (l.f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = CUDA_SUCCESS;
    struct fake_stream *s = fake_stream_of(stream, &r);
    if (s == NULL)
        return r;
    l.ctx = fake_stream_context(s);
    if (l.ctx != fake_function_context(l.f))
        return CUDA_ERROR_INVALID_HANDLE; /* a function of another context's module */
    for (int d = 0; d < 3; d++) {
        if (grid[d] == 0 || block[d] == 0)
            return CUDA_ERROR_INVALID_VALUE;
        l.grid[d] = grid[d];
        l.block[d] = block[d];
    }
    if ((uint64_t)block[0] * block[1] * block[2] > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if ((params != NULL && extra != NULL) ||
        (params == NULL && l.f->nparams > 0 && (extra == NULL || !read_extra(extra, &l))))
        return CUDA_ERROR_INVALID_VALUE;
    struct grid_view v;
    if (!grid_view(&l, &v))
        return CUDA_ERROR_INVALID_VALUE;
    fake_stream_begin(s);
    if (atomic_load(&l.ctx->sticky) == CUDA_SUCCESS) {
        if (l.f->code == FAKE_KERNEL_AXPY)
            r = run_axpy(&l, &v);
        else if (l.f->code == FAKE_KERNEL_FILL)
            r = run_fill(&l, &v);
    }
    if (r == CUDA_SUCCESS)
        fake_clock_advance(2000);
    fake_stream_end(s);
    return r;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shm, CUstream s,
                                    void **params, void **extra)
{
    FAKE_ENTER_INIT("cuLaunchKernel", CUDA_ERROR_INVALID_VALUE);
    (void)shm;
    CUresult r = launch(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, s, params, extra);
    if (r == CUDA_SUCCESS)
        fake_launches++;
    return r;
}

FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                         CUstream s, void **params, void **extra)
{
    FAKE_ENTER_INIT("cuLaunchKernel_ptsz", CUDA_ERROR_INVALID_VALUE);
    (void)shm;
    CUresult r = launch(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, s, params, extra);
    if (r == CUDA_SUCCESS)
        fake_launches_ptsz++;
    return r;
}

FAKE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                               CUstream s, void **params)
{
    FAKE_ENTER_INIT("cuLaunchCooperativeKernel", CUDA_ERROR_INVALID_VALUE);
    (void)shm;
    CUresult r = launch(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, s, params, NULL);
    if (r == CUDA_SUCCESS)
        fake_launches++;
    return r;
}

FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                                      void **extra)
{
    FAKE_ENTER_INIT("cuLaunchKernelEx", CUDA_ERROR_INVALID_VALUE);
    if (config == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = launch(f, (unsigned[3]){config->gridDimX, config->gridDimY, config->gridDimZ},
                        (unsigned[3]){config->blockDimX, config->blockDimY, config->blockDimZ},
                        config->hStream, params, extra);
    if (r == CUDA_SUCCESS)
        fake_launches++;
    return r;
}

FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                           void **params, void **extra)
{
    return cuLaunchKernelEx(config, f, params, extra);
}
