// vector_add: c = a + b over three float arrays, the "hello world" of mgpu.
// Checks its own result and prints the kernel time (CUDA events, median of
// several runs). Run it as it is, or under mgpu: mgpu-run -n 2 ./vector_add
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "vector_add: %s failed: %s\n", #call, cudaGetErrorString(e_));  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void vector_add(const float *a, const float *b, float *c, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t)1 << 24;
    int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
    if (n == 0 || repeats <= 0) {
        std::fprintf(stderr, "usage: vector_add [elements > 0] [repeats > 0]\n");
        return 2;
    }
    std::vector<float> a(n), b(n), c(n);
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(i % 1000) * 0.5f;
        b[i] = (float)(i % 37) + 1.0f;
    }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * sizeof(float)));
    CHECK(cudaMalloc(&db, n * sizeof(float)));
    CHECK(cudaMalloc(&dc, n * sizeof(float)));
    CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    unsigned threads = 256;
    unsigned blocks = (unsigned)((n + threads - 1) / threads);
    std::vector<float> ms(repeats);
    for (int r = 0; r < repeats; r++) {
        CHECK(cudaEventRecord(start));
        vector_add<<<blocks, threads>>>(da, db, dc, n);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms[r], start, stop));
    }
    CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        if (c[i] != a[i] + b[i]) {
            std::fprintf(stderr, "vector_add: FAIL at %zu: %g + %g gave %g\n", i, a[i], b[i], c[i]);
            return 1;
        }
    }
    std::sort(ms.begin(), ms.end());
    std::printf("vector_add: %zu elements, %d launches of %u blocks, median kernel %.3f ms: PASS\n",
                n, repeats, blocks, ms[repeats / 2]);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    return 0;
}
