// matvec_bicg: the two matrix-vector products of a BiCG step, s = A^T r and
// q = A p, the "bicg" kernel of PolyBench/GPU, written the way that suite
// writes it: A is NX x NY floats in row-major order and two kernels,
//   bicg_kernel1: s = A^T r   one thread per column j, walking column j of A
//                             (a column walk: a warp reads 128 consecutive
//                             bytes of one row per step, coalesced);
//   bicg_kernel2: q = A p     one thread per row i, walking row i of A
//                             (a row walk: the 32 threads of a warp read 32
//                             rows 64 KiB apart, one float of each).
// As a solver's loop would, each of the 10 repetitions uploads a new r and p
// with cudaMemcpy, runs both kernels and copies s and q back to the host.
// Sizes: NX = NY = 16384 (A is 1 GiB), 10 repetitions. Device memory: about
// 1.0 GiB.
// Launch shapes: both kernels 1D grids of 64 blocks of 256 threads (fewer
// blocks than one H100 has SMs), 20 launches, 20 uploads and 20 downloads of
// 64 KiB.
// Expected GPU time on one H100: each kernel reads A once (1 GiB) but neither
// reaches the memory's bandwidth with 16384 threads on 64 SMs: the column walk
// is bound by latency (the loop unrolled by 16: 1 MiB in flight) at roughly
// 0.6-1 ms, the row walk by L1 (every warp load touches 32 lines) at roughly
// 2-2.5 ms; about 25-35 ms for the 20 launches, plus 50-100 ms of copying A
// up.
// Under a runtime that cuts each grid into contiguous block ranges: a slice of
// the column walk reads a band of columns, i.e. a 64/k KiB piece of every one
// of A's rows, so it touches pages all over the 1 GiB, plus all of r; a slice
// of the row walk reads only its own band of rows of A (a contiguous 1/k of
// it) plus all of p. The two kernels do not depend on each other, but each
// repetition's r and p come from the host (every slice needs all of both) and
// s and q go back to it (gathered from every slice), so the host waits for
// the GPUs once per repetition; A never changes after the upload.
// SCALE s (1 to 100, default 1): 10 s repetitions, each with new r and p; the
// hashes cover all of them, the check 10 of them (every s-th, the last one
// included), as much CPU work as at SCALE 1.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define NX 16384
#define NY 16384
#define REPS 10
#define DIM_THREAD_BLOCK_X 256

static uint32_t lcg_state = 19700101u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}
// In [-1, 1), a multiple of 1/1024 (exact in float).
static float lcg_signed_unit()
{
    return (float)((int)(lcg() >> 21) - 1024) / 1024.0f;
}

// s[j] = sum over i of r[i] * A[i][j]: one thread walks one column.
__global__ void bicg_kernel1(const float *A, const float *r, float *s)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < NY) {
        float sum = 0.0f;
        for (int i = 0; i < NX; i++)
            sum += r[i] * A[(size_t)i * NY + j];
        s[j] = sum;
    }
}

// q[i] = sum over j of A[i][j] * p[j]: one thread walks one row.
__global__ void bicg_kernel2(const float *A, const float *p, float *q)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NX) {
        const float *row = A + (size_t)i * NY;
        float sum = 0.0f;
        for (int j = 0; j < NY; j++)
            sum += row[j] * p[j];
        q[i] = sum;
    }
}

// The columns (of s) or rows (of q) that the check recomputes in repetition
// rep: 16 runs of 16 consecutive indices, one run in each NX/16 (in every 4
// blocks), at an offset that moves from one repetition to the next (NX = NY).
#define SAMPLES 256
static int sample_index(int rep, int k)
{
    int offset = (rep * 211 + 5) % (NX / 16 - 16 + 1);
    return (k / 16) * (NX / 16) + offset + k % 16;
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "matvec_bicg", MAX_SCALE);
    const int reps = REPS * scale;
    const size_t nn = (size_t)NX * NY;
    std::vector<float> A(nn);
    for (size_t k = 0; k < nn; k++)
        A[k] = lcg_signed_unit();

    float *d_A, *d_r, *d_p, *d_s, *d_q;
    CHECK(cudaMalloc(&d_A, nn * sizeof(float)));
    CHECK(cudaMalloc(&d_r, NX * sizeof(float)));
    CHECK(cudaMalloc(&d_p, NY * sizeof(float)));
    CHECK(cudaMalloc(&d_s, NY * sizeof(float)));
    CHECK(cudaMalloc(&d_q, NX * sizeof(float)));
    CHECK(cudaMemcpy(d_A, A.data(), nn * sizeof(float), cudaMemcpyHostToDevice));

    // Every repetition's inputs and outputs are kept for the hashes and the check.
    std::vector<float> r((size_t)reps * NX), p((size_t)reps * NY);
    std::vector<float> s((size_t)reps * NY), q((size_t)reps * NX);
    dim3 block(DIM_THREAD_BLOCK_X);
    dim3 grid_s((NY + block.x - 1) / block.x), grid_q((NX + block.x - 1) / block.x);
    for (int rep = 0; rep < reps; rep++) {
        float *r_rep = &r[(size_t)rep * NX], *p_rep = &p[(size_t)rep * NY];
        for (int i = 0; i < NX; i++)
            r_rep[i] = lcg_signed_unit();
        for (int j = 0; j < NY; j++)
            p_rep[j] = lcg_signed_unit();
        CHECK(cudaMemcpy(d_r, r_rep, NX * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_p, p_rep, NY * sizeof(float), cudaMemcpyHostToDevice));
        bicg_kernel1<<<grid_s, block>>>(d_A, d_r, d_s);
        CHECK(cudaGetLastError());
        bicg_kernel2<<<grid_q, block>>>(d_A, d_p, d_q);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(&s[(size_t)rep * NY], d_s, NY * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&q[(size_t)rep * NX], d_q, NX * sizeof(float), cudaMemcpyDeviceToHost));
    }
    CHECK(cudaFree(d_A));
    CHECK(cudaFree(d_r));
    CHECK(cudaFree(d_p));
    CHECK(cudaFree(d_s));
    CHECK(cudaFree(d_q));

    printf("matvec_bicg: s = A^T r, %d repetitions x %d floats, hash %016llx\n", reps, NY,
           (unsigned long long)fnv1a(s.data(), s.size() * sizeof(float)));
    printf("matvec_bicg: q = A p, %d repetitions x %d floats, hash %016llx\n", reps, NX,
           (unsigned long long)fnv1a(q.data(), q.size() * sizeof(float)));

    // CPU reference, in double, on a sample of each repetition's columns of s
    // and rows of q. A float sum of these 16384 terms of random sign comes
    // within a few 1e-7 of the sum of the terms' magnitudes of the exact one,
    // whatever the order; the check allows 1e-5 of it, while a wrong input
    // moves the result by about 1e-2. The repetitions checked: REPS of them,
    // every scale-th (all at SCALE 1), the last one included.
    int wrong_s = 0, wrong_q = 0;
    int checked[REPS];
    for (int c = 0; c < REPS; c++)
        checked[c] = (c + 1) * scale - 1;
    // The columns: one pass down A for all repetitions at once (each
    // repetition's sampled columns lie in the same 16 stretches of a row).
    std::vector<int> col((size_t)REPS * SAMPLES);
    std::vector<double> ref((size_t)REPS * SAMPLES, 0.0), mag((size_t)REPS * SAMPLES, 0.0);
    for (int c = 0; c < REPS; c++)
        for (int k = 0; k < SAMPLES; k++)
            col[(size_t)c * SAMPLES + k] = sample_index(checked[c], k);
    for (int i = 0; i < NX; i++) {
        const float *row = &A[(size_t)i * NY];
        for (int c = 0; c < REPS; c++) {
            double r_i = r[(size_t)checked[c] * NX + i];
            for (size_t k = (size_t)c * SAMPLES; k < (size_t)(c + 1) * SAMPLES; k++) {
                double t = r_i * (double)row[col[k]];
                ref[k] += t;
                mag[k] += fabs(t);
            }
        }
    }
    for (int c = 0; c < REPS; c++)
        for (size_t k = (size_t)c * SAMPLES; k < (size_t)(c + 1) * SAMPLES; k++) {
            int rep = checked[c];
            float got = s[(size_t)rep * NY + col[k]];
            if (!(fabs((double)got - ref[k]) <= 1e-5 * mag[k]) && wrong_s++ < 5)
                fprintf(stderr, "matvec_bicg: repetition %d: s[%d] = %.9g, expected %.9g\n", rep,
                        col[k], got, ref[k]);
        }
    // The rows, each against that repetition's p.
    for (int c = 0; c < REPS; c++) {
        int rep = checked[c];
        const float *p_rep = &p[(size_t)rep * NY];
        for (int k = 0; k < SAMPLES; k++) {
            int i = sample_index(rep, k);
            const float *row = &A[(size_t)i * NY];
            double sum = 0, abs_sum = 0;
            for (int j = 0; j < NY; j++) {
                double t = (double)row[j] * (double)p_rep[j];
                sum += t;
                abs_sum += fabs(t);
            }
            float got = q[(size_t)rep * NX + i];
            if (!(fabs((double)got - sum) <= 1e-5 * abs_sum) && wrong_q++ < 5)
                fprintf(stderr, "matvec_bicg: repetition %d: q[%d] = %.9g, expected %.9g\n", rep, i,
                        got, sum);
        }
    }
    if (wrong_s || wrong_q) {
        printf("matvec_bicg: WRONG %d of %d sampled s values, %d of %d sampled q values\n", wrong_s,
               REPS * SAMPLES, wrong_q, REPS * SAMPLES);
        return 1;
    }
    printf("matvec_bicg: check ok\n");
    return 0;
}
