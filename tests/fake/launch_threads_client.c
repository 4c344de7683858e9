/* A driver-API program whose kernels are launched from two threads, as
 * PyTorch's autograd thread launches the backward pass's, for
 * tests/fake-launch-threads.sh: a kernel from the main thread, then (with
 * `two` as its argument) one from a second thread, then a 256 MiB buffer
 * allocated, written, read back and checked, and left allocated so that
 * the report shows where its pages lie. Prints one line per check and
 * "launch_threads_client: N checks passed"; exits 1 on the first wrong
 * one. */
#include "test_kernels.h"

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL 4096u               /* floats of the kernels' buffers */
#define LARGE ((size_t)256 << 20) /* bytes of the buffer allocated after */

static int checks;
static CUcontext context;
static CUfunction axpy;
static CUdeviceptr dx, dy;

static void expect(const char *what, CUresult got)
{
    const char *name = NULL;
    cuGetErrorName(got, &name);
    if (got != CUDA_SUCCESS) {
        printf("WRONG %s: %s\n", what, name ? name : "?");
        exit(1);
    }
    checks++;
    printf("ok %s\n", what);
}

static void launch(const char *what)
{
    float a = 1.0f;
    unsigned n = SMALL;
    void *params[] = {&dy, &dx, &a, &n};
    expect(what, cuLaunchKernel(axpy, SMALL / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    expect("cuCtxSynchronize", cuCtxSynchronize());
}

static void *second_thread(void *arg)
{
    (void)arg;
    expect("the second thread's context", cuCtxSetCurrent(context));
    launch("a kernel from the second thread");
    return NULL;
}

int main(int argc, char **argv)
{
    bool two = argc > 1 && strcmp(argv[1], "two") == 0;
    CUdevice dev;
    CUmodule module;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&context, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(context) != CUDA_SUCCESS ||
        cuModuleLoadData(&module, mgpu_test_kernels_ptx) != CUDA_SUCCESS ||
        cuModuleGetFunction(&axpy, module, MGPU_TEST_AXPY) != CUDA_SUCCESS) {
        printf("launch_threads_client: set-up failed\n");
        return 1;
    }
    expect("cuMemAlloc x", cuMemAlloc(&dx, SMALL * sizeof(float)));
    expect("cuMemAlloc y", cuMemAlloc(&dy, SMALL * sizeof(float)));
    expect("cuMemsetD32 x", cuMemsetD32(dx, 0x3f800000u, SMALL)); /* 1.0f */
    expect("cuMemsetD32 y", cuMemsetD32(dy, 0, SMALL));
    launch("a kernel from the main thread");
    if (two) {
        pthread_t t;
        if (pthread_create(&t, NULL, second_thread, NULL) != 0 || pthread_join(t, NULL) != 0) {
            printf("WRONG: no second thread\n");
            return 1;
        }
    }
    float want = two ? 2.0f : 1.0f, got[SMALL];
    expect("y back", cuMemcpyDtoH(got, dy, sizeof got));
    for (unsigned i = 0; i < SMALL; i++)
        if (got[i] != want) {
            printf("WRONG y[%u]: %g, not %g\n", i, got[i], want);
            return 1;
        }
    CUdeviceptr big;
    expect("cuMemAlloc of 256 MiB", cuMemAlloc(&big, LARGE));
    expect("cuMemsetD32 of it", cuMemsetD32(big, 0x01020304u, LARGE / 4));
    unsigned *back = malloc(LARGE);
    if (back == NULL)
        return 1;
    expect("it back", cuMemcpyDtoH(back, big, LARGE));
    for (size_t i = 0; i < LARGE / 4; i++)
        if (back[i] != 0x01020304u) {
            printf("WRONG word %zu of the 256 MiB: %#x\n", i, back[i]);
            return 1;
        }
    free(back);
    printf("launch_threads_client: %d checks passed\n", checks);
    return 0;
}
