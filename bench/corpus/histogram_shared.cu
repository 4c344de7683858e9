// histogram_shared: a 256-bin byte histogram in the style of the CUDA SDK's
// histogram256 sample (and the histogram kernel of "CUDA by Example"): every
// block builds a private histogram of its chunk of the data in shared memory
// with integer atomicAdd, then adds its 256 counts into the global histogram
// with integer atomicAdd. Reads the data as uint4 (16 bytes a load). Each of
// REPS = 64 rounds clears the global histogram (cudaMemset), runs the kernel
// and copies the 256 counts back, as a program that histograms a stream of
// frames would.
//
// Sizes: 1 GiB of bytes (2^30), uniform random from the LCG; 256 uint32 bins.
// Device memory 1 GiB + 1 KiB; host memory 1 GiB.
//
// Kernel and launch shape: histogram256_block<<<4096, 256>>>, a 1D grid of
// 4096 blocks, each owning a contiguous chunk of 256 KiB (16,384 uint4
// words; each thread loads 64 of them, strided by the block size so loads
// coalesce), 1 KiB of shared memory per block. 64 launches, each after a
// 1 KiB cudaMemset and followed by a 1 KiB device-to-host copy.
//
// Under a runtime that cuts each grid into contiguous block ranges: the data
// splits cleanly (a block range is a contiguous byte range), but every block
// of every range ends with 256 atomicAdds into the same 1 KiB of global
// memory, so the pieces need either atomics that are coherent across GPUs
// into one copy of the histogram or private copies summed afterwards
// (integer counts, so any order gives the same result); and each round is a
// short memset-launch-copy with a synchronisation in between.
//
// Expected GPU time on one H100: each round streams 1 GiB (0.33 ms at the
// 3.35 TB/s peak) and does 2^30 shared-memory atomics (comparable, about
// 0.3-0.6 ms); 64 rounds take about 25-45 ms (no less than ~21 ms).
//
// Check (host): the exact 256 counts of the data, computed on the CPU,
// against every round's histogram.
//
// SCALE s (1 to 100, default 1): 64 s rounds over the same data; every
// round's 256 counts are still compared with the CPU's (computed once).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define BIN_COUNT 256
#define THREADS 256
#define BLOCKS 4096

static uint32_t lcg_state = 424242u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

__device__ __forceinline__ void add_word(unsigned int *s_hist, unsigned int w)
{
    atomicAdd(&s_hist[w & 0xffu], 1u);
    atomicAdd(&s_hist[(w >> 8) & 0xffu], 1u);
    atomicAdd(&s_hist[(w >> 16) & 0xffu], 1u);
    atomicAdd(&s_hist[w >> 24], 1u);
}

// Each block counts words [blockIdx.x * words_per_block, +words_per_block)
// into a shared histogram, then merges it into d_hist.
__global__ void histogram256_block(unsigned int *d_hist, const uint4 *d_data,
                                   size_t words_per_block, size_t total_words)
{
    __shared__ unsigned int s_hist[BIN_COUNT];
    for (int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x)
        s_hist[b] = 0;
    __syncthreads();

    size_t begin = (size_t)blockIdx.x * words_per_block;
    size_t end = begin + words_per_block < total_words ? begin + words_per_block : total_words;
    for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
        uint4 v = d_data[i];
        add_word(s_hist, v.x);
        add_word(s_hist, v.y);
        add_word(s_hist, v.z);
        add_word(s_hist, v.w);
    }
    __syncthreads();

    for (int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x) {
        unsigned int count = s_hist[b];
        if (count)
            atomicAdd(&d_hist[b], count);
    }
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "histogram_shared", MAX_SCALE);
    const size_t bytes = (size_t)1 << 30;
    const int reps = 64 * scale;
    const size_t total_words = bytes / sizeof(uint4);
    const size_t words_per_block = (total_words + BLOCKS - 1) / BLOCKS;

    // Two bytes from the high half of each LCG step.
    std::vector<unsigned char> h_data(bytes);
    for (size_t i = 0; i < bytes; i += 2) {
        uint32_t x = lcg();
        h_data[i] = (unsigned char)(x >> 24);
        h_data[i + 1] = (unsigned char)(x >> 16);
    }

    unsigned char *d_data;
    unsigned int *d_hist;
    CHECK(cudaMalloc(&d_data, bytes));
    CHECK(cudaMalloc(&d_hist, BIN_COUNT * sizeof(unsigned int)));
    CHECK(cudaMemcpy(d_data, h_data.data(), bytes, cudaMemcpyHostToDevice));

    std::vector<unsigned int> h_hist((size_t)reps * BIN_COUNT);
    for (int r = 0; r < reps; r++) {
        CHECK(cudaMemset(d_hist, 0, BIN_COUNT * sizeof(unsigned int)));
        histogram256_block<<<BLOCKS, THREADS>>>(d_hist, (const uint4 *)d_data, words_per_block,
                                                total_words);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(&h_hist[(size_t)r * BIN_COUNT], d_hist, BIN_COUNT * sizeof(unsigned int),
                         cudaMemcpyDeviceToHost));
    }

    const unsigned int *last = &h_hist[(size_t)(reps - 1) * BIN_COUNT];
    unsigned int lo = last[0], hi = last[0];
    for (int b = 1; b < BIN_COUNT; b++) {
        lo = last[b] < lo ? last[b] : lo;
        hi = last[b] > hi ? last[b] : hi;
    }
    printf("histogram_shared: bytes=%zu bins=%d reps=%d min_bin=%u max_bin=%u hash %016llx\n",
           bytes, BIN_COUNT, reps, lo, hi,
           (unsigned long long)fnv1a(last, BIN_COUNT * sizeof(unsigned int)));

    // CPU reference: the exact counts (four interleaved tables, summed).
    std::vector<uint64_t> part(4 * BIN_COUNT, 0);
    for (size_t i = 0; i < bytes; i += 4) {
        part[h_data[i]]++;
        part[BIN_COUNT + h_data[i + 1]]++;
        part[2 * BIN_COUNT + h_data[i + 2]]++;
        part[3 * BIN_COUNT + h_data[i + 3]]++;
    }
    std::vector<uint64_t> ref(BIN_COUNT);
    for (int b = 0; b < BIN_COUNT; b++)
        ref[b] = part[b] + part[BIN_COUNT + b] + part[2 * BIN_COUNT + b] + part[3 * BIN_COUNT + b];

    for (int r = 0; r < reps; r++)
        for (int b = 0; b < BIN_COUNT; b++)
            if (h_hist[(size_t)r * BIN_COUNT + b] != ref[b]) {
                printf("histogram_shared: WRONG round %d bin %d = %u, expected %llu\n", r, b,
                       h_hist[(size_t)r * BIN_COUNT + b], (unsigned long long)ref[b]);
                return 1;
            }

    CHECK(cudaFree(d_data));
    CHECK(cudaFree(d_hist));
    printf("histogram_shared: check ok\n");
    return 0;
}
