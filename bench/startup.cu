// startup: the shortest whole CUDA program: initialise, allocate, launch one
// kernel, copy its result back, exit. bench/run-startup.sh times the whole
// process plainly and under mgpu-run, to see what mgpu adds to a start.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void write_index(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = i;
}

int main()
{
    const int n = 1 << 16;
    int *d = nullptr, last = -1;
    if (cudaMalloc(&d, n * sizeof(int)) != cudaSuccess)
        return 2;
    write_index<<<(n + 255) / 256, 256>>>(d, n);
    if (cudaGetLastError() != cudaSuccess ||
        cudaMemcpy(&last, d + n - 1, sizeof last, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 2;
    cudaFree(d);
    std::printf("startup: %s\n", last == n - 1 ? "PASS" : "FAIL");
    return last == n - 1 ? 0 : 1;
}
