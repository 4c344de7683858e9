// underoccupied: a long-running kernel with far too few threads for the GPU,
// the shape of many real programs' serial-ish phases (per-particle or
// per-chain iterations, random-number streams, small simulations launched
// as if the GPU were a handful of cores): long per-thread register chains
// like those of SHOC's MaxFlops, but launched with far too few threads. Each
// thread carries three values of its own through a long chain:
//   - a xorshift32 state s (13/17/5 shifts),
//   - an FNV-style mix h = (h ^ s) * 16777619,
//   - a float logistic map x = (3.9 x) (1 - x), chaotic on [0.09, 0.98],
//     written with __fmul_rn/__fsub_rn so that no FMA contraction changes
//     its rounding: one different rounding and the chaotic map forgets it
//     ever agreed with the CPU.
// Five launches continue the same chains (state in device memory between
// launches); the program prints the mixes and the maps of all threads.
//
// Sizes: 256 blocks of 32 threads (8,192 threads, 256 warps: an H100 holds
// 64 warps on each of its 132 SMs, so it is 3 % occupied and more than half
// of its 528 warp schedulers have nothing to do), 1,000,000 iterations per
// launch, 5 launches. Device memory: 96 KiB.
//
// Kernel and launch shape: long_chain<<<256, 32>>> five times; no shared
// memory, three loads and three stores per thread per launch.
//
// Under a runtime that cuts each grid into contiguous block ranges: nothing
// is shared, so any cut is correct, but nothing is gained either: the time
// is one warp's dependency chain (about 6 dependent integer operations per
// iteration), and each warp already has a scheduler to itself on one GPU.
// Splitting the 256 blocks over more GPUs leaves every chain as long as it
// was, so a split can only add its own costs (and a runtime that splits by
// SM count or occupancy should decline to).
//
// Expected GPU time on one H100: ~20-25 cycles per iteration (the xorshift's
// shift-xor chain; the mix and the float map run beside it), 5 M iterations
// per thread: ~55-65 ms at ~1.9 GHz (no less than ~30 ms were the integer
// latencies half what is assumed).
//
// Check: 64 threads (one in every group of 4 blocks, every lane twice) are
// recomputed on the CPU (~0.4 s): the integers exactly, the float map to
// 1e-5 (it is reproduced bit for bit: each float operation on the CPU is
// done in double, where the product or difference of two floats is exact,
// then rounded once to float).
//
// SCALE s (1 to 100, default 1): 5 s launches continuing the same chains; the
// state before the last 5 is copied back (96 KiB, for s > 1) and the check
// replays only those 5 launches, as much CPU work as at SCALE 1.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define BLOCKS 256
#define THREADS 32
#define ITERS 1000000
#define LAUNCHES 5
#define SAMPLES 64

static uint32_t lcg_state = 777u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

__global__ void long_chain(uint32_t *state, uint32_t *mix, float *map, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t s = state[i], h = mix[i];
    float x = map[i];
    for (int k = 0; k < iters; k++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        h = (h ^ s) * 16777619u;
        x = __fmul_rn(__fmul_rn(3.9f, x), __fsub_rn(1.0f, x));
    }
    state[i] = s;
    mix[i] = h;
    map[i] = x;
}

// The CPU's float operations, each rounded once to float like __fmul_rn and
// __fsub_rn: the exact result in double, then one rounding (a float product
// has 48 bits and 1 - x is exact for x in [0, 1], so double holds both
// exactly). A conversion between the operations leaves nothing for a
// compiler to contract into an FMA.
static inline float mul_rn(float a, float b)
{
    return (float)((double)a * (double)b);
}
static inline float sub_rn(float a, float b)
{
    return (float)((double)a - (double)b);
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "underoccupied", MAX_SCALE);
    const int launches = LAUNCHES * scale;
    const int n = BLOCKS * THREADS;
    std::vector<uint32_t> s0(n), h0(n);
    std::vector<float> x0(n);
    for (int i = 0; i < n; i++) {
        s0[i] = lcg() | 1u; // xorshift32 must not start at 0
        h0[i] = lcg();
        x0[i] = (float)(1677722u + lcg() % 13421773u) / 16777216.0f; // [0.1, 0.9)
    }

    uint32_t *d_state, *d_mix;
    float *d_map;
    CHECK(cudaMalloc(&d_state, n * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_mix, n * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_map, n * sizeof(float)));
    CHECK(cudaMemcpy(d_state, s0.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_mix, h0.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_map, x0.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    // The check replays the last LAUNCHES launches from the state before
    // them: the initial state at SCALE 1, else copied back on the way.
    const int check_from = launches - LAUNCHES;
    std::vector<uint32_t> s_from(s0), h_from(h0);
    std::vector<float> x_from(x0);
    for (int l = 0; l < launches; l++) {
        if (l == check_from && l > 0) {
            CHECK(cudaMemcpy(s_from.data(), d_state, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(h_from.data(), d_mix, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(x_from.data(), d_map, n * sizeof(float), cudaMemcpyDeviceToHost));
        }
        long_chain<<<BLOCKS, THREADS>>>(d_state, d_mix, d_map, ITERS);
        CHECK(cudaGetLastError());
    }
    std::vector<uint32_t> mix(n);
    std::vector<float> map(n);
    CHECK(cudaMemcpy(mix.data(), d_mix, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(map.data(), d_map, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_state));
    CHECK(cudaFree(d_mix));
    CHECK(cudaFree(d_map));

    uint32_t mix_xor = 0;
    double map_sum = 0.0;
    for (int i = 0; i < n; i++) {
        mix_xor ^= mix[i];
        map_sum += map[i];
    }
    printf("underoccupied: threads=%d iters=%d launches=%d mix_xor=%08x hash %016llx\n", n, ITERS,
           launches, mix_xor, (unsigned long long)fnv1a(mix.data(), n * sizeof(uint32_t)));
    printf("underoccupied: map_sum=%.6f hash %016llx\n", map_sum,
           (unsigned long long)fnv1a(map.data(), n * sizeof(float)));

    // 64 sampled threads (one in every group of 4 blocks, each lane twice),
    // run in lockstep so that the CPU overlaps their chains, through the
    // last LAUNCHES launches.
    int idx[SAMPLES];
    uint32_t s[SAMPLES], h[SAMPLES];
    float x[SAMPLES];
    for (int j = 0; j < SAMPLES; j++) {
        idx[j] = (j * 4 + j % 4) * THREADS + (j * 13) % THREADS;
        s[j] = s_from[idx[j]];
        h[j] = h_from[idx[j]];
        x[j] = x_from[idx[j]];
    }
    for (long k = 0; k < (long)ITERS * LAUNCHES; k++)
        for (int j = 0; j < SAMPLES; j++) {
            uint32_t v = s[j];
            v ^= v << 13;
            v ^= v >> 17;
            v ^= v << 5;
            s[j] = v;
            h[j] = (h[j] ^ v) * 16777619u;
            x[j] = mul_rn(mul_rn(3.9f, x[j]), sub_rn(1.0f, x[j]));
        }
    for (int j = 0; j < SAMPLES; j++) {
        int i = idx[j];
        if (mix[i] != h[j]) {
            printf("underoccupied: WRONG mix of thread %d = %08x, expected %08x\n", i, mix[i],
                   h[j]);
            return 1;
        }
        if (!(fabsf(map[i] - x[j]) <= 1e-5f)) {
            printf("underoccupied: WRONG map of thread %d = %.9g, expected %.9g\n", i, map[i],
                   x[j]);
            return 1;
        }
    }
    printf("underoccupied: check ok\n");
    return 0;
}
