// Prints what the CUDA runtime reports about the devices, one line each:
//   device_query          the devices the program sees (under mgpu: one)
// Used by the GPU tests to compare the virtual device with the real GPUs.
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        std::printf("device_query: cudaGetDeviceCount failed: %s\n", cudaGetErrorString(e));
        return 1;
    }
    std::printf("devices=%d\n", count);
    for (int d = 0; d < count; d++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess)
            return 1;
        int sms = 0;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d);
        std::printf("device %d: sms=%d props_sms=%d mem=%zu name=%s\n", d, sms,
                    p.multiProcessorCount, p.totalGlobalMem, p.name);
    }
    e = cudaSetDevice(count);
    std::printf("set_device_past_end=%s\n", e == cudaErrorInvalidDevice ? "invalid" : "accepted");
    return 0;
}
