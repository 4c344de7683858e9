/* A program that JIT-compiles kernels in a loop, for
 * tests/fake-module-churn.sh: loads a module, launches its kernel once and
 * unloads it, N times, and prints how much the process's heap grew per
 * module over the last three quarters (mallinfo2) and how many modules the
 * driver loaded per module of the program (the fake's fake_module_loads:
 * mgpu loads a copy per GPU), so that the test can take the fake driver's
 * own growth out. On the fake GPU. */
#include "test_kernels.h"

#include <cuda.h>
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long driver_loads(void)
{
    const char *path = getenv("MGPU_DRIVER");
    void *fake = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    unsigned long *loads = fake ? (unsigned long *)dlsym(fake, "fake_module_loads") : NULL;
    return loads ? *loads : 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr x, y;
    if (n < 8 || cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
        cuMemAlloc(&x, 4096 * sizeof(float)) != CUDA_SUCCESS ||
        cuMemAlloc(&y, 4096 * sizeof(float)) != CUDA_SUCCESS) {
        printf("module_churn_client: set-up failed\n");
        return 1;
    }
    size_t heap = 0;
    unsigned long loads = 0;
    for (int i = 0; i < n; i++) {
        CUmodule module;
        CUfunction fn;
        float a = 1.0f;
        unsigned count = 4096;
        void *params[] = {&y, &x, &a, &count};
        if (cuModuleLoadData(&module, mgpu_test_kernels_ptx) != CUDA_SUCCESS ||
            cuModuleGetFunction(&fn, module, MGPU_TEST_AXPY) != CUDA_SUCCESS ||
            cuLaunchKernel(fn, 16, 1, 1, 256, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
            cuCtxSynchronize() != CUDA_SUCCESS || cuModuleUnload(module) != CUDA_SUCCESS) {
            printf("module_churn_client: module %d failed\n", i);
            return 1;
        }
        if (i == n / 4) {
            heap = mallinfo2().uordblks;
            loads = driver_loads();
        }
    }
    double modules = (double)(n - n / 4 - 1);
    printf("module_churn_client: %.1f bytes per module, %.2f driver loads per module\n",
           ((double)mallinfo2().uordblks - (double)heap) / modules,
           (double)(driver_loads() - loads) / modules);
    cuMemFree(x);
    cuMemFree(y);
    return 0;
}
