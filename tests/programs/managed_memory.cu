// managed_memory: unified memory as in the CUDA SDK's UnifiedMemoryStreams and
// NVIDIA's "Unified Memory for CUDA beginners": cudaMallocManaged buffers that
// the host fills directly, kernels update, and the host reads back after
// cudaDeviceSynchronize(), then changes and hands to the next kernel, with no
// cudaMemcpy at all. 32 MiB of managed data, integers (exact). Under mgpu:
// managed memory passes through to the driver, while the kernels (grids of
// 16385 and 1000 blocks) are split and touch it from every slice.
// SCALE s (optional argument, 1 to 1000): n grows to s * 2^22 + 5 up to s = 64
// (2 GiB managed, kept well under the card's free memory), then the rounds
// grow instead, to (3 s + 32) / 64; at s > 1 the CPU follows the elements of 8
// of the 1000 sum blocks spread over the grid and of the one holding the last
// element: their sums every round, their values read back and b changed by
// the host in 1 period of 256000 elements in 8 (and the last).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
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

// SCALE > 1: the CPU's side of the rounds, on a sample. block_sums's block j
// sums the runs of 256 elements that start at j * 256 + m * 256000 (a period
// m of the grid-stride loop), so following some blocks' elements checks their
// sums exactly and gives runs spread over the whole of a to check; the host
// reads a and changes b only in the runs of one period in 8 and the last, so
// that few pages move to the host and back.
static int sampled_rounds(unsigned int *a, unsigned int *b, int n, int threads, int sum_blocks,
                          int blocks, int rounds, unsigned long long *sums,
                          unsigned long long *total)
{
    const int run = threads;                        // a run: one block's part of a period
    const size_t period = (size_t)run * sum_blocks; // elements a period
    const size_t periods = (n + period - 1) / period;
    std::vector<int> followed; // the blocks followed: 8 spread over 0..999, and the last's
    for (int k = 0; k < 8; k++)
        followed.push_back(k * (sum_blocks - 1) / 7);
    const int last_block = (int)((size_t)(n - 1) / run % sum_blocks);
    if (std::find(followed.begin(), followed.end(), last_block) == followed.end())
        followed.insert(std::upper_bound(followed.begin(), followed.end(), last_block), last_block);
    const size_t nf = followed.size();
    // Element t of block followed[f]'s run in period m is at
    // m * period + followed[f] * run + t, slot (m * nf + f) * run + t here.
    std::vector<unsigned int> ref(periods * nf * run), bb(periods * nf * run);
    for (size_t m = 0; m < periods; m++)
        for (size_t f = 0; f < nf; f++)
            for (int t = 0; t < run; t++) {
                size_t i = m * period + (size_t)followed[f] * run + t;
                if (i < (size_t)n) {
                    ref[(m * nf + f) * run + t] = a[i];
                    bb[(m * nf + f) * run + t] = b[i];
                }
            }
    int wrong = 0;
    for (int round = 0; round < rounds; round++) {
        unsigned int k = 3 + 2 * round;
        affine<<<blocks, threads>>>(a, b, n, k);
        CHECK(cudaGetLastError());
        block_sums<<<sum_blocks, threads>>>(a, n, sums);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::vector<unsigned long long> want(nf, 0);
        for (size_t m = 0; m < periods; m++) {
            const bool touched = m % 8 == 0 || m == periods - 1;
            for (size_t f = 0; f < nf; f++)
                for (int t = 0; t < run; t++) {
                    size_t i = m * period + (size_t)followed[f] * run + t;
                    size_t slot = (m * nf + f) * run + t;
                    if (i >= (size_t)n)
                        break;
                    ref[slot] = ref[slot] * k + bb[slot];
                    want[f] += ref[slot];
                    if (!touched)
                        continue;
                    if (a[i] != ref[slot] && wrong++ < 5)
                        fprintf(stderr, "managed_memory: round %d: a[%zu] = %u, expected %u\n",
                                round, i, a[i], ref[slot]);
                    // The host changes b in place for the next round.
                    if (i % 3 == 0) {
                        b[i] ^= (unsigned int)i;
                        bb[slot] ^= (unsigned int)i;
                    }
                }
        }
        for (size_t f = 0; f < nf; f++)
            if (sums[followed[f]] != want[f] && wrong++ < 5)
                fprintf(stderr, "managed_memory: round %d: block %d's sum %llu, expected %llu\n",
                        round, followed[f], sums[followed[f]], want[f]);
        *total = 0;
        for (int s = 0; s < sum_blocks; s++)
            *total += sums[s];
    }
    return wrong;
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "managed_memory", 1000);
    const int size_scale = scale < 64 ? scale : 64;
    const int n = size_scale * (1 << 22) + 5, threads = 256, sum_blocks = 1000;
    const int rounds = scale <= 64 ? 3 : (3 * scale + 32) / 64;
    int dev = 0, managed = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, dev));
    if (!managed) {
        fprintf(stderr, "managed_memory: device %d has no managed memory\n", dev);
        return 2;
    }
    // SCALE 1 keeps the CPU's copy of all of a.
    unsigned int *a, *b,
        *ref_a = scale > 1 ? nullptr : (unsigned int *)malloc(n * sizeof(unsigned int));
    unsigned long long *sums;
    CHECK(cudaMallocManaged(&a, n * sizeof(unsigned int)));
    CHECK(cudaMallocManaged(&b, n * sizeof(unsigned int)));
    CHECK(cudaMallocManaged(&sums, sum_blocks * sizeof(unsigned long long)));
    if (scale == 1 && !ref_a) {
        fprintf(stderr, "managed_memory: out of host memory\n");
        return 2;
    }
    int blocks = (n + threads - 1) / threads, wrong = 0;
    unsigned long long total = 0;
    if (scale > 1) {
        for (int i = 0; i < n; i++) {
            a[i] = lcg();
            b[i] = lcg() >> 4;
        }
        wrong = sampled_rounds(a, b, n, threads, sum_blocks, blocks, rounds, sums, &total);
    } else {
        for (int i = 0; i < n; i++) {
            a[i] = ref_a[i] = lcg();
            b[i] = lcg() >> 4;
        }
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
    }
    printf("managed_memory: %d values (%zu MiB managed), %d rounds, blocks %d and %d\n", n,
           (2 * (size_t)n * sizeof(unsigned int)) >> 20, rounds, blocks, sum_blocks);
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
