// startup_big: a program whose module holds about 1 MB of PTX (512 kernels
// of one template), launching one of them: what a large library's module
// (Thrust, CUB) costs mgpu to rewrite and load at start.
// bench/run-startup.sh times it plainly and under mgpu-run.
#include <cstdio>
#include <cuda_runtime.h>

template <int K>
__global__ void polynomial(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = in[i], acc = 0.0f;
#pragma unroll
    for (int t = 0; t < 24; t++)
        acc = acc * x + (float)((K * 31 + t * 7) % 97) * 0.01f;
    out[i] = acc;
}

// Every instantiation is referenced, so each is in the module.
#define K1(b) (const void *)polynomial<(b)>,
#define K8(b) K1(b) K1(b + 1) K1(b + 2) K1(b + 3) K1(b + 4) K1(b + 5) K1(b + 6) K1(b + 7)
#define K64(b) K8(b) K8(b + 8) K8(b + 16) K8(b + 24) K8(b + 32) K8(b + 40) K8(b + 48) K8(b + 56)
static const void *const kernels[] = {K64(0) K64(64) K64(128) K64(192) K64(256) K64(320)
                                          K64(384) K64(448)};

int main()
{
    const int n = 1 << 16, k = 123;
    float *in = nullptr, *out = nullptr, got = -1;
    if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&out, n * sizeof(float)) != cudaSuccess ||
        cudaMemset(in, 0, n * sizeof(float)) != cudaSuccess)
        return 2;
    int count = n;
    void *args[] = {&out, &in, &count};
    if (cudaLaunchKernel(kernels[k], dim3((n + 255) / 256), dim3(256), args, 0, 0) != cudaSuccess ||
        cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 2;
    cudaFree(in);
    cudaFree(out);
    // x = 0: the polynomial is its last constant term.
    float want = (float)((k * 31 + 23 * 7) % 97) * 0.01f;
    std::printf("startup_big: %s\n", got == want ? "PASS" : "FAIL");
    return got == want ? 0 : 1;
}
