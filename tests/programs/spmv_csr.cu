// spmv_csr: y = A x for a sparse matrix in CSR form, in the style of SHOC's
// "Spmv" (and Bell & Garland's kernels): the scalar kernel gives each row to
// one thread; the vector kernel gives each row to a warp, which strides over
// the row and reduces with __shfl_down_sync. Each runs 10 times. The values are
// small whole numbers stored as floats, so every sum is exact in any order and
// both results must equal the CPU's exactly. Under mgpu: 1D grids of 391 and
// 12501 blocks cut by blocks, gathers from x across all slices.
// SCALE s (optional argument, 1 to 100000): 100003 m rows and columns, where
// m = s up to s = 24 (2.4M rows, 59M nonzeros, 9376 and 300009 blocks);
// beyond, m = ceil(s / R) and the kernels run 10 R times, R = ceil(s / 24),
// since the host side (building the matrix) grows with the matrix. The check
// stays whole and exact.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define BLOCK_SIZE 256
#define WARP_SIZE 32

static uint32_t lcg_state = 99u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

__global__ void spmv_csr_scalar(const float *val, const int *cols, const int *row_ptr,
                                const float *x, float *y, int num_rows)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; j++)
            sum += val[j] * x[cols[j]];
        y[row] = sum;
    }
}

__global__ void spmv_csr_vector(const float *val, const int *cols, const int *row_ptr,
                                const float *x, float *y, int num_rows)
{
    int lane = threadIdx.x & (WARP_SIZE - 1);
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / WARP_SIZE;
    if (row < num_rows) { // whole warps take this branch together
        float sum = 0.0f;
        for (int j = row_ptr[row] + lane; j < row_ptr[row + 1]; j += WARP_SIZE)
            sum += val[j] * x[cols[j]];
        for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2)
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0)
            y[row] = sum;
    }
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "spmv_csr", 100000);
    const int repeats = (scale + 23) / 24, size_scale = (scale + repeats - 1) / repeats;
    const int num_rows = 100003 * size_scale, num_cols = 100003 * size_scale, passes = 10 * repeats;
    std::vector<int> row_ptr(num_rows + 1), cols;
    std::vector<float> val, x(num_cols);
    row_ptr[0] = 0;
    for (int r = 0; r < num_rows; r++) {
        int nnz_row = 1 + lcg() % 48;
        for (int k = 0; k < nnz_row; k++) {
            cols.push_back((int)(lcg() % num_cols));
            val.push_back((float)((int)(lcg() % 17) - 8));
        }
        row_ptr[r + 1] = (int)cols.size();
    }
    for (int c = 0; c < num_cols; c++)
        x[c] = (float)((int)(lcg() % 17) - 8);
    int nnz = row_ptr[num_rows];

    float *d_val, *d_x, *d_y_scalar, *d_y_vector;
    int *d_cols, *d_row_ptr;
    CHECK(cudaMalloc(&d_val, nnz * sizeof(float)));
    CHECK(cudaMalloc(&d_cols, nnz * sizeof(int)));
    CHECK(cudaMalloc(&d_row_ptr, (num_rows + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d_x, num_cols * sizeof(float)));
    CHECK(cudaMalloc(&d_y_scalar, num_rows * sizeof(float)));
    CHECK(cudaMalloc(&d_y_vector, num_rows * sizeof(float)));
    CHECK(cudaMemcpy(d_val, val.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_cols, cols.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_row_ptr, row_ptr.data(), (num_rows + 1) * sizeof(int),
                     cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_x, x.data(), num_cols * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_y_scalar, 0xff, num_rows * sizeof(float))); // NaNs until written
    CHECK(cudaMemset(d_y_vector, 0xff, num_rows * sizeof(float)));

    int scalar_blocks = (num_rows + BLOCK_SIZE - 1) / BLOCK_SIZE;
    int vector_blocks = (int)(((long long)num_rows * WARP_SIZE + BLOCK_SIZE - 1) / BLOCK_SIZE);
    for (int p = 0; p < passes; p++) {
        spmv_csr_scalar<<<scalar_blocks, BLOCK_SIZE>>>(d_val, d_cols, d_row_ptr, d_x, d_y_scalar,
                                                       num_rows);
        CHECK(cudaGetLastError());
        spmv_csr_vector<<<vector_blocks, BLOCK_SIZE>>>(d_val, d_cols, d_row_ptr, d_x, d_y_vector,
                                                       num_rows);
        CHECK(cudaGetLastError());
    }
    std::vector<float> y_scalar(num_rows), y_vector(num_rows);
    CHECK(
        cudaMemcpy(y_scalar.data(), d_y_scalar, num_rows * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(
        cudaMemcpy(y_vector.data(), d_y_vector, num_rows * sizeof(float), cudaMemcpyDeviceToHost));

    // CPU reference, exact: |sum| <= 48 * 64, whole numbers.
    std::vector<int> ref(num_rows);
    int wrong = 0;
    for (int r = 0; r < num_rows; r++) {
        int s = 0;
        for (int j = row_ptr[r]; j < row_ptr[r + 1]; j++)
            s += (int)val[j] * (int)x[cols[j]];
        ref[r] = s;
        if ((y_scalar[r] != (float)s || y_vector[r] != (float)s) && wrong++ < 5)
            fprintf(stderr, "spmv_csr: y[%d] = %g (scalar), %g (vector), expected %d\n", r,
                    y_scalar[r], y_vector[r], s);
    }
    printf("spmv_csr: %d rows, %d nonzeros, %d passes, blocks %d (scalar) %d (vector)\n", num_rows,
           nnz, passes, scalar_blocks, vector_blocks);
    printf("spmv_csr: checksum of y 0x%016llx\n",
           (unsigned long long)fnv1a(y_scalar.data(), y_scalar.size() * sizeof(float)));
    if (scale > 1)
        printf("spmv_csr: SCALE %d: every row checked\n", scale);
    CHECK(cudaFree(d_val));
    CHECK(cudaFree(d_cols));
    CHECK(cudaFree(d_row_ptr));
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_y_scalar));
    CHECK(cudaFree(d_y_vector));
    if (wrong) {
        printf("spmv_csr: FAIL %d rows wrong\n", wrong);
        return 1;
    }
    printf("spmv_csr: PASS\n");
    return 0;
}
