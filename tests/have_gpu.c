/* Exits 0 and prints "gpus=N" when the real CUDA driver sees a GPU, else
 * says why and exits 77, which the test harness counts as skipped. */
#include "base/driver_locate.h"
#include "base/real_driver.h"

#include <stdio.h>

int main(void)
{
    char path[4096], err[512];
    int count = 0;
    if (mgpu_driver_locate(NULL, path, sizeof path, err, sizeof err) != 0 ||
        mgpu_driver_load(path, err, sizeof err) != 0) {
        printf("SKIP: no GPU here (%s)\n", err);
        return 77;
    }
    CUresult r = mgpu_drv.cuInit(0);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) {
        printf("SKIP: no GPU here (%s)\n", r ? mgpu_cu_error_name(r) : "no device");
        return 77;
    }
    printf("gpus=%d\n", count);
    return 0;
}
