// coop_grid_sync: a two-phase kernel with a grid-wide barrier, in the style of
// the CUDA SDK's cooperative-groups samples (reductionMultiBlockCG): phase 1
// sums a grid-stride share of the input per block into partial[block];
// grid.sync(); phase 2 has every block add up all partials and write
// out[i] = n * in[i] - total (the values centred on their mean, times n, exact
// in integers). Launched with cudaLaunchCooperativeKernel on a grid sized from
// the occupancy calculator x the SM count, capped at 100 blocks; three times.
// Under mgpu: a launch that cannot be split (grid sync) and must run whole.
// SCALE s (optional argument, 1 to 10000): s times the values up to s = 128
// (384M values, 4.6 GB), then round(3 s / 128) launches; the grid keeps its
// cap of 100 blocks (it must be resident at once; each thread loops over more
// values). Above 1 the CPU reads back and checks 17 runs of 32768 values
// (more than the grid's threads: every thread's values) from the first to the
// last value after each launch; the total is still made of every value.
#include <cooperative_groups.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

namespace cg = cooperative_groups;

#define THREADS 256
// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 10000
// The SCALE up to which the values grow; above it, the launches.
#define SIZE_CAP 128
// Above SCALE 1, the runs of values checked and their length.
#define RUNS 17
#define RUN_LENGTH 32768

static uint32_t lcg_state = 2718u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

__global__ void center_values(const int *in, long long *out, long long *partial, int n)
{
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ long long sdata[THREADS];

    // Phase 1: this block's partial sum.
    long long sum = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size())
        sum += in[i];
    sdata[threadIdx.x] = sum;
    block.sync();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            sdata[threadIdx.x] += sdata[threadIdx.x + s];
        block.sync();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = sdata[0];

    grid.sync();

    // Phase 2: every block reads all partials.
    long long total = 0;
    for (unsigned int b = 0; b < gridDim.x; b++)
        total += partial[b];
    for (int i = grid.thread_rank(); i < n; i += grid.size())
        out[i] = (long long)n * in[i] - total;
}

// Values [begin, begin + in.size()) that the CPU checks: the inputs kept, the
// outputs read back.
struct Run {
    int begin;
    std::vector<int> in;
    std::vector<long long> out;
};

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "coop_grid_sync", MAX_SCALE);
    const int pieces = scale < SIZE_CAP ? scale : SIZE_CAP;
    const int piece = 3000017, n = piece * pieces, max_blocks = 100,
              launches = scale <= SIZE_CAP ? 3 : (3 * scale + SIZE_CAP / 2) / SIZE_CAP;
    std::vector<Run> runs(scale == 1 ? 1 : RUNS);
    for (int r = 0; r < (int)runs.size(); r++) {
        int length = scale == 1 ? n : RUN_LENGTH;
        runs[r].begin = (int)((long long)r * (n - length) / (scale == 1 ? 1 : RUNS - 1));
        runs[r].in.resize(length);
        runs[r].out.resize(length);
    }
    int dev = 0, supports_coop = 0, sm_count = 0, blocks_per_sm = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&supports_coop, cudaDevAttrCooperativeLaunch, dev));
    if (!supports_coop) {
        fprintf(stderr, "coop_grid_sync: device %d cannot launch cooperative kernels\n", dev);
        return 2;
    }
    CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, dev));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, center_values, THREADS, 0));
    int blocks = blocks_per_sm * sm_count;
    if (blocks > max_blocks)
        blocks = max_blocks;
    fprintf(stderr, "coop_grid_sync: %d SMs x %d blocks per SM, launching %d blocks\n", sm_count,
            blocks_per_sm, blocks);

    int *d_in;
    long long *d_out, *d_partial;
    CHECK(cudaMalloc(&d_in, (size_t)n * sizeof(int)));
    CHECK(cudaMalloc(&d_out, (size_t)n * sizeof(long long)));
    CHECK(cudaMalloc(&d_partial, blocks * sizeof(long long)));
    // The values made and copied a SCALE 1 set at a time (all of them at
    // SCALE 1), the runs' kept.
    std::vector<int> in(piece);
    long long total = 0;
    for (int p = 0; p < pieces; p++) {
        for (int i = 0; i < piece; i++) {
            in[i] = (int)(lcg() % 100000) - 40000;
            total += in[i];
        }
        int first = p * piece;
        CHECK(cudaMemcpy(d_in + first, in.data(), piece * sizeof(int), cudaMemcpyHostToDevice));
        for (Run &run : runs) {
            int end = run.begin + (int)run.in.size();
            for (int i = run.begin > first ? run.begin : first; i < end && i < first + piece; i++)
                run.in[i - run.begin] = in[i - first];
        }
    }

    int wrong = 0;
    for (int l = 0; l < launches; l++) {
        CHECK(cudaMemset(d_out, 0, (size_t)n * sizeof(long long)));
        int n_arg = n;
        void *args[] = {&d_in, &d_out, &d_partial, &n_arg};
        CHECK(cudaLaunchCooperativeKernel((const void *)center_values, dim3(blocks), dim3(THREADS),
                                          args, 0, 0));
        CHECK(cudaGetLastError());
        for (Run &run : runs) {
            std::vector<long long> &out = run.out;
            CHECK(cudaMemcpy(out.data(), d_out + run.begin, out.size() * sizeof(long long),
                             cudaMemcpyDeviceToHost));
            for (int k = 0; k < (int)out.size(); k++)
                if (out[k] != (long long)n * run.in[k] - total && wrong++ < 5)
                    fprintf(stderr, "coop_grid_sync: launch %d: out[%d] = %lld, expected %lld\n", l,
                            run.begin + k, out[k], (long long)n * run.in[k] - total);
        }
    }
    printf("coop_grid_sync: %d values, %d cooperative launches, total %lld\n", n, launches, total);
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_partial));
    if (wrong) {
        printf("coop_grid_sync: FAIL %d values wrong\n", wrong);
        return 1;
    }
    printf("coop_grid_sync: PASS\n");
    return 0;
}
