// matvec_atax: y = A^T (A x), the "atax" kernel of PolyBench/GPU, written the
// way that suite writes it: A is N x N floats in row-major order, and each
// repetition runs two kernels,
//   atax_kernel1: tmp = A x    one thread per row i, walking row i of A
//                              (a row walk: the 32 threads of a warp read 32
//                              rows 64 KiB apart, one float of each);
//   atax_kernel2: y = A^T tmp  one thread per column j, walking column j of A
//                              (a column walk: a warp reads 128 consecutive
//                              bytes of one row per step, coalesced).
// Kernel 2 also writes x = y / 16384 (a power of two, exact), the input of the
// next repetition, so every repetition depends on the one before.
// Sizes: N = 16384 (A is 1 GiB), 10 repetitions; tmp and y of each repetition
// go to their own slot of a 10 x N array so that the host can check every
// repetition after one copy back at the end. Device memory: about 1.0 GiB.
// Launch shapes: both kernels 1D grids of 64 blocks of 256 threads (fewer
// blocks than one H100 has SMs), 20 launches.
// Expected GPU time on one H100: each kernel reads A once (1 GiB) but neither
// reaches the memory's bandwidth with 16384 threads on 64 SMs: the row walk is
// bound by L1 (every warp load touches 32 lines) at roughly 2-2.5 ms, the
// column walk by latency (the loop unrolled by 16: 1 MiB in flight) at
// roughly 0.6-1 ms; about 25-35 ms for the 20 launches, plus 50-100 ms of
// copying A up.
// Under a runtime that cuts each grid into contiguous block ranges: a slice of
// the row walk reads only its own band of rows of A (a contiguous 1/k of it)
// and all of x; a slice of the column walk reads a band of columns, i.e. a
// 64/k KiB piece of every one of A's rows, so it touches pages all over the
// 1 GiB, and it reads all of tmp, which every slice of the row walk wrote.
// The next row walk in turn reads all of x, which every slice of the column
// walk wrote: two all-to-all exchanges of 64 KiB per repetition, while A
// itself never changes after the upload.
// SCALE s (1 to 100, default 1): the 10 repetitions run s times, each round
// starting again from the uploaded x (x grows about 1.3 times a repetition
// and would overflow float after ~300), so every round computes the same; the
// hashes and the check are of the last round, the same as at SCALE 1.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define N 16384
#define REPS 10
#define DIM_THREAD_BLOCK_X 256
// x of the next repetition is y * X_SCALE: a power of two, so the product is
// exact and the host can rebuild it from y bit for bit.
#define X_SCALE (1.0f / 16384.0f)

static uint32_t lcg_state = 20240917u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}
// In [-1, 1), a multiple of 1/1024 (exact in float).
static float lcg_signed_unit()
{
    return (float)((int)(lcg() >> 21) - 1024) / 1024.0f;
}

// tmp[i] = sum over j of A[i][j] * x[j]: one thread walks one row.
__global__ void atax_kernel1(const float *A, const float *x, float *tmp)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        const float *row = A + (size_t)i * N;
        float sum = 0.0f;
        for (int j = 0; j < N; j++)
            sum += row[j] * x[j];
        tmp[i] = sum;
    }
}

// y[j] = sum over i of A[i][j] * tmp[i]: one thread walks one column; then
// x[j] = y[j] * X_SCALE for the next repetition.
__global__ void atax_kernel2(const float *A, const float *tmp, float *y, float *x)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < N) {
        float sum = 0.0f;
        for (int i = 0; i < N; i++)
            sum += A[(size_t)i * N + j] * tmp[i];
        y[j] = sum;
        x[j] = sum * X_SCALE;
    }
}

// The rows (of tmp) or columns (of y) that the check recomputes in repetition
// r: 16 runs of 16 consecutive indices, one run in each N/16 (in every 4
// blocks), at an offset that moves from one repetition to the next.
#define SAMPLES 256
static int sample_index(int r, int k)
{
    int offset = (r * 97 + 13) % (N / 16 - 16 + 1);
    return (k / 16) * (N / 16) + offset + k % 16;
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "matvec_atax", MAX_SCALE);
    const size_t nn = (size_t)N * N;
    std::vector<float> A(nn), x0(N);
    for (size_t k = 0; k < nn; k++)
        A[k] = lcg_signed_unit();
    for (int j = 0; j < N; j++)
        x0[j] = lcg_signed_unit();

    float *d_A, *d_x, *d_tmp, *d_y;
    CHECK(cudaMalloc(&d_A, nn * sizeof(float)));
    CHECK(cudaMalloc(&d_x, N * sizeof(float)));
    CHECK(cudaMalloc(&d_tmp, (size_t)REPS * N * sizeof(float)));
    CHECK(cudaMalloc(&d_y, (size_t)REPS * N * sizeof(float)));
    CHECK(cudaMemcpy(d_A, A.data(), nn * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_x, x0.data(), N * sizeof(float), cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X);
    dim3 grid((N + block.x - 1) / block.x);
    for (int round = 0; round < scale; round++) {
        if (round > 0) // the next round starts from x0 again
            CHECK(cudaMemcpy(d_x, x0.data(), N * sizeof(float), cudaMemcpyHostToDevice));
        for (int r = 0; r < REPS; r++) {
            atax_kernel1<<<grid, block>>>(d_A, d_x, d_tmp + (size_t)r * N);
            CHECK(cudaGetLastError());
            atax_kernel2<<<grid, block>>>(d_A, d_tmp + (size_t)r * N, d_y + (size_t)r * N, d_x);
            CHECK(cudaGetLastError());
        }
    }
    std::vector<float> tmp((size_t)REPS * N), y((size_t)REPS * N);
    CHECK(cudaMemcpy(tmp.data(), d_tmp, (size_t)REPS * N * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(y.data(), d_y, (size_t)REPS * N * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_A));
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_tmp));
    CHECK(cudaFree(d_y));

    printf("matvec_atax: tmp = A x, %d repetitions x %d floats, hash %016llx\n", REPS, N,
           (unsigned long long)fnv1a(tmp.data(), tmp.size() * sizeof(float)));
    printf("matvec_atax: y = A^T tmp, %d repetitions x %d floats, hash %016llx\n", REPS, N,
           (unsigned long long)fnv1a(y.data(), y.size() * sizeof(float)));

    // CPU reference, in double, on a sample of each repetition's rows of tmp
    // and columns of y, each from the GPU's own input to that kernel (x from
    // the previous repetition's y, y from this repetition's tmp). A float sum
    // of these N terms of random sign comes within a few 1e-7 of the sum of
    // the terms' magnitudes of the exact one, whatever the order; the check
    // allows 1e-5 of it, while a wrong input moves the result by about 1e-2.
    int wrong_tmp = 0, wrong_y = 0;
    std::vector<float> x(N);
    for (int r = 0; r < REPS; r++) {
        for (int j = 0; j < N; j++)
            x[j] = r == 0 ? x0[j] : y[(size_t)(r - 1) * N + j] * X_SCALE;
        for (int k = 0; k < SAMPLES; k++) {
            int i = sample_index(r, k);
            const float *row = &A[(size_t)i * N];
            double sum = 0, abs_sum = 0;
            for (int j = 0; j < N; j++) {
                double t = (double)row[j] * (double)x[j];
                sum += t;
                abs_sum += fabs(t);
            }
            float got = tmp[(size_t)r * N + i];
            if (!(fabs((double)got - sum) <= 1e-5 * abs_sum) && wrong_tmp++ < 5)
                fprintf(stderr, "matvec_atax: repetition %d: tmp[%d] = %.9g, expected %.9g\n", r, i,
                        got, sum);
        }
    }
    // The columns: one pass down A for all repetitions at once (each
    // repetition's sampled columns lie in the same 16 stretches of a row).
    std::vector<int> col((size_t)REPS * SAMPLES);
    std::vector<double> ref((size_t)REPS * SAMPLES, 0.0), mag((size_t)REPS * SAMPLES, 0.0);
    for (int r = 0; r < REPS; r++)
        for (int k = 0; k < SAMPLES; k++)
            col[(size_t)r * SAMPLES + k] = sample_index(r, k);
    for (int i = 0; i < N; i++) {
        const float *row = &A[(size_t)i * N];
        for (int r = 0; r < REPS; r++) {
            double tmp_i = tmp[(size_t)r * N + i];
            for (size_t s = (size_t)r * SAMPLES; s < (size_t)(r + 1) * SAMPLES; s++) {
                double t = (double)row[col[s]] * tmp_i;
                ref[s] += t;
                mag[s] += fabs(t);
            }
        }
    }
    for (int r = 0; r < REPS; r++)
        for (size_t s = (size_t)r * SAMPLES; s < (size_t)(r + 1) * SAMPLES; s++) {
            float got = y[(size_t)r * N + col[s]];
            if (!(fabs((double)got - ref[s]) <= 1e-5 * mag[s]) && wrong_y++ < 5)
                fprintf(stderr, "matvec_atax: repetition %d: y[%d] = %.9g, expected %.9g\n", r,
                        col[s], got, ref[s]);
        }
    if (wrong_tmp || wrong_y) {
        printf("matvec_atax: WRONG %d of %d sampled tmp values, %d of %d sampled y values\n",
               wrong_tmp, REPS * SAMPLES, wrong_y, REPS * SAMPLES);
        return 1;
    }
    printf("matvec_atax: check ok\n");
    return 0;
}
