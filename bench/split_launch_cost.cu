// split_launch_cost: the host cost of launching an empty kernel of many
// blocks, which under mgpu-run is split over every GPU: N launches issued
// back to back in one stream, timed on the host clock up to the return of
// the last launch call (the submission cost per launch) and up to the end
// of a final synchronisation (the cost per launch when the GPUs are idle
// otherwise). Run it plain and under mgpu-run with MGPU_SPLIT=always.
//   split_launch_cost [N=20000] [blocks=1024]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "split_launch_cost: %s failed: %s\n", #call,                      \
                         cudaGetErrorString(e_));                                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void empty_kernel(int *never_written)
{
    if (never_written != nullptr && blockIdx.x > gridDim.x)
        *never_written = 1;
}

static double seconds_now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 20000;
    unsigned blocks = argc > 2 ? (unsigned)std::atoi(argv[2]) : 1024;
    if (n <= 0 || blocks == 0) {
        std::fprintf(stderr, "usage: split_launch_cost [launches > 0] [blocks > 0]\n");
        return 2;
    }
    int *flag;
    CHECK(cudaMalloc(&flag, sizeof(int)));
    for (int i = 0; i < 100; i++) // warm up: the module, the workers, the cost model
        empty_kernel<<<blocks, 128>>>(flag);
    CHECK(cudaDeviceSynchronize());
    double start = seconds_now();
    for (int i = 0; i < n; i++)
        empty_kernel<<<blocks, 128>>>(flag);
    double issued = seconds_now();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double done = seconds_now();
    std::printf("split_launch_cost: %d launches of %u blocks: submit_us=%.2f total_us=%.2f\n", n,
                blocks, (issued - start) * 1e6 / n, (done - start) * 1e6 / n);
    CHECK(cudaFree(flag));
    return 0;
}
