/* A program that finds the driver itself, as PyTorch and cuBLASLt do:
 * dlopen("libcuda.so.1") and dlsym of each name, then once more through
 * cuGetProcAddress_v2, and runs scale.ptx (argv[1]) both ways. */
#include "driver_api_common.h"

#include <dlfcn.h>

#define BY_DLSYM(field, name) api.field = dlsym(h, name)

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: dlsym_client scale.ptx\n");
        return 2;
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        printf("FAIL: %s\n", dlerror());
        return 1;
    }
    struct test_driver_api api;
    BY_DLSYM(cuInit, "cuInit");
    BY_DLSYM(cuDeviceGetCount, "cuDeviceGetCount");
    BY_DLSYM(cuDeviceGet, "cuDeviceGet");
    BY_DLSYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    BY_DLSYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    BY_DLSYM(cuCtxSetCurrent, "cuCtxSetCurrent");
    BY_DLSYM(cuModuleLoadData, "cuModuleLoadData");
    BY_DLSYM(cuModuleGetFunction, "cuModuleGetFunction");
    BY_DLSYM(cuModuleUnload, "cuModuleUnload");
    BY_DLSYM(cuMemAlloc, "cuMemAlloc_v2");
    BY_DLSYM(cuMemFree, "cuMemFree_v2");
    BY_DLSYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    BY_DLSYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    BY_DLSYM(cuLaunchKernel, "cuLaunchKernel");
    BY_DLSYM(cuCtxSynchronize, "cuCtxSynchronize");
    for (void **p = (void **)&api; p < (void **)(&api + 1); p++)
        if (*p == NULL) {
            printf("FAIL: a driver name is missing from libcuda.so.1\n");
            return 1;
        }
    if (run_scale(&api, argv[1], 3) != 0)
        return 1;
    printf("dlsym_client: dlsym path PASS\n");

    PFN_cuGetProcAddress_v12000 gpa = dlsym(h, "cuGetProcAddress_v2");
    PFN_cuGetProcAddress_v12000 self = NULL;
    CUdriverProcAddressQueryResult status;
    if (gpa == NULL || gpa("cuGetProcAddress", (void **)&self, 13000, 0, &status) != 0 ||
        self == NULL) {
        printf("FAIL: the self-lookup of cuGetProcAddress\n");
        return 1;
    }
    void *launch = NULL;
    if (self("cuLaunchKernel", &launch, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL) != 0 ||
        launch == NULL) {
        printf("FAIL: cuGetProcAddress(cuLaunchKernel) with a NULL status\n");
        return 1;
    }
    api.cuLaunchKernel = (PFN_cuLaunchKernel_v4000)launch;
    if (run_scale(&api, argv[1], 2) != 0)
        return 1;
    printf("dlsym_client: cuGetProcAddress path PASS\n");
    return 0;
}
