// monte_carlo: European call options priced by Monte Carlo, in the style of
// the CUDA SDK's MonteCarlo / MonteCarloMultiGPU samples (one block per
// option, every thread simulating its share of the paths from its own random
// stream, a shared-memory reduction of the per-thread sums). The random
// numbers come from the program itself, not cuRAND: each thread runs
// Marsaglia's xorshift128 seeded by hashing (repetition, option, thread), and
// turns pairs of 23-bit uniforms into two normals with Box-Muller (logf,
// sqrtf, sincospif). A path ends at S_T = S exp((r - v^2/2) T + v sqrt(T) z),
// pays max(S_T - X, 0), and the thread adds the payoff to a double register.
// The 256 per-thread sums are added by a fixed-order tree in shared memory
// (double), and thread 0 writes the discounted mean: every price is made by
// one block in one fixed order, so the output does not depend on which GPU
// ran which block.
//
// Sizes: 512 options, 2^23 = 8,388,608 paths per option (32,768 per
// thread), priced 4 times with a different seed per repetition: 17.2 G paths
// in all. Device memory: a few KiB (option table and 2048 prices).
//
// Kernel and launch shape: price_options<<<512, 256>>> once per repetition
// (4 launches), 2 KiB of shared memory per block; pure arithmetic, no global
// traffic besides the option table and one float per block.
//
// Under a runtime that cuts each grid into contiguous block ranges: the best
// case, independent compute-bound blocks with nothing shared but a 12 KiB
// read-only table, and one float written per block. But the grid is only 512
// blocks of 8 warps, a single wave on one H100 (4 blocks on most SMs), so
// every GPU of a split gets one partial wave; each launch is long (~8 ms), so
// the split's fixed costs are small beside it.
//
// Expected GPU time on one H100: the loop body is ~125 instructions per pair
// of paths (accurate logf/expf/sincospif polynomials, an IEEE sqrtf, 2 EX2,
// 7 conversions, 2 DADD), issue-bound at one instruction per cycle per SM
// quarter: 4 blocks x 256 threads x 32,768 paths per SM take ~16 M cycles,
// ~8-9 ms per launch, ~35 ms for the 4 (roughly 30-50 ms).
//
// Check: four (repetition, option) pairs are priced again on the CPU with
// the same generator, the same per-thread path order and the same reduction
// tree, in double, and compared with a relative tolerance of 1e-3 (the GPU's
// float Box-Muller and exp differ from double by ~1e-6 per path). Every GPU
// price is also compared with the Black-Scholes formula (within 1 % + 0.01:
// at 2^23 paths that is at least 14 standard errors for every option), which
// catches a wrong model shared by both sides.
//
// SCALE s (1 to 100, default 1): 4 s repetitions, each with its own seed;
// every price is compared with Black-Scholes, and the four CPU re-pricings
// are of repetitions s-1, 2s-1, 3s-1 and 4s-1 (as much CPU work as at 1).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define NUM_OPTIONS 512
#define THREADS 256
#define PATHS (1 << 23)
#define PATHS_PER_THREAD (PATHS / THREADS)
#define REPS 4

struct OptionData {
    float S, X;       // spot and strike
    float muByT;      // (r - v^2 / 2) T
    float volBySqrtT; // v sqrt(T)
    double discount;  // exp(-r T)
};

static uint32_t lcg_state = 20250101u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}
// Uniform in [lo, hi) from 24 random bits. The host's set-up arithmetic is
// done in double where a product is exact, so that a compiler contracting it
// into an FMA (-march=native) cannot change the data.
static float lcg_range(float lo, float hi)
{
    return (float)(lo + (double)(hi - lo) * lcg() / 16777216.0);
}

// Marsaglia's xorshift128, one per thread, the same code on host and device.
struct Xorshift128 {
    uint32_t x, y, z, w;
};

__host__ __device__ inline uint32_t mix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

__host__ __device__ inline void rng_seed(Xorshift128 &g, uint32_t rep, uint32_t option,
                                         uint32_t thread)
{
    // mix32 is a bijection, so the four words of different threads differ;
    // w is odd, so the state is never all zeros.
    uint32_t key = ((rep * NUM_OPTIONS + option) * THREADS + thread) * 4u;
    g.x = mix32(key + 1u);
    g.y = mix32(key + 2u);
    g.z = mix32(key + 3u);
    g.w = mix32(key + 4u) | 1u;
}

__host__ __device__ inline uint32_t rng_next(Xorshift128 &g)
{
    uint32_t t = g.x ^ (g.x << 11);
    g.x = g.y;
    g.y = g.z;
    g.z = g.w;
    g.w = g.w ^ (g.w >> 19) ^ t ^ (t >> 8);
    return g.w;
}

// An odd multiple of 2^-24 in (0, 1): 2k+1 < 2^24, so it is exact in float
// and double alike and never 0 (logf(0)) or 1.
__host__ __device__ inline uint32_t rng_odd24(Xorshift128 &g)
{
    return (rng_next(g) >> 9) * 2u + 1u;
}

__device__ inline float path_payoff(const OptionData &opt, float z)
{
    float st = opt.S * expf(opt.muByT + opt.volBySqrtT * z);
    return fmaxf(st - opt.X, 0.0f);
}

__global__ void price_options(const OptionData *options, float *prices, int rep)
{
    __shared__ double partial[THREADS];
    const OptionData opt = options[blockIdx.x];
    Xorshift128 g;
    rng_seed(g, rep, blockIdx.x, threadIdx.x);

    double sum = 0.0;
    for (int i = 0; i < PATHS_PER_THREAD; i += 2) {
        float u1 = (float)rng_odd24(g) * (1.0f / 16777216.0f);
        float u2 = (float)rng_odd24(g) * (1.0f / 16777216.0f);
        float r = sqrtf(-2.0f * logf(u1));
        float s, c;
        sincospif(2.0f * u2, &s, &c);
        sum += path_payoff(opt, r * c);
        sum += path_payoff(opt, r * s);
    }

    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        prices[rep * NUM_OPTIONS + blockIdx.x] = (float)(partial[0] / PATHS * opt.discount);
}

// The CPU reference for one option of one repetition: the same streams, the
// same path order per thread and the same reduction tree, all in double.
static double reference_price(const OptionData &opt, int rep, int option)
{
    const double two_pi = 6.283185307179586476925286766559;
    const double S = opt.S, X = opt.X, mu = opt.muByT, vol = opt.volBySqrtT;
    std::vector<double> partial(THREADS);
    for (int t = 0; t < THREADS; t++) {
        Xorshift128 g;
        rng_seed(g, rep, option, t);
        double sum = 0.0;
        for (int i = 0; i < PATHS_PER_THREAD; i += 2) {
            double u1 = (double)rng_odd24(g) / 16777216.0;
            double u2 = (double)rng_odd24(g) / 16777216.0;
            double r = sqrt(-2.0 * log(u1));
            double a = two_pi * u2;
            sum += std::fmax(S * exp(mu + vol * (r * cos(a))) - X, 0.0);
            sum += std::fmax(S * exp(mu + vol * (r * sin(a))) - X, 0.0);
        }
        partial[t] = sum;
    }
    for (int stride = THREADS / 2; stride > 0; stride /= 2)
        for (int t = 0; t < stride; t++)
            partial[t] += partial[t + stride];
    return partial[0] / PATHS * opt.discount;
}

static double black_scholes_call(double S, double X, double T, double r, double v)
{
    double d1 = (log(S / X) + (r + 0.5 * v * v) * T) / (v * sqrt(T));
    double d2 = d1 - v * sqrt(T);
    double nd1 = 0.5 * erfc(-d1 / sqrt(2.0)), nd2 = 0.5 * erfc(-d2 / sqrt(2.0));
    return S * nd1 - X * exp(-r * T) * nd2;
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "monte_carlo", MAX_SCALE);
    const int reps = REPS * scale;
    // Near-the-money options (strike within 20 % of spot), so that every
    // price is well away from zero.
    std::vector<OptionData> options(NUM_OPTIONS);
    std::vector<float> T(NUM_OPTIONS), R(NUM_OPTIONS), V(NUM_OPTIONS);
    for (int i = 0; i < NUM_OPTIONS; i++) {
        OptionData &o = options[i];
        o.S = lcg_range(20.0f, 40.0f);
        o.X = o.S * lcg_range(0.8f, 1.2f);
        T[i] = lcg_range(0.5f, 2.0f);
        R[i] = lcg_range(0.01f, 0.06f);
        V[i] = lcg_range(0.15f, 0.45f);
        o.muByT = (float)((R[i] - 0.5 * V[i] * V[i]) * T[i]);
        o.volBySqrtT = V[i] * sqrtf(T[i]);
        o.discount = exp(-(double)R[i] * T[i]);
    }

    OptionData *d_options;
    float *d_prices;
    CHECK(cudaMalloc(&d_options, NUM_OPTIONS * sizeof(OptionData)));
    CHECK(cudaMalloc(&d_prices, reps * NUM_OPTIONS * sizeof(float)));
    CHECK(cudaMemcpy(d_options, options.data(), NUM_OPTIONS * sizeof(OptionData),
                     cudaMemcpyHostToDevice));
    for (int rep = 0; rep < reps; rep++) {
        price_options<<<NUM_OPTIONS, THREADS>>>(d_options, d_prices, rep);
        CHECK(cudaGetLastError());
    }
    std::vector<float> prices(reps * NUM_OPTIONS);
    CHECK(
        cudaMemcpy(prices.data(), d_prices, prices.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_options));
    CHECK(cudaFree(d_prices));

    double mean = 0.0;
    for (float p : prices)
        mean += p;
    mean /= prices.size();
    printf("monte_carlo: options=%d paths=%d reps=%d mean_price=%.6f hash %016llx\n", NUM_OPTIONS,
           PATHS, reps, mean,
           (unsigned long long)fnv1a(prices.data(), prices.size() * sizeof(float)));

    // Every price against Black-Scholes.
    for (int rep = 0; rep < reps; rep++)
        for (int i = 0; i < NUM_OPTIONS; i++) {
            double bs = black_scholes_call(options[i].S, options[i].X, T[i], R[i], V[i]);
            double mc = prices[rep * NUM_OPTIONS + i];
            if (!(fabs(mc - bs) <= 0.01 * bs + 0.01)) {
                printf("monte_carlo: WRONG option %d rep %d: price %.6f, Black-Scholes %.6f\n", i,
                       rep, mc, bs);
                return 1;
            }
        }

    // Four prices, one per repetition (one per scale repetitions), recomputed
    // from the GPU's own draws (0.2-0.3 s of CPU each).
    static const int samples[4][2] = {{0, 0}, {1, 255}, {2, 384}, {3, 511}}; // {rep at 1, option}
    for (const auto &s : samples) {
        int rep = (s[0] + 1) * scale - 1, i = s[1];
        double ref = reference_price(options[i], rep, i);
        double gpu = prices[rep * NUM_OPTIONS + i];
        if (!(fabs(gpu - ref) <= 1e-3 * fabs(ref))) {
            printf("monte_carlo: WRONG option %d rep %d: price %.6f, CPU %.6f\n", i, rep, gpu, ref);
            return 1;
        }
    }
    printf("monte_carlo: check ok\n");
    return 0;
}
