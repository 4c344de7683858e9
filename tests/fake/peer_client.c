/* A driver-API program that enables and disables peer access itself, for
 * tests/fake-peer-access.sh: device 0's primary context current, device
 * 1's retained, a kernel launched (under mgpu-run -n 2 with MGPU_SPLIT=
 * always it is split, and mgpu enables peer access for its slices), then
 * cuCtxEnablePeerAccess twice and cuCtxDisablePeerAccess twice, each
 * answer checked against the driver's own (SUCCESS, ALREADY_ENABLED,
 * SUCCESS, PEER_ACCESS_NOT_ENABLED), then the kernel again, its result
 * checked. With `kept` as its argument it also checks, through the fake
 * driver's own record, that device 0's context still reaches device 1
 * after the program switched its access off (mgpu's stays); with `gone`,
 * that it does not. Prints one line per check and "peer_client: N checks
 * passed"; exits 1 on the first wrong one. */
#include "test_kernels.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 300000u /* 1.2 MB: split over the GPUs */

static int checks;

static void expect(const char *what, CUresult got, CUresult want)
{
    const char *g = NULL, *w = NULL;
    cuGetErrorName(got, &g);
    cuGetErrorName(want, &w);
    if (got != want) {
        printf("WRONG %s: %s, not %s\n", what, g ? g : "?", w ? w : "?");
        exit(1);
    }
    checks++;
    printf("ok %s: %s\n", what, g ? g : "?");
}

/* y = 2 x + y over COUNT floats, checked. */
static void axpy(CUfunction fn, CUdeviceptr dx, CUdeviceptr dy, float *y, const float *x)
{
    float a = 2.0f;
    unsigned n = COUNT;
    void *params[] = {&dy, &dx, &a, &n};
    expect("the kernel",
           cuLaunchKernel(fn, (COUNT + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL),
           CUDA_SUCCESS);
    float *got = malloc(COUNT * sizeof *got);
    expect("its result back", cuMemcpyDtoH(got, dy, COUNT * sizeof *got), CUDA_SUCCESS);
    for (unsigned i = 0; i < COUNT; i++) {
        y[i] = 2.0f * x[i] + y[i];
        if (got[i] != y[i]) {
            printf("WRONG the kernel's y[%u]: %g, not %g\n", i, got[i], y[i]);
            exit(1);
        }
    }
    free(got);
}

int main(int argc, char **argv)
{
    const char *expect_kept = argc > 1 ? argv[1] : "";
    CUdevice d0, d1;
    CUcontext c0, c1;
    CUmodule module;
    CUfunction fn;
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 2 ||
        cuDeviceGet(&d0, 0) != CUDA_SUCCESS || cuDeviceGet(&d1, 1) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&c0, d0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&c1, d1) != CUDA_SUCCESS || cuCtxSetCurrent(c0) != CUDA_SUCCESS ||
        cuModuleLoadData(&module, mgpu_test_kernels_ptx) != CUDA_SUCCESS ||
        cuModuleGetFunction(&fn, module, MGPU_TEST_AXPY) != CUDA_SUCCESS) {
        printf("peer_client: set-up failed (two devices needed)\n");
        return 1;
    }
    float *x = malloc(COUNT * sizeof *x), *y = malloc(COUNT * sizeof *y);
    for (unsigned i = 0; i < COUNT; i++)
        x[i] = (float)(i % 97), y[i] = (float)(i % 13);
    CUdeviceptr dx, dy;
    expect("cuMemAlloc", cuMemAlloc(&dx, COUNT * sizeof *x), CUDA_SUCCESS);
    expect("cuMemAlloc", cuMemAlloc(&dy, COUNT * sizeof *y), CUDA_SUCCESS);
    expect("cuMemcpyHtoD", cuMemcpyHtoD(dx, x, COUNT * sizeof *x), CUDA_SUCCESS);
    expect("cuMemcpyHtoD", cuMemcpyHtoD(dy, y, COUNT * sizeof *y), CUDA_SUCCESS);
    axpy(fn, dx, dy, y, x);

    expect("first cuCtxEnablePeerAccess", cuCtxEnablePeerAccess(c1, 0), CUDA_SUCCESS);
    expect("second cuCtxEnablePeerAccess", cuCtxEnablePeerAccess(c1, 0),
           CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    expect("first cuCtxDisablePeerAccess", cuCtxDisablePeerAccess(c1), CUDA_SUCCESS);
    expect("second cuCtxDisablePeerAccess", cuCtxDisablePeerAccess(c1),
           CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);

    const char *fake_path = getenv("MGPU_DRIVER");
    void *fake = fake_path ? dlopen(fake_path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    uint64_t (*bits)(CUcontext) =
        fake ? (uint64_t(*)(CUcontext))dlsym(fake, "fake_context_peer_bits") : NULL;
    if (strcmp(expect_kept, "kept") == 0 || strcmp(expect_kept, "gone") == 0) {
        if (bits == NULL) {
            printf("WRONG: no fake driver to ask (MGPU_DRIVER)\n");
            return 1;
        }
        int reaches = (int)(bits(c0) >> (unsigned)d1 & 1);
        if (reaches != (strcmp(expect_kept, "kept") == 0)) {
            printf("WRONG: device 0's context %s device 1 after the program's disable\n",
                   reaches ? "still reaches" : "no longer reaches");
            return 1;
        }
        checks++;
        printf("ok: device 0's context %s device 1 after the program's disable\n",
               reaches ? "still reaches" : "no longer reaches");
    }
    axpy(fn, dx, dy, y, x);
    cuMemFree(dx);
    cuMemFree(dy);
    cuModuleUnload(module);
    cuDevicePrimaryCtxRelease(d1);
    cuDevicePrimaryCtxRelease(d0);
    free(x);
    free(y);
    printf("peer_client: %d checks passed\n", checks);
    return 0;
}
