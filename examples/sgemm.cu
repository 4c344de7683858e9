// sgemm: C = A x B for square float matrices, the textbook tiled kernel: one
// thread per element of C in 32 x 32 thread blocks, the k loop in 32 x 32
// tiles of A and B staged in shared memory. Split by block rows, each GPU
// computes a band of rows of C from its band of A and all of B. Every element
// sums its products in the same order, with explicit fused multiply-adds, so
// C is bit-identical on any number of GPUs. Checked against a CPU dot product
// in double: each element may differ by at most the rounding bound of its
// sum, 2u times the sum of |partial sums| (u = 2^-24); all rows of small
// matrices, on large ones the rows at the edges of 2, 4 and 8-way splits and a
// few others.
#include <cmath>
#include "example_runtime.h"

static const example_defaults defaults = {
    "sgemm", "matrix side N (C = A x B, all N x N; a multiple of 32)", 8192, 512, 2, 2, 5, 3,
};

constexpr int TILE = 32;

__global__ void sgemm_tiled(const float *a, const float *b, float *c, size_t n)
{
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    size_t row = (size_t)blockIdx.y * TILE + threadIdx.y;
    size_t col = (size_t)blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (size_t k0 = 0; k0 < n; k0 += TILE) {
        a_tile[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
        b_tile[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            sum = __fmaf_rn(a_tile[threadIdx.y][k], b_tile[k][threadIdx.x], sum);
        __syncthreads();
    }
    c[row * n + col] = sum;
}

// Entries in [-1, 1) in steps of 1/1024; `which` tells A (0) from B (1).
static float initial_value(int which, size_t n, size_t row, size_t col)
{
    uint64_t h = example_hash((uint64_t)which * n * n + row * n + col);
    return (float)((int)(h & 2047) - 1024) * (1.0f / 1024);
}

// Checks row i of C: each element against the exact dot product (in double),
// allowed 2u times the sum over k of |partial sum up to k|, which bounds the
// rounding of a float sum of fused multiply-adds in k order. Returns the
// number of wrong elements, and the worst ratio of error to allowance.
static size_t check_row(const std::vector<float> &a, const std::vector<float> &b,
                        const std::vector<float> &c, size_t n, size_t i, double *worst_ratio)
{
    const double u = std::ldexp(1.0, -24);
    std::vector<double> partial(n, 0.0), partial_magnitude(n, 0.0);
    for (size_t k = 0; k < n; k++) {
        double aik = a[i * n + k];
        const float *b_row = &b[k * n];
        for (size_t j = 0; j < n; j++) {
            partial[j] += aik * (double)b_row[j];
            partial_magnitude[j] += std::fabs(partial[j]);
        }
    }
    size_t wrong = 0;
    for (size_t j = 0; j < n; j++) {
        double error = std::fabs((double)c[i * n + j] - partial[j]);
        double allowed = 2 * u * partial_magnitude[j] + 1e-30;
        if (!(error <= allowed))
            wrong++;
        double ratio = error / allowed;
        if (!(ratio <= *worst_ratio))
            *worst_ratio = ratio;
    }
    return wrong;
}

int main(int argc, char **argv)
{
    example_options options = example_parse_options(argc, argv, &defaults);
    size_t n = options.size;
    if (n % TILE != 0 || n > 65535ull * TILE)
        example_bad_size(&defaults, "the matrix side must be a multiple of 32, at most 2097120");
    size_t elements = n * n;
    const dim3 threads(TILE, TILE);
    const dim3 blocks((unsigned)(n / TILE), (unsigned)(n / TILE));

    std::vector<float> a(elements), b(elements), c(elements);
    example_parallel_for(n, [&](size_t first, size_t last) {
        for (size_t r = first; r < last; r++)
            for (size_t k = 0; k < n; k++) {
                a[r * n + k] = initial_value(0, n, r, k);
                b[r * n + k] = initial_value(1, n, r, k);
            }
    });
    cudaStream_t stream;
    EXAMPLE_CHECK(cudaStreamCreate(&stream));
    float *da, *db, *dc;
    EXAMPLE_CHECK(cudaMalloc(&da, elements * sizeof(float)));
    EXAMPLE_CHECK(cudaMalloc(&db, elements * sizeof(float)));
    EXAMPLE_CHECK(cudaMalloc(&dc, elements * sizeof(float)));
    EXAMPLE_CHECK(
        cudaMemcpyAsync(da, a.data(), elements * sizeof(float), cudaMemcpyHostToDevice, stream));
    EXAMPLE_CHECK(
        cudaMemcpyAsync(db, b.data(), elements * sizeof(float), cudaMemcpyHostToDevice, stream));

    auto launch_once = [&] { sgemm_tiled<<<blocks, threads, 0, stream>>>(da, db, dc, n); };
    launch_once(); // warm-up, not timed
    EXAMPLE_CHECK(cudaGetLastError());
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    float ms = example_time_launches(stream, options, launch_once);

    EXAMPLE_CHECK(
        cudaMemcpyAsync(c.data(), dc, elements * sizeof(float), cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));

    bool every_row = (double)n * n * n <= 2e9;
    std::vector<size_t> rows;
    if (every_row)
        for (size_t r = 0; r < n; r++)
            rows.push_back(r);
    else
        rows = example_indices_to_check(n, 0, n - 1, 20);
    std::vector<size_t> wrong_in_row(rows.size(), 0);
    std::vector<double> worst_in_row(rows.size(), 0.0);
    example_parallel_for(rows.size(), [&](size_t first, size_t last) {
        for (size_t k = first; k < last; k++)
            wrong_in_row[k] = check_row(a, b, c, n, rows[k], &worst_in_row[k]);
    });
    size_t wrong = 0;
    double worst = 0;
    for (size_t k = 0; k < rows.size(); k++) {
        if (wrong_in_row[k] && wrong == 0)
            std::fprintf(stderr, "sgemm: row %zu: %zu elements outside the rounding bound\n",
                         rows[k], wrong_in_row[k]);
        wrong += wrong_in_row[k];
        if (!(worst_in_row[k] <= worst))
            worst = worst_in_row[k];
    }
    char checked[64];
    if (every_row)
        std::snprintf(checked, sizeof checked, "every row");
    else
        std::snprintf(checked, sizeof checked, "%zu rows", rows.size());
    if (wrong) {
        std::fprintf(stderr, "sgemm: %zu elements wrong in all; worst error %.3g times the bound\n",
                     wrong, worst);
        std::printf("sgemm: %zu x %zu, %s checked against the CPU: FAIL\n", n, n, checked);
        return 1;
    }
    std::printf("sgemm: %zu x %zu, %s checked against the CPU: PASS checksum 0x%016llx\n", n, n,
                checked,
                (unsigned long long)example_checksum(c.data(), elements * sizeof(float),
                                                     EXAMPLE_CHECKSUM_START));
    example_print_time(&defaults, &options, ms);
    EXAMPLE_CHECK(cudaFree(da));
    EXAMPLE_CHECK(cudaFree(db));
    EXAMPLE_CHECK(cudaFree(dc));
    EXAMPLE_CHECK(cudaStreamDestroy(stream));
    return 0;
}
