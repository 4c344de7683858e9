// gaussian: Gaussian elimination in the style of Rodinia's "gaussian": for each
// pivot t the host launches Fan1 (the multipliers of column t, one thread per
// row below the pivot) and Fan2 (subtract multiplier x pivot row from every
// row below it, on the n x (n+1) augmented matrix), then solves the upper
// triangular system on the host. n = 500: 998 small launches whose grids
// shrink every step. Under mgpu: a kernel per step with a changing grid, from
// 63 rows of blocks down to one block (which cannot be split).
// SCALE s (optional argument, 1 to 8000): n grows to the cube root of 500^3 s
// (the work is n^3 / 3 multiply-subtracts; 2 (n - 1) launches), up to 10000 at
// s = 8000. At s > 1 the CPU does not eliminate: 101 rows spread from the first
// to the last are eliminated again (in double, against the GPU's pivot rows)
// and compared, what is left of them below the diagonal must be about 0, and x
// is checked whole.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

static uint32_t lcg_state = 12345u;
static float lcg_unit() // in [0, 1)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)(lcg_state >> 8) / 16777216.0f;
}

// m[i] = a[i][t] / a[t][t] for the rows i below the pivot.
__global__ void Fan1(float *m, const float *a, int n, int t)
{
    int i = t + 1 + blockIdx.x * blockDim.x + threadIdx.x;
    int cols = n + 1;
    if (i < n)
        m[i] = a[(size_t)i * cols + t] / a[(size_t)t * cols + t];
}

// a[i][j] -= m[i] * a[t][j] for the rows i below the pivot and the columns
// j >= t of the augmented matrix (the last column is b).
__global__ void Fan2(const float *m, float *a, int n, int t)
{
    int j = t + blockIdx.x * blockDim.x + threadIdx.x;
    int i = t + 1 + blockIdx.y * blockDim.y + threadIdx.y;
    int cols = n + 1;
    if (i < n && j < cols)
        a[(size_t)i * cols + j] -= m[i] * a[(size_t)t * cols + j];
}

// Back substitution on the upper triangular augmented matrix.
static std::vector<double> back_substitute(const std::vector<float> &a, int n)
{
    std::vector<double> x(n);
    int cols = n + 1;
    for (int i = n - 1; i >= 0; i--) {
        double s = a[(size_t)i * cols + n];
        for (int j = i + 1; j < n; j++)
            s -= (double)a[(size_t)i * cols + j] * x[j];
        x[i] = s / a[(size_t)i * cols + i];
    }
    return x;
}

// Row i of the upper triangle from row i of the matrix alone: eliminated (in
// double) against the pivot rows 0 .. i - 1 of u, as the GPU eliminated it.
static void eliminate_row(const std::vector<float> &a, const std::vector<float> &u, int n, int i,
                          std::vector<double> &row)
{
    const int cols = n + 1;
    row.assign(a.begin() + (size_t)i * cols, a.begin() + (size_t)(i + 1) * cols);
    for (int t = 0; t < i; t++) {
        const float *pivot = &u[(size_t)t * cols];
        double m = row[t] / pivot[t];
        for (int j = t; j < cols; j++)
            row[j] -= m * pivot[j];
    }
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "gaussian", 8000);
    // n: the largest with n^3 <= 500^3 scale (500 at scale 1).
    int n = (int)cbrt(125e6 * scale) + 1;
    while ((long long)n * n * n > 125000000LL * scale)
        n--;
    const int cols = n + 1;
    // A diagonally dominant matrix (no pivoting needed), b = A * x_true.
    std::vector<float> a((size_t)n * cols);
    std::vector<double> x_true(n);
    for (int i = 0; i < n; i++)
        x_true[i] = (double)(i % 17) - 8.0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            a[(size_t)i * cols + j] = lcg_unit() - 0.5f;
        a[(size_t)i * cols + i] += (float)n / 4;
        double b = 0;
        for (int j = 0; j < n; j++)
            b += (double)a[(size_t)i * cols + j] * x_true[j];
        a[(size_t)i * cols + n] = (float)b;
    }

    float *d_a, *d_m;
    CHECK(cudaMalloc(&d_a, a.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_m, n * sizeof(float)));
    CHECK(cudaMemcpy(d_a, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_m, 0, n * sizeof(float)));
    const int fan1_threads = 32;
    dim3 fan2_block(32, 8);
    int launches = 0;
    for (int t = 0; t < n - 1; t++) {
        int rows = n - 1 - t, columns = cols - t;
        Fan1<<<(rows + fan1_threads - 1) / fan1_threads, fan1_threads>>>(d_m, d_a, n, t);
        CHECK(cudaGetLastError());
        dim3 fan2_grid((columns + fan2_block.x - 1) / fan2_block.x,
                       (rows + fan2_block.y - 1) / fan2_block.y);
        Fan2<<<fan2_grid, fan2_block>>>(d_m, d_a, n, t);
        CHECK(cudaGetLastError());
        launches += 2;
    }
    std::vector<float> u(a.size());
    CHECK(cudaMemcpy(u.data(), d_a, u.size() * sizeof(float), cudaMemcpyDeviceToHost));

    int wrong = 0;
    std::vector<double> x_gpu = back_substitute(u, n);
    double max_err = 0;
    const int sample_rows = 101;
    if (scale == 1) {
        // CPU reference: the same elimination in float, in the same order.
        std::vector<float> ref = a, mult(n);
        for (int t = 0; t < n - 1; t++) {
            for (int i = t + 1; i < n; i++)
                mult[i] = ref[(size_t)i * cols + t] / ref[(size_t)t * cols + t];
            for (int i = t + 1; i < n; i++)
                for (int j = t; j < cols; j++)
                    ref[(size_t)i * cols + j] -= mult[i] * ref[(size_t)t * cols + j];
        }

        // The upper triangle and b' match the CPU's within rounding (the GPU
        // may fuse multiply and subtract), and both solutions are x_true.
        for (int i = 0; i < n; i++)
            for (int j = i; j < cols; j++) {
                float g = u[(size_t)i * cols + j], c = ref[(size_t)i * cols + j];
                if (!(fabsf(g - c) <= 1e-3f * (1.0f + fabsf(c))) && wrong++ < 5)
                    fprintf(stderr, "gaussian: U[%d][%d] = %.7g, expected %.7g\n", i, j, g, c);
            }
        std::vector<double> x_cpu = back_substitute(ref, n);
        for (int i = 0; i < n; i++) {
            max_err = fmax(max_err, fabs(x_gpu[i] - x_true[i]));
            if (!(fabs(x_gpu[i] - x_true[i]) <= 1e-3) || !(fabs(x_cpu[i] - x_true[i]) <= 1e-3))
                if (wrong++ < 5)
                    fprintf(stderr, "gaussian: x[%d] = %.7g (CPU %.7g), expected %g\n", i, x_gpu[i],
                            x_cpu[i], x_true[i]);
        }
    } else {
        // Rows spread from the first to the last: each row of U (and b')
        // within rounding of the matrix's row eliminated against the GPU's
        // pivot rows above it, and what is left below its diagonal about 0
        // (a step missed there leaves a whole entry of the matrix); x whole.
        std::vector<double> row;
        for (int k = 0; k < sample_rows; k++) {
            const int i = (int)((long long)(n - 1) * k / (sample_rows - 1));
            eliminate_row(a, u, n, i, row);
            for (int j = 0; j < cols; j++) {
                float g = u[(size_t)i * cols + j];
                double c = j < i ? 0.0 : row[j];
                if (!(fabs(g - c) <= 1e-3 * (1.0 + fabs(c))) && wrong++ < 5)
                    fprintf(stderr, "gaussian: U[%d][%d] = %.7g, expected %.7g\n", i, j, g, c);
            }
        }
        for (int i = 0; i < n; i++) {
            max_err = fmax(max_err, fabs(x_gpu[i] - x_true[i]));
            if (!(fabs(x_gpu[i] - x_true[i]) <= 1e-3) && wrong++ < 5)
                fprintf(stderr, "gaussian: x[%d] = %.7g, expected %g\n", i, x_gpu[i], x_true[i]);
        }
    }
    fprintf(stderr, "gaussian: max error of x %.3g\n", max_err);
    printf("gaussian: n=%d, %d pivot steps, %d launches\n", n, n - 1, launches);
    if (scale > 1)
        printf("gaussian: SCALE %d: %d rows of U checked, and x\n", scale, sample_rows);
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_m));
    if (wrong) {
        printf("gaussian: FAIL %d values wrong\n", wrong);
        return 1;
    }
    printf("gaussian: PASS\n");
    return 0;
}
