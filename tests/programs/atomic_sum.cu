// atomic_sum: the naive reduction every CUDA course starts with: each thread
// atomicAdd()s its value into one global scalar. 64-bit integer sums (exact),
// a 32-bit count of the values above a threshold, and a float sum checked with
// a tolerance (its order, hence its rounding, varies from run to run, so it is
// reported on stderr only). The scalars are not reset between the five
// launches of a round. Under mgpu: every slice's atomics on one address, a
// grid of 3907. SCALE s (optional argument, 1 to 100000): s rounds (scalars
// reset, the results read back and checked each time), as an iterative
// program does; the size stays, since every atomic goes to one address
// anyway and the grid of 3907 is what tests/gpu-private-reductions.sh
// expects. mgpu's auto policies run launches whole for the run's first tenth
// of a second and while the other GPUs are set up, so a test of what they
// decide needs a program that runs longer than that. The CPU's sums are made
// once: its side does not grow.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

static uint32_t lcg_state = 777u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

__global__ void sum_atomic_int(const int *values, int n, int threshold, unsigned long long *sum,
                               unsigned int *count_above)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        // Two's complement: adding the sign-extended value modulo 2^64 sums
        // negative values too.
        atomicAdd(sum, (unsigned long long)(long long)values[i]);
        if (values[i] > threshold)
            atomicAdd(count_above, 1u);
    }
}

__global__ void sum_atomic_float(const float *values, int n, float *sum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(sum, values[i]);
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100000

int main(int argc, char **argv)
{
    const int n = 1000000, threads = 256, launches = 5, threshold = 900000;
    const int rounds = program_scale(argc, argv, "atomic_sum", MAX_SCALE);
    std::vector<int> h_values(n);
    std::vector<float> h_fvalues(n);
    long long ref_sum = 0;
    unsigned int ref_count = 0;
    double ref_fsum = 0;
    for (int i = 0; i < n; i++) {
        h_values[i] = (int)(lcg() % 2000001) - 1000000;
        h_fvalues[i] = (float)(lcg() % 1000) / 1000.0f;
        ref_sum += h_values[i];
        ref_count += h_values[i] > threshold;
        ref_fsum += h_fvalues[i];
    }

    int *d_values;
    float *d_fvalues, *d_fsum;
    unsigned long long *d_sum;
    unsigned int *d_count;
    CHECK(cudaMalloc(&d_values, n * sizeof(int)));
    CHECK(cudaMalloc(&d_fvalues, n * sizeof(float)));
    CHECK(cudaMalloc(&d_sum, sizeof(unsigned long long)));
    CHECK(cudaMalloc(&d_count, sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_fsum, sizeof(float)));
    CHECK(cudaMemcpy(d_values, h_values.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_fvalues, h_fvalues.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    int blocks = (n + threads - 1) / threads;
    int wrong = 0;
    unsigned int count = 0;
    long long want_sum = ref_sum * launches;
    for (int r = 0; r < rounds && !wrong; r++) {
        CHECK(cudaMemset(d_sum, 0, sizeof(unsigned long long)));
        CHECK(cudaMemset(d_count, 0, sizeof(unsigned int)));
        CHECK(cudaMemset(d_fsum, 0, sizeof(float)));
        for (int l = 0; l < launches; l++) {
            sum_atomic_int<<<blocks, threads>>>(d_values, n, threshold, d_sum, d_count);
            CHECK(cudaGetLastError());
            sum_atomic_float<<<blocks, threads>>>(d_fvalues, n, d_fsum);
            CHECK(cudaGetLastError());
        }
        unsigned long long sum;
        float fsum;
        CHECK(cudaMemcpy(&sum, d_sum, sizeof(sum), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&count, d_count, sizeof(count), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&fsum, d_fsum, sizeof(fsum), cudaMemcpyDeviceToHost));
        if ((long long)sum != want_sum) {
            fprintf(stderr, "atomic_sum: sum %lld, expected %lld\n", (long long)sum, want_sum);
            wrong++;
        }
        if (count != ref_count * launches) {
            fprintf(stderr, "atomic_sum: count %u, expected %u\n", count, ref_count * launches);
            wrong++;
        }
        // A float sum of 5e6 values around 0.5 in any order: within 1e-3 relative.
        double want_fsum = ref_fsum * launches;
        if (r == 0 || r == rounds - 1)
            fprintf(stderr, "atomic_sum: float sum %.1f, exact %.1f (round %d)\n", fsum, want_fsum,
                    r + 1);
        if (!(fabs(fsum - want_fsum) <= 1e-3 * want_fsum)) {
            fprintf(stderr, "atomic_sum: float sum off by more than 1e-3 relative\n");
            wrong++;
        }
    }
    printf("atomic_sum: %d values, %d blocks, %d launches a round, %d round%s\n", n, blocks,
           launches, rounds, rounds == 1 ? "" : "s");
    printf("atomic_sum: integer sum %lld, %u values above %d\n", want_sum, count, threshold);
    CHECK(cudaFree(d_values));
    CHECK(cudaFree(d_fvalues));
    CHECK(cudaFree(d_sum));
    CHECK(cudaFree(d_count));
    CHECK(cudaFree(d_fsum));
    if (wrong) {
        printf("atomic_sum: FAIL\n");
        return 1;
    }
    printf("atomic_sum: PASS\n");
    return 0;
}
