// lu_shrinking: in-place LU decomposition without pivoting (Doolittle, unit
// lower triangle) of a diagonally dominant 4096 x 4096 float matrix, the
// right-looking way of Rodinia's "gaussian" (kernels Fan1/Fan2) and the
// simple version of its "lud": for each pivot k the host launches
//   lu_column:   l(i,k) = a(i,k) / a(k,k) for every row i > k, stored in
//                place of a(i,k) (one thread per row);
//   lu_trailing: a(i,j) -= l(i,k) * a(k,j) for every i > k, j > k (one
//                thread per element of the trailing submatrix).
// Afterwards the strict lower triangle holds L (unit diagonal implied) and
// the upper triangle U. The matrix has off-diagonal entries in [-1, 1) and
// a diagonal one more than its row's absolute sum, so no pivot is small.
//
// Sizes: n = 4096, 16.8M floats, 64 MiB of device memory.
//
// Kernels and launch shapes, for k = 0 .. n-2 (m = n-k-1 rows left):
// lu_column<<<ceil(m/256), 256>>> (16 blocks down to 1, reading a column:
// one float per 16 KiB row) and lu_trailing<<<(ceil(m/16), ceil(m/16)),
// (16, 16)>>> (256 x 256 blocks down to 1 x 1). 8,190 launches in all, on
// the default stream, no host synchronisation until the end; the grids
// shrink every step.
//
// Under a runtime that cuts each grid into contiguous block ranges: the
// trailing grid is numbered x-fastest, so a range is a band of rows of the
// trailing matrix, needing the pivot row k (written by the previous step's
// band that owned it) and its rows' multipliers (written by lu_column, whose
// 256-row blocks cut the rows elsewhere); the bands' edges move by a row every
// step, and the last few hundred steps are a handful of blocks or one, too
// small to be worth splitting. Launch overhead dominates the later half.
//
// Expected GPU time on one H100: the trailing updates touch n^3/3 = 2.3e10
// elements (8 bytes each, from DRAM while the trailing matrix is larger than
// L2, from L2 afterwards): about 40-60 ms; 8,190 launches at a few
// microseconds each, most of them tiny: another 15-30 ms. About 60-120 ms.
//
// Check (host): L*U against the original matrix at 256 entries picked by the
// LCG (every 16th on the diagonal), in double: |(LU)(i,j) - A(i,j)| must be
// at most 1e-3 * (|L||U|)(i,j), a relative tolerance against the standard
// backward-error bound of LU (float rounding gives a few 1e-6 here).
//
// SCALE s (1 to 100, default 1): the whole decomposition s times, each from
// the original matrix again (a 64 MiB device-to-device copy from a pristine
// copy kept on the device for s > 1); the check is of the last, as at 1.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define TILE 16
#define COL_THREADS 256

static uint32_t lcg_state = 4096u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

// Multipliers of column k: a(i,k) /= a(k,k) for the rows below the pivot.
__global__ void lu_column(float *a, int n, int k)
{
    int i = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[(size_t)i * n + k] = a[(size_t)i * n + k] / a[(size_t)k * n + k];
}

// Trailing update: a(i,j) -= a(i,k) * a(k,j) for i, j > k.
__global__ void lu_trailing(float *a, int n, int k)
{
    int j = k + 1 + blockIdx.x * TILE + threadIdx.x;
    int i = k + 1 + blockIdx.y * TILE + threadIdx.y;
    if (i < n && j < n)
        a[(size_t)i * n + j] -= a[(size_t)i * n + k] * a[(size_t)k * n + j];
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "lu_shrinking", MAX_SCALE);
    const int n = 4096, samples = 256;
    const size_t elems = (size_t)n * n, bytes = elems * sizeof(float);

    std::vector<float> h_a(elems);
    for (int i = 0; i < n; i++) {
        double row_abs = 0.0;
        for (int j = 0; j < n; j++) {
            float v = (float)(lcg() >> 8) / 8388608.0f - 1.0f; // [-1, 1)
            h_a[(size_t)i * n + j] = v;
            if (j != i)
                row_abs += std::fabs(v);
        }
        h_a[(size_t)i * n + i] = (float)(row_abs + 1.0);
    }

    float *d_a;
    CHECK(cudaMalloc(&d_a, bytes));
    CHECK(cudaMemcpy(d_a, h_a.data(), bytes, cudaMemcpyHostToDevice));
    float *d_orig = nullptr; // the matrix again, for the rounds after the first
    if (scale > 1) {
        CHECK(cudaMalloc(&d_orig, bytes));
        CHECK(cudaMemcpy(d_orig, d_a, bytes, cudaMemcpyDeviceToDevice));
    }

    int launches = 0;
    for (int round = 0; round < scale; round++) {
        if (round > 0)
            CHECK(cudaMemcpy(d_a, d_orig, bytes, cudaMemcpyDeviceToDevice));
        for (int k = 0; k < n - 1; k++) {
            int m = n - k - 1;
            lu_column<<<(m + COL_THREADS - 1) / COL_THREADS, COL_THREADS>>>(d_a, n, k);
            CHECK(cudaGetLastError());
            dim3 block(TILE, TILE), grid((m + TILE - 1) / TILE, (m + TILE - 1) / TILE);
            lu_trailing<<<grid, block>>>(d_a, n, k);
            CHECK(cudaGetLastError());
            launches += 2;
        }
    }
    std::vector<float> h_lu(elems);
    CHECK(cudaMemcpy(h_lu.data(), d_a, bytes, cudaMemcpyDeviceToHost));

    double log_det = 0.0;
    for (int k = 0; k < n; k++)
        log_det += std::log(std::fabs((double)h_lu[(size_t)k * n + k]));
    printf("lu_shrinking: n=%d launches=%d log_abs_det=%.6f hash %016llx\n", n, launches, log_det,
           (unsigned long long)fnv1a(h_lu.data(), bytes));

    // CPU reference: (L*U)(i,j) = sum over p <= min(i,j) of L(i,p) U(p,j),
    // with L(i,i) = 1.
    for (int s = 0; s < samples; s++) {
        int i = (int)((lcg() >> 8) % n);
        int j = s % 16 == 0 ? i : (int)((lcg() >> 8) % n);
        int top = i < j ? i : j;
        double lu = 0.0, bound = 0.0;
        for (int p = 0; p <= top; p++) {
            double l = p == i ? 1.0 : (double)h_lu[(size_t)i * n + p];
            double u = h_lu[(size_t)p * n + j];
            lu += l * u;
            bound += std::fabs(l) * std::fabs(u);
        }
        double want = h_a[(size_t)i * n + j];
        if (!(std::fabs(lu - want) <= 1e-3 * bound)) {
            printf("lu_shrinking: WRONG (L*U)(%d,%d) = %.9g, A(%d,%d) = %.9g\n", i, j, lu, i, j,
                   want);
            return 1;
        }
    }

    CHECK(cudaFree(d_a));
    if (d_orig)
        CHECK(cudaFree(d_orig));
    printf("lu_shrinking: check ok\n");
    return 0;
}
