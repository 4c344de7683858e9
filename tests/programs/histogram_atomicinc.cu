// histogram_atomicinc: bincount of 4M keys into 1000 bins two ways, as in the
// CUDA SDK's histogram samples and "CUDA by Example": straight to global bins
// with atomicInc (one thread per key), and privatised per block in shared
// memory (atomicAdd on shared bins over a grid-stride loop, then one global
// atomicAdd per bin and block). Counts are integers, so exact; the global bins
// are not cleared between the three launches of each. Under mgpu: grids of
// 16385 and 1000 blocks, all slices' atomics on the same bins.
// SCALE s (optional argument, 1 to 10000): s times the keys (and the global
// kernel's blocks) up to s = 32 (134M keys; beyond, making them would take the
// CPU over a second), then round(3 s / 32) launches of each kernel; the shared
// kernel keeps its 1000 blocks (a grid-stride loop). The bins are still
// checked whole and exactly.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define NUM_BINS 1000
#define THREADS 256
// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 10000
// The SCALE up to which the keys grow; above it, the launches.
#define SIZE_CAP 32

static uint32_t lcg_state = 5u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

__global__ void histo_global_atomicinc(const unsigned int *keys, int n, unsigned int *bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicInc(&bins[keys[i] % NUM_BINS], 0xffffffffu); // wraps only at 2^32
}

__global__ void histo_shared(const unsigned int *keys, int n, unsigned int *bins)
{
    __shared__ unsigned int s_bins[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        s_bins[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&s_bins[keys[i] % NUM_BINS], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (s_bins[b] != 0)
            atomicAdd(&bins[b], s_bins[b]);
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "histogram_atomicinc", MAX_SCALE);
    const int pieces = scale < SIZE_CAP ? scale : SIZE_CAP;
    const int piece = (1 << 22) + 7, n = piece * pieces, shared_blocks = 1000,
              launches = scale <= SIZE_CAP ? 3 : (3 * scale + SIZE_CAP / 2) / SIZE_CAP;

    unsigned int *d_keys, *d_bins_global, *d_bins_shared;
    CHECK(cudaMalloc(&d_keys, (size_t)n * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_bins_global, NUM_BINS * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_bins_shared, NUM_BINS * sizeof(unsigned int)));
    // Skewed keys: the smaller of two draws, so low bins are hot. Made and
    // copied a SCALE 1 set at a time (all of them at SCALE 1).
    std::vector<unsigned int> keys(piece);
    std::vector<unsigned int> ref(NUM_BINS, 0);
    for (int p = 0; p < pieces; p++) {
        for (int i = 0; i < piece; i++) {
            unsigned int a = lcg(), b = lcg();
            keys[i] = a % NUM_BINS < b % NUM_BINS ? a : b;
            ref[keys[i] % NUM_BINS] += launches;
        }
        CHECK(cudaMemcpy(d_keys + (size_t)p * piece, keys.data(), piece * sizeof(unsigned int),
                         cudaMemcpyHostToDevice));
    }
    CHECK(cudaMemset(d_bins_global, 0, NUM_BINS * sizeof(unsigned int)));
    CHECK(cudaMemset(d_bins_shared, 0, NUM_BINS * sizeof(unsigned int)));
    int global_blocks = (n + THREADS - 1) / THREADS;
    for (int l = 0; l < launches; l++) {
        histo_global_atomicinc<<<global_blocks, THREADS>>>(d_keys, n, d_bins_global);
        CHECK(cudaGetLastError());
        histo_shared<<<shared_blocks, THREADS>>>(d_keys, n, d_bins_shared);
        CHECK(cudaGetLastError());
    }
    std::vector<unsigned int> bins_global(NUM_BINS), bins_shared(NUM_BINS);
    CHECK(cudaMemcpy(bins_global.data(), d_bins_global, NUM_BINS * sizeof(unsigned int),
                     cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(bins_shared.data(), d_bins_shared, NUM_BINS * sizeof(unsigned int),
                     cudaMemcpyDeviceToHost));

    int wrong = 0;
    for (int b = 0; b < NUM_BINS; b++)
        if ((bins_global[b] != ref[b] || bins_shared[b] != ref[b]) && wrong++ < 5)
            fprintf(stderr, "histogram_atomicinc: bin %d: %u (global), %u (shared), expected %u\n",
                    b, bins_global[b], bins_shared[b], ref[b]);
    printf("histogram_atomicinc: %d keys, %d bins, %d launches each, blocks %d (global) %d "
           "(shared)\n",
           n, NUM_BINS, launches, global_blocks, shared_blocks);
    printf("histogram_atomicinc: bin 0 %u, bin %d %u, checksum 0x%016llx\n", ref[0], NUM_BINS - 1,
           ref[NUM_BINS - 1], (unsigned long long)fnv1a(bins_global.data(), NUM_BINS * 4));
    CHECK(cudaFree(d_keys));
    CHECK(cudaFree(d_bins_global));
    CHECK(cudaFree(d_bins_shared));
    if (wrong) {
        printf("histogram_atomicinc: FAIL %d bins wrong\n", wrong);
        return 1;
    }
    printf("histogram_atomicinc: PASS\n");
    return 0;
}
