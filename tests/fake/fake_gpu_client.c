/* A driver-API program for the fake GPU (and a real one): allocates buffers
 * of several sizes (some over 2 MiB, so that mgpu's pool spreads them over
 * the GPUs), copies data in, loads the PTX of test_kernels.h, launches axpy
 * (parameters as an array) and the grid-stride fill (parameters as an
 * `extra` buffer) with grids that split, copies the results out and checks
 * every element against the answer computed here. Then it frees everything
 * it made. On a driver error it prints one line, "error: cuXxx returned
 * CUDA_ERROR_NAME", still frees what it made, and exits 1; on success it
 * prints "fake_gpu_client: results correct" and exits 0. */
#include "test_kernels.h"

#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AXPY_COUNT 600000u  /* 2.4 MB per buffer: two 2 MiB granules */
#define SMALL_COUNT 1000u   /* 4 KB: mgpu's sub-allocator */
#define FILL_COUNT 2200001u /* 8.8 MB: copies of it are split by owner (8 MiB up) */
#define FILL_VALUE 7u
#define BLOCK 256u

static bool failed;

/* Reports the first failed call; later failures (while cleaning up after
 * it) stay quiet, so that a failure is one line. */
static bool ok(const char *call, CUresult r)
{
    if (r == CUDA_SUCCESS)
        return true;
    if (!failed) {
        const char *name = NULL;
        if (cuGetErrorName(r, &name) == CUDA_SUCCESS && name != NULL)
            printf("error: %s returned %s\n", call, name);
        else
            printf("error: %s returned CUDA_ERROR_%d\n", call, (int)r);
    }
    failed = true;
    return false;
}

/* Calls `fn` and reports a failure under the call's own name (cuMemAlloc,
 * not cuda.h's cuMemAlloc_v2). */
#define TRY(fn, args) ok(#fn, fn args)

struct buffers {
    CUdeviceptr x, y, small_x, small_y, fill;
    unsigned *pinned;
};

static bool check_results(const float *x, const float *y0, const float *y, const float *sx,
                          const float *sy0, const float *sy, const unsigned *filled, float a)
{
    for (unsigned i = 0; i < AXPY_COUNT; i++)
        if (y[i] != fmaf(x[i], a, y0[i])) {
            printf("wrong: axpy element %u is %g, not %g\n", i, y[i], fmaf(x[i], a, y0[i]));
            return false;
        }
    for (unsigned i = 0; i < SMALL_COUNT; i++)
        if (sy[i] != fmaf(sx[i], a, sy0[i])) {
            printf("wrong: small axpy element %u is %g, not %g\n", i, sy[i],
                   fmaf(sx[i], a, sy0[i]));
            return false;
        }
    for (unsigned i = 0; i < FILL_COUNT; i++)
        if (filled[i] != FILL_VALUE + i) {
            printf("wrong: fill element %u is %u, not %u\n", i, filled[i], FILL_VALUE + i);
            return false;
        }
    return true;
}

/* With FAKE_CLIENT_BIND_NCCL (a library named libnccl*), between two
 * launches: the program loads NCCL after mgpu made its mirrors and binds
 * and calls a function of it; with FAKE_CLIENT_NCCL_COMM=1 it also makes
 * a communicator, with which NCCL could write its buffers. */
static void bind_nccl_late(void)
{
    const char *path = getenv("FAKE_CLIENT_BIND_NCCL");
    if (path == NULL)
        return;
    void *lib = dlopen(path, RTLD_NOW);
    int (*version)(int *) = lib ? (int (*)(int *))dlsym(lib, "ncclGetVersion") : NULL;
    int (*init_all)(void **, int, const int *) =
        lib ? (int (*)(void **, int, const int *))dlsym(lib, "ncclCommInitAll") : NULL;
    int v = 0;
    void *comm = NULL;
    const char *make = getenv("FAKE_CLIENT_NCCL_COMM");
    if (lib == NULL || dlsym(lib, "nccl_probe_lookup") == NULL || version == NULL ||
        init_all == NULL || version(&v) != 0 ||
        (make != NULL && strcmp(make, "1") == 0 && (init_all(&comm, 1, NULL) != 0 || !comm))) {
        printf("error: %s is not the NCCL probe\n", path);
        failed = true;
    }
}

/* Everything between making the objects and freeing them. */
static bool run(CUstream stream, CUevent start, CUevent end, CUfunction axpy, CUfunction fill,
                struct buffers *b, bool *correct)
{
    float *x = malloc(AXPY_COUNT * sizeof *x), *y0 = malloc(AXPY_COUNT * sizeof *y0);
    float *y = malloc(AXPY_COUNT * sizeof *y);
    float sx[SMALL_COUNT], sy0[SMALL_COUNT], sy[SMALL_COUNT];
    bool done = false;
    const float a = 1.5f;
    if (x == NULL || y0 == NULL || y == NULL) {
        printf("error: out of host memory\n");
        failed = true;
        goto out;
    }
    for (unsigned i = 0; i < AXPY_COUNT; i++) {
        x[i] = (float)(i % 1000) * 0.25f;
        y0[i] = (float)(i % 77) - 3.0f;
    }
    for (unsigned i = 0; i < SMALL_COUNT; i++) {
        sx[i] = (float)i;
        sy0[i] = 2.0f * (float)i + 1.0f;
    }
    size_t big = AXPY_COUNT * sizeof(float), small = SMALL_COUNT * sizeof(float);
    if (!TRY(cuMemcpyHtoD, (b->x, x, big)) || !TRY(cuMemcpyHtoDAsync, (b->y, y0, big, stream)) ||
        !TRY(cuMemcpyHtoD, (b->small_x, sx, small)) ||
        !TRY(cuMemcpyHtoD, (b->small_y, sy0, small)) ||
        !TRY(cuMemsetD32Async, (b->fill, 0xdeadbeef, FILL_COUNT, stream)))
        goto out;

    unsigned n = AXPY_COUNT, small_n = SMALL_COUNT;
    float a_param = a;
    void *axpy_params[] = {&b->y, &b->x, &a_param, &n};
    void *small_params[] = {&b->small_y, &b->small_x, &a_param, &small_n};
    /* The fill's parameters as one buffer, laid out as its PTX says. */
    struct {
        CUdeviceptr p;
        unsigned value, n;
    } fill_buffer = {b->fill, FILL_VALUE, FILL_COUNT};
    size_t fill_size = sizeof fill_buffer;
    void *fill_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &fill_buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                          &fill_size, CU_LAUNCH_PARAM_END};
    unsigned axpy_blocks = (AXPY_COUNT + BLOCK - 1) / BLOCK;
    /* The fill's grid; FAKE_CLIENT_FILL_BLOCKS sets it to test the fill's
     * cut against a device's capacity. */
    const char *fill_env = getenv("FAKE_CLIENT_FILL_BLOCKS");
    unsigned fill_blocks = fill_env ? (unsigned)strtoul(fill_env, NULL, 10) : 97;
    /* FAKE_CLIENT_FILL_REPEAT launches the fill that many times (the same
     * values each time), for the split policy's report. */
    const char *repeat_env = getenv("FAKE_CLIENT_FILL_REPEAT");
    unsigned fill_repeat = repeat_env ? (unsigned)strtoul(repeat_env, NULL, 10) : 1;
    /* FAKE_CLIENT_FILL_SHAPES: the fill's launches then made again with
     * that many other grids (one block more each), for the budget for
     * trying: each grid is a shape of its own to try. */
    const char *shapes_env = getenv("FAKE_CLIENT_FILL_SHAPES");
    unsigned fill_shapes = shapes_env ? (unsigned)strtoul(shapes_env, NULL, 10) : 0;
    if (!TRY(cuEventRecord, (start, stream)) ||
        !TRY(cuLaunchKernel, (axpy, axpy_blocks, 1, 1, BLOCK, 1, 1, 0, stream, axpy_params, NULL)))
        goto out;
    bind_nccl_late();
    if (!TRY(cuLaunchKernel, (axpy, 4, 1, 1, BLOCK, 1, 1, 0, stream, small_params, NULL)) ||
        !TRY(cuLaunchKernel, (fill, fill_blocks, 1, 1, BLOCK, 1, 1, 0, stream, NULL, fill_extra)))
        goto out;
    for (unsigned r = 1; r < fill_repeat; r++)
        if (!TRY(cuLaunchKernel,
                 (fill, fill_blocks, 1, 1, BLOCK, 1, 1, 0, stream, NULL, fill_extra)))
            goto out;
    for (unsigned shape = 1; shape <= fill_shapes; shape++)
        for (unsigned r = 0; r < fill_repeat; r++)
            if (!TRY(cuLaunchKernel,
                     (fill, fill_blocks + shape, 1, 1, BLOCK, 1, 1, 0, stream, NULL, fill_extra)))
                goto out;
    if (!TRY(cuEventRecord, (end, stream)) || !TRY(cuEventSynchronize, (end)))
        goto out;
    float ms = 0;
    if (!TRY(cuEventElapsedTime, (&ms, start, end)) || !TRY(cuStreamSynchronize, (stream)))
        goto out;
    if (!TRY(cuMemcpyDtoH, (y, b->y, big)) || !TRY(cuMemcpyDtoH, (sy, b->small_y, small)) ||
        !TRY(cuMemcpyDtoHAsync, (b->pinned, b->fill, FILL_COUNT * sizeof(unsigned), stream)) ||
        !TRY(cuStreamSynchronize, (stream)))
        goto out;
    *correct = check_results(x, y0, y, sx, sy0, sy, b->pinned, a);
    done = true;
out:
    free(x);
    free(y0);
    free(y);
    return done;
}

/* A kernel whose blocks wait for the block before them (a flag per
 * block, read volatile until set, as a decoupled look-back does), written
 * for mgpu's analysis (ptx/ptx_block_waits.h): the fake GPU runs it as a
 * no-op, a GPU as written. */
static const char wait_kernel_ptx[] =
    ".version 9.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry mgpu_test_wait(.param .u64 mgpu_test_wait_param_0,\n"
    "\t.param .u64 mgpu_test_wait_param_1)\n"
    "{\n"
    "\t.reg .pred %p<3>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<10>;\n"
    "\tld.param.u64 %rd1, [mgpu_test_wait_param_0];\n"
    "\tld.param.u64 %rd2, [mgpu_test_wait_param_1];\n"
    "\tcvta.to.global.u64 %rd3, %rd1;\n"
    "\tcvta.to.global.u64 %rd4, %rd2;\n"
    "\tmov.u32 %r1, %ctaid.x;\n"
    "\tsetp.eq.s32 %p1, %r1, 0;\n"
    "\t@%p1 bra $L_publish;\n"
    "\tadd.s32 %r2, %r1, -1;\n"
    "\tmul.wide.u32 %rd5, %r2, 4;\n"
    "\tadd.s64 %rd6, %rd3, %rd5;\n"
    "$L_spin:\n"
    "\tld.volatile.global.u32 %r3, [%rd6];\n"
    "\tsetp.eq.s32 %p2, %r3, 0;\n"
    "\t@%p2 bra $L_spin;\n"
    "$L_publish:\n"
    "\tmul.wide.u32 %rd7, %r1, 4;\n"
    "\tadd.s64 %rd8, %rd4, %rd7;\n"
    "\tst.global.u32 [%rd8], %r1;\n"
    "\tadd.s64 %rd9, %rd3, %rd7;\n"
    "\tst.volatile.global.u32 [%rd9], 1;\n"
    "\tret;\n"
    "}\n";

/* FAKE_CLIENT_WAIT_KERNEL: the kernel above, loaded from a module of its
 * own and launched once over 64 blocks (tests/fake-gpu.sh reads how mgpu
 * ran it in the report). */
static bool launch_wait_kernel(CUstream stream)
{
    CUmodule module = NULL;
    CUfunction wait = NULL;
    CUdeviceptr flags = 0, order = 0;
    const unsigned blocks = 64;
    bool done = TRY(cuModuleLoadData, (&module, wait_kernel_ptx)) &&
                TRY(cuModuleGetFunction, (&wait, module, "mgpu_test_wait")) &&
                TRY(cuMemAlloc, (&flags, blocks * sizeof(unsigned))) &&
                TRY(cuMemAlloc, (&order, blocks * sizeof(unsigned))) &&
                TRY(cuMemsetD32Async, (flags, 0, blocks, stream));
    void *params[] = {&flags, &order};
    done = done && TRY(cuLaunchKernel, (wait, blocks, 1, 1, 32, 1, 1, 0, stream, params, NULL)) &&
           TRY(cuStreamSynchronize, (stream));
    if (flags != 0)
        TRY(cuMemFree, (flags));
    if (order != 0)
        TRY(cuMemFree, (order));
    if (module != NULL)
        TRY(cuModuleUnload, (module));
    return done;
}

int main(void)
{
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    CUstream stream = NULL;
    CUevent start = NULL, end = NULL;
    CUmodule module = NULL;
    CUfunction axpy = NULL, fill = NULL;
    struct buffers b = {0};
    bool correct = false, ran = false;
    size_t big = AXPY_COUNT * sizeof(float), small = SMALL_COUNT * sizeof(float);

    if (!TRY(cuInit, (0)) || !TRY(cuDeviceGet, (&dev, 0)))
        return 1;
    if (!TRY(cuDevicePrimaryCtxRetain, (&ctx, dev)))
        return 1;
    if (TRY(cuCtxSetCurrent, (ctx)) && TRY(cuStreamCreate, (&stream, CU_STREAM_NON_BLOCKING)) &&
        TRY(cuEventCreate, (&start, CU_EVENT_DEFAULT)) &&
        TRY(cuEventCreate, (&end, CU_EVENT_DEFAULT)) && TRY(cuMemAlloc, (&b.x, big)) &&
        TRY(cuMemAlloc, (&b.y, big)) && TRY(cuMemAlloc, (&b.small_x, small)) &&
        TRY(cuMemAlloc, (&b.small_y, small)) &&
        TRY(cuMemAlloc, (&b.fill, FILL_COUNT * sizeof(unsigned))) &&
        TRY(cuMemHostAlloc, ((void **)&b.pinned, FILL_COUNT * sizeof(unsigned), 0)) &&
        TRY(cuModuleLoadData, (&module, mgpu_test_kernels_ptx)) &&
        TRY(cuModuleGetFunction, (&axpy, module, MGPU_TEST_AXPY)) &&
        TRY(cuModuleGetFunction, (&fill, module, MGPU_TEST_FILL))) {
        /* FAKE_CLIENT_WAIT_MS: the program's own set-up between its load
         * and its launches takes that long (tests/fake-other-gpus.sh). */
        const char *wait = getenv("FAKE_CLIENT_WAIT_MS");
        if (wait != NULL && atol(wait) > 0) {
            struct timespec t = {atol(wait) / 1000, (atol(wait) % 1000) * 1000000L};
            while (nanosleep(&t, &t) != 0)
                ;
        }
        ran = run(stream, start, end, axpy, fill, &b, &correct);
        if (ran && getenv("FAKE_CLIENT_WAIT_KERNEL") != NULL)
            ran = launch_wait_kernel(stream);
    }

    /* Free what was made, in any case; FAKE_CLIENT_KEEP_FILL=1 leaves the
     * fill's buffer to the end (the report lists the buffers still
     * allocated at exit). */
    if (getenv("FAKE_CLIENT_KEEP_FILL") != NULL)
        b.fill = 0;
    CUdeviceptr device_buffers[] = {b.x, b.y, b.small_x, b.small_y, b.fill};
    for (size_t i = 0; i < sizeof device_buffers / sizeof device_buffers[0]; i++)
        if (device_buffers[i] != 0)
            TRY(cuMemFree, (device_buffers[i]));
    if (b.pinned != NULL)
        TRY(cuMemFreeHost, (b.pinned));
    if (module != NULL)
        TRY(cuModuleUnload, (module));
    if (start != NULL)
        TRY(cuEventDestroy, (start));
    if (end != NULL)
        TRY(cuEventDestroy, (end));
    if (stream != NULL)
        TRY(cuStreamDestroy, (stream));
    TRY(cuDevicePrimaryCtxRelease, (dev));
    if (failed)
        return 1;
    if (!ran || !correct)
        return 2;
    printf("fake_gpu_client: results correct\n");
    return 0;
}
