// threadfence_reduction: the CUDA SDK's "threadFenceReduction" single-pass sum.
// Each block reduces its part of the input (a grid-stride loop) in shared
// memory and writes a partial sum; __threadfence() makes it visible, thread 0
// takes a ticket with atomicInc on a __device__ retirement counter, and the
// block that draws the last ticket sums all partials and resets the counter,
// all in one launch of 1000 blocks, run 10 times. Integers, so exact. Under
// mgpu: a __device__ counter and fences/atomics that every slice must share.
// SCALE s (optional argument, 1 to 10000): the input grows to s times 4.2M
// values up to s = 256 (1.08e9 values, 4.3 GB), then the launches to
// round(10 s / 256); the grid stays 1000 blocks (about one wave of resident
// blocks, as the SDK sizes it; each thread loops over more values). The sum is
// still checked whole and exactly.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define BLOCK_SIZE 256
// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 10000
// The SCALE up to which the input grows; above it, the launches.
#define SIZE_CAP 256

static uint32_t lcg_state = 1u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

// Global counter of the blocks that have finished their partial sum.
__device__ unsigned int retirementCount = 0;

// The sum of the block's values of mySum in sdata[0].
__device__ void reduceBlock(unsigned long long *sdata, unsigned long long mySum)
{
    unsigned int tid = threadIdx.x;
    sdata[tid] = mySum;
    __syncthreads();
    for (unsigned int s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] = sdata[tid] + sdata[tid + s];
        __syncthreads();
    }
}

// Each launch sums g_idata[0..n) and stores the total in g_result[slot].
__global__ void reduceSinglePass(const unsigned int *g_idata, unsigned long long *g_partials,
                                 unsigned long long *g_result, int slot, unsigned int n)
{
    __shared__ unsigned long long sdata[BLOCK_SIZE];
    __shared__ bool amLast;

    // Phase 1: each block sums a grid-stride share of the input.
    unsigned long long mySum = 0;
    for (unsigned int i = blockIdx.x * BLOCK_SIZE + threadIdx.x; i < n; i += BLOCK_SIZE * gridDim.x)
        mySum += g_idata[i];
    reduceBlock(sdata, mySum);
    if (threadIdx.x == 0)
        g_partials[blockIdx.x] = sdata[0];

    // Phase 2: the last block to finish sums the partial sums.
    if (gridDim.x > 1) {
        if (threadIdx.x == 0) {
            // Make this block's partial sum visible to all blocks before taking
            // a ticket.
            __threadfence();
            unsigned int ticket = atomicInc(&retirementCount, gridDim.x);
            amLast = (ticket == gridDim.x - 1);
        }
        __syncthreads();
        if (amLast) {
            const volatile unsigned long long *partials = g_partials;
            unsigned long long sum = 0;
            for (unsigned int i = threadIdx.x; i < gridDim.x; i += BLOCK_SIZE)
                sum += partials[i];
            reduceBlock(sdata, sum);
            if (threadIdx.x == 0) {
                g_result[slot] = sdata[0];
                retirementCount = 0;
            }
        }
    } else if (threadIdx.x == 0) {
        g_result[slot] = sdata[0];
    }
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "threadfence_reduction", MAX_SCALE);
    const int pieces = scale < SIZE_CAP ? scale : SIZE_CAP;
    // n < 2^32 - BLOCK_SIZE * blocks: the kernel's unsigned index never wraps.
    const unsigned int piece = (1u << 22) + 12345, n = piece * pieces;
    const int blocks = 1000,
              launches = scale <= SIZE_CAP ? 10 : (10 * scale + SIZE_CAP / 2) / SIZE_CAP;

    unsigned int *d_idata;
    unsigned long long *d_partials, *d_result;
    CHECK(cudaMalloc(&d_idata, (size_t)n * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_partials, blocks * sizeof(unsigned long long)));
    CHECK(cudaMalloc(&d_result, launches * sizeof(unsigned long long)));
    // The input made and copied a SCALE 1 input at a time (all of it at SCALE 1).
    std::vector<unsigned int> h_idata(piece);
    unsigned long long ref = 0;
    for (int p = 0; p < pieces; p++) {
        for (unsigned int i = 0; i < piece; i++) {
            h_idata[i] = lcg() % (1u << 20);
            ref += h_idata[i];
        }
        CHECK(cudaMemcpy(d_idata + (size_t)p * piece, h_idata.data(), piece * sizeof(unsigned int),
                         cudaMemcpyHostToDevice));
    }
    CHECK(cudaMemset(d_result, 0, launches * sizeof(unsigned long long)));
    for (int l = 0; l < launches; l++) {
        reduceSinglePass<<<blocks, BLOCK_SIZE>>>(d_idata, d_partials, d_result, l, n);
        CHECK(cudaGetLastError());
    }
    std::vector<unsigned long long> result(launches);
    unsigned int counter = 1;
    CHECK(cudaMemcpy(result.data(), d_result, launches * sizeof(unsigned long long),
                     cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpyFromSymbol(&counter, retirementCount, sizeof(counter)));

    int wrong = 0;
    for (int l = 0; l < launches; l++)
        if (result[l] != ref && wrong++ < 5)
            fprintf(stderr, "threadfence_reduction: launch %d: %llu, expected %llu\n", l, result[l],
                    ref);
    if (counter != 0) {
        fprintf(stderr, "threadfence_reduction: retirement counter %u after the launches\n",
                counter);
        wrong++;
    }
    printf("threadfence_reduction: %u values, %d blocks, %d launches, sum %llu\n", n, blocks,
           launches, ref);
    CHECK(cudaFree(d_idata));
    CHECK(cudaFree(d_partials));
    CHECK(cudaFree(d_result));
    if (wrong) {
        printf("threadfence_reduction: FAIL\n");
        return 1;
    }
    printf("threadfence_reduction: PASS\n");
    return 0;
}
