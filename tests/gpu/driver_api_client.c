/* A driver-API program linked with -lcuda: runs scale.ptx (argv[1]) and
 * checks the result. Under mgpu-run, -lcuda resolves to mgpu's shim. */
#include "driver_api_common.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: driver_api_client scale.ptx\n");
        return 2;
    }
    struct test_driver_api api = {
        cuInit,
        cuDeviceGetCount,
        cuDeviceGet,
        cuDevicePrimaryCtxRetain,
        cuDevicePrimaryCtxRelease,
        cuCtxSetCurrent,
        cuModuleLoadData,
        cuModuleGetFunction,
        cuModuleUnload,
        cuMemAlloc,
        cuMemFree,
        cuMemcpyHtoD,
        cuMemcpyDtoH,
        cuLaunchKernel,
        cuCtxSynchronize,
    };
    if (run_scale(&api, argv[1], 7) != 0)
        return 1;
    printf("driver_api_client: PASS\n");
    return 0;
}
