// managed_memory: unified memory as in the CUDA SDK's UnifiedMemoryStreams and
// NVIDIA's "Unified Memory for CUDA beginners": cudaMallocManaged buffers that
// the host fills directly, kernels update, and the host reads back after
// cudaDeviceSynchronize(), then changes and hands to the next kernel, with no
// cudaMemcpy at all. 32 MiB of managed data, integers (exact). Under mgpu:
// managed memory passes through to the driver, while the kernels (grids of
// 16385 and 1000 blocks) are split and touch it from every slice.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "program_check.h"

static uint32_t lcg_state = 161803u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

__global__ void affine(unsigned int *a, const unsigned int *b, int n, unsigned int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] = a[i] * k + b[i];
}

// Per-block sums of a (a grid-stride loop over blocks of 256), each block
// writing its own slot.
__global__ void block_sums(const unsigned int *a, int n, unsigned long long *sums)
{
    __shared__ unsigned long long s[256];
    unsigned long long sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += a[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        sums[blockIdx.x] = s[0];
}

int main()
{
    const int n = (1 << 22) + 5, threads = 256, sum_blocks = 1000;
    int dev = 0, managed = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, dev));
    if (!managed) {
        fprintf(stderr, "managed_memory: device %d has no managed memory\n", dev);
        return 2;
    }
    unsigned int *a, *b, *ref_a = (unsigned int *)malloc(n * sizeof(unsigned int));
    unsigned long long *sums;
    CHECK(cudaMallocManaged(&a, n * sizeof(unsigned int)));
    CHECK(cudaMallocManaged(&b, n * sizeof(unsigned int)));
    CHECK(cudaMallocManaged(&sums, sum_blocks * sizeof(unsigned long long)));
    if (!ref_a) {
        fprintf(stderr, "managed_memory: out of host memory\n");
        return 2;
    }
    for (int i = 0; i < n; i++) {
        a[i] = ref_a[i] = lcg();
        b[i] = lcg() >> 4;
    }

    int blocks = (n + threads - 1) / threads, wrong = 0;
    unsigned long long total = 0;
    for (int round = 0; round < 3; round++) {
        unsigned int k = 3 + 2 * round;
        affine<<<blocks, threads>>>(a, b, n, k);
        CHECK(cudaGetLastError());
        block_sums<<<sum_blocks, threads>>>(a, n, sums);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        unsigned long long want = 0, got = 0;
        for (int i = 0; i < n; i++) {
            ref_a[i] = ref_a[i] * k + b[i];
            want += ref_a[i];
            if (a[i] != ref_a[i] && wrong++ < 5)
                fprintf(stderr, "managed_memory: round %d: a[%d] = %u, expected %u\n", round, i,
                        a[i], ref_a[i]);
        }
        for (int s = 0; s < sum_blocks; s++)
            got += sums[s];
        if (got != want && wrong++ < 5)
            fprintf(stderr, "managed_memory: round %d: sum %llu, expected %llu\n", round, got,
                    want);
        total = want;
        // The host changes b in place for the next round.
        for (int i = 0; i < n; i += 3)
            b[i] ^= (unsigned int)i;
    }
    printf("managed_memory: %d values (%zu MiB managed), 3 rounds, blocks %d and %d\n", n,
           (2 * (size_t)n * sizeof(unsigned int)) >> 20, blocks, sum_blocks);
    printf("managed_memory: final sum %llu\n", total);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(sums));
    free(ref_a);
    if (wrong) {
        printf("managed_memory: FAIL %d values wrong\n", wrong);
        return 1;
    }
    printf("managed_memory: PASS\n");
    return 0;
}
