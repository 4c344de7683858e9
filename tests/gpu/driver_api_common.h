/* Shared by the driver-API test clients: load scale.ptx, run it on a buffer,
 * check the result. `api` holds the entry points, however they were found. */
#ifndef MGPU_TEST_DRIVER_API_COMMON_H
#define MGPU_TEST_DRIVER_API_COMMON_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdio.h>
#include <stdlib.h>

struct test_driver_api {
    PFN_cuInit_v2000 cuInit;
    PFN_cuDeviceGetCount_v2000 cuDeviceGetCount;
    PFN_cuDeviceGet_v2000 cuDeviceGet;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
    PFN_cuModuleLoadData_v2000 cuModuleLoadData;
    PFN_cuModuleGetFunction_v2000 cuModuleGetFunction;
    PFN_cuModuleUnload_v2000 cuModuleUnload;
    PFN_cuMemAlloc_v3020 cuMemAlloc;
    PFN_cuMemFree_v3020 cuMemFree;
    PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD;
    PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH;
    PFN_cuLaunchKernel_v4000 cuLaunchKernel;
    PFN_cuCtxSynchronize_v2000 cuCtxSynchronize;
};

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    if (text)
        text[n] = '\0';
    fclose(f);
    return text;
}

#define TRY(call)                                                                                  \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            printf("FAIL: %s returned %d\n", #call, (int)r_);                                      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* Runs scale() `launches` times and checks y; prints and returns 0 on success. */
static int run_scale(const struct test_driver_api *api, const char *ptx_path, int launches)
{
    char *ptx = read_file(ptx_path);
    if (ptx == NULL) {
        printf("FAIL: cannot read %s\n", ptx_path);
        return 1;
    }
    int count = -1;
    CUdevice dev;
    CUcontext ctx;
    TRY(api->cuInit(0));
    TRY(api->cuDeviceGetCount(&count));
    const char *expect = getenv("EXPECT_DEVICES");
    if (expect != NULL && count != atoi(expect)) {
        printf("FAIL: the program sees %d devices, not %s\n", count, expect);
        return 1;
    }
    TRY(api->cuDeviceGet(&dev, 0));
    TRY(api->cuDevicePrimaryCtxRetain(&ctx, dev));
    TRY(api->cuCtxSetCurrent(ctx));
    CUmodule module;
    CUfunction fn;
    TRY(api->cuModuleLoadData(&module, ptx));
    TRY(api->cuModuleGetFunction(&fn, module, "scale"));
    unsigned n = 1u << 20;
    float *host = malloc(n * sizeof(float));
    for (unsigned i = 0; i < n; i++)
        host[i] = (float)(i % 1024) + 0.25f;
    CUdeviceptr x, y;
    TRY(api->cuMemAlloc(&x, n * sizeof(float)));
    TRY(api->cuMemAlloc(&y, n * sizeof(float)));
    TRY(api->cuMemcpyHtoD(x, host, n * sizeof(float)));
    float a = 3.0f;
    void *params[] = {&y, &x, &a, &n};
    for (int k = 0; k < launches; k++)
        TRY(api->cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    TRY(api->cuCtxSynchronize());
    float *out = malloc(n * sizeof(float));
    TRY(api->cuMemcpyDtoH(out, y, n * sizeof(float)));
    for (unsigned i = 0; i < n; i++)
        if (out[i] != 3.0f * host[i]) {
            printf("FAIL: y[%u] = %g, not %g\n", i, out[i], 3.0f * host[i]);
            return 1;
        }
    TRY(api->cuMemFree(x));
    TRY(api->cuMemFree(y));
    TRY(api->cuModuleUnload(module));
    TRY(api->cuDevicePrimaryCtxRelease(dev));
    free(host);
    free(out);
    free(ptx);
    return 0;
}

#endif
