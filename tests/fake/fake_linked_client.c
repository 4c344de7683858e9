/* A program linked with -lcuda (against the toolkit's stub): under mgpu-run
 * its driver calls must reach mgpu's shim. Prints what it sees. */
#include <cuda.h>
#include <stdio.h>

int main(void)
{
    int count = -1, sms = -1;
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetCount(&count);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
    printf("linked: result=%d devices=%d sms=%d\n", (int)r, count, sms);
    return r == CUDA_SUCCESS ? 0 : 1;
}
