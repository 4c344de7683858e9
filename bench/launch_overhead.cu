// launch_overhead: the host cost of launch-bound work, which is where an
// interposer's own cost would show. Times N empty-kernel launches of one
// block, N of 132 blocks (one a multiprocessor of an H100 or H200: a grid a
// runtime that cuts grids must decide about at every launch), and N small
// cudaMemcpyAsync (64 bytes of non-zero data, pinned), each followed by one
// synchronisation, on the host clock; the copied data is checked.
//   launch_overhead [N=100000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "launch_overhead: %s failed: %s\n", #call,                        \
                         cudaGetErrorString(e_));                                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void empty_kernel() {}
__global__ void empty_grid_kernel(int *never) // `never` is NULL: nothing is written
{
    if (never != nullptr && blockIdx.x == gridDim.x)
        *never = 1;
}

static double seconds_now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? std::atol(argv[1]) : 100000;
    if (n <= 0) {
        std::fprintf(stderr, "usage: launch_overhead [launches > 0]\n");
        return 2;
    }
    const size_t bytes = 64;
    unsigned char *host, *back, *dev;
    CHECK(cudaMallocHost(&host, bytes));
    CHECK(cudaMallocHost(&back, bytes));
    CHECK(cudaMalloc(&dev, bytes));
    for (size_t i = 0; i < bytes; i++)
        host[i] = (unsigned char)(i * 7 + 3);

    for (int i = 0; i < 1000; i++) {
        empty_kernel<<<1, 32>>>();
        empty_grid_kernel<<<132, 32>>>(nullptr);
        CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, 0));
    }
    CHECK(cudaDeviceSynchronize());

    double t0 = seconds_now();
    for (long i = 0; i < n; i++)
        empty_kernel<<<1, 32>>>();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double t1 = seconds_now();
    for (long i = 0; i < n; i++)
        empty_grid_kernel<<<132, 32>>>(nullptr);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double t1g = seconds_now();
    for (long i = 0; i < n; i++)
        CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, 0));
    CHECK(cudaDeviceSynchronize());
    double t2 = seconds_now();

    CHECK(cudaMemcpy(back, dev, bytes, cudaMemcpyDeviceToHost));
    if (std::memcmp(back, host, bytes) != 0) {
        std::fprintf(stderr, "launch_overhead: the copied bytes differ\n");
        return 1;
    }
    std::printf("launch_overhead: n=%ld launch_us=%.4f grid_launch_us=%.4f memcpy_us=%.4f\n", n,
                (t1 - t0) * 1e6 / n, (t1g - t1) * 1e6 / n, (t2 - t1g) * 1e6 / n);
    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(host));
    CHECK(cudaFreeHost(back));
    return 0;
}
