// jacobi2d: Jacobi iteration for the 2D Laplace equation on a square float
// grid: every interior point becomes the mean of its four neighbours, the
// boundary stays fixed, two buffers swap roles every sweep (ping-pong), one
// sweep per launch on a 2D grid of 32 x 8 thread blocks. Split by block rows,
// each GPU updates a band of rows and reads one row of each neighbour's band.
// The arithmetic uses explicit round-to-nearest intrinsics, so the GPU result
// is bit-identical to the CPU's (and the same whether the kernel runs from
// nvcc's machine code or from PTX the driver compiles, as under mgpu). The
// check is exact: every row on small grids; on large ones, rows at the band
// edges of 2, 4 and 8-way splits and a few others, each computed on the CPU
// from the band of rows it depends on.
#include "example_runtime.h"

static const example_defaults defaults = {
    "jacobi2d", "grid side (points per row and column)", 16384, 512, 20, 5, 5, 3,
};

__global__ void jacobi_sweep(const float *in, float *out, size_t side)
{
    size_t col = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t row = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (row < 1 || row + 1 >= side || col < 1 || col + 1 >= side)
        return;
    size_t at = row * side + col;
    float sum =
        __fadd_rn(__fadd_rn(__fadd_rn(in[at - side], in[at + side]), in[at - 1]), in[at + 1]);
    out[at] = __fmul_rn(0.25f, sum);
}

static float initial_value(size_t row, size_t col)
{
    return (float)((row * 7 + col * 13) % 97) * (1.0f / 128);
}

// One sweep of rows [first, last] of a band of whole rows (the same
// arithmetic, in the same order, as the kernel).
static void cpu_sweep_rows(const float *in, float *out, size_t side, size_t first, size_t last)
{
    for (size_t r = first; r <= last; r++)
        for (size_t c = 1; c + 1 < side; c++) {
            size_t at = r * side + c;
            out[at] = 0.25f * (((in[at - side] + in[at + side]) + in[at - 1]) + in[at + 1]);
        }
}

// Rows lo..hi of the grid after `sweeps` sweeps, from the initial grid. Where
// lo or hi is not the grid's boundary, the band's edge row is not updated and
// its error spreads one row per sweep, so the rows within `sweeps` of such an
// edge are not computed; rows further in are exact.
static std::vector<float> cpu_band_after(const std::vector<float> &initial, size_t side, size_t lo,
                                         size_t hi, unsigned long long sweeps, bool parallel)
{
    std::vector<float> in(initial.begin() + lo * side, initial.begin() + (hi + 1) * side);
    std::vector<float> out = in;
    long long rows = (long long)(hi - lo + 1);
    for (unsigned long long s = 1; s <= sweeps; s++) {
        long long first = lo == 0 ? 1 : (long long)s;
        long long last = hi == side - 1 ? rows - 2 : rows - 1 - (long long)s;
        if (first <= last) {
            if (parallel)
                example_parallel_for((size_t)(last - first + 1), [&](size_t a, size_t b) {
                    if (a < b)
                        cpu_sweep_rows(in.data(), out.data(), side, first + a, first + b - 1);
                });
            else
                cpu_sweep_rows(in.data(), out.data(), side, first, last);
        }
        in.swap(out);
    }
    return in;
}

int main(int argc, char **argv)
{
    example_options options = example_parse_options(argc, argv, &defaults);
    size_t side = options.size;
    const dim3 threads(32, 8);
    if (side < 3 || side > 65535ull * threads.y)
        example_bad_size(&defaults, "the grid side must be from 3 to 524280");
    dim3 blocks((unsigned)((side + threads.x - 1) / threads.x),
                (unsigned)((side + threads.y - 1) / threads.y));
    size_t points = side * side;

    std::vector<float> initial(points), result(points);
    example_parallel_for(side, [&](size_t first, size_t last) {
        for (size_t r = first; r < last; r++)
            for (size_t c = 0; c < side; c++)
                initial[r * side + c] = initial_value(r, c);
    });
    cudaStream_t stream;
    EXAMPLE_CHECK(cudaStreamCreate(&stream));
    float *grids[2];
    for (float *&g : grids) {
        EXAMPLE_CHECK(cudaMalloc(&g, points * sizeof(float)));
        EXAMPLE_CHECK(cudaMemcpyAsync(g, initial.data(), points * sizeof(float),
                                      cudaMemcpyHostToDevice, stream));
    }

    unsigned long long sweeps_done = 0;
    auto launch_once = [&] {
        jacobi_sweep<<<blocks, threads, 0, stream>>>(grids[sweeps_done % 2],
                                                     grids[(sweeps_done + 1) % 2], side);
        sweeps_done++;
    };
    launch_once(); // warm-up, not timed
    EXAMPLE_CHECK(cudaGetLastError());
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    float ms = example_time_launches(stream, options, launch_once);

    EXAMPLE_CHECK(cudaMemcpyAsync(result.data(), grids[sweeps_done % 2], points * sizeof(float),
                                  cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));

    // The whole grid on the CPU where that is quick, else sampled rows.
    bool whole_grid = (double)points * (double)sweeps_done <= 2e9;
    std::vector<size_t> rows;
    if (whole_grid)
        for (size_t r = 0; r < side; r++)
            rows.push_back(r);
    else
        rows = example_indices_to_check(side, 1, side - 2, 20);
    std::vector<size_t> wrong_in_row(rows.size(), 0);
    if (whole_grid) {
        std::vector<float> expected = cpu_band_after(initial, side, 0, side - 1, sweeps_done, true);
        for (size_t k = 0; k < rows.size(); k++)
            for (size_t c = 0; c < side; c++)
                wrong_in_row[k] += expected[rows[k] * side + c] != result[rows[k] * side + c];
    } else {
        example_parallel_for(rows.size(), [&](size_t first, size_t last) {
            for (size_t k = first; k < last; k++) {
                size_t r = rows[k];
                size_t lo = r > sweeps_done ? r - sweeps_done : 0;
                size_t hi = std::min<size_t>(side - 1, r + sweeps_done);
                std::vector<float> band = cpu_band_after(initial, side, lo, hi, sweeps_done, false);
                for (size_t c = 0; c < side; c++)
                    wrong_in_row[k] += band[(r - lo) * side + c] != result[r * side + c];
            }
        });
    }
    size_t wrong = 0;
    for (size_t k = 0; k < rows.size(); k++) {
        if (wrong_in_row[k] && wrong == 0)
            std::fprintf(stderr, "jacobi2d: row %zu: %zu points differ from the CPU's\n", rows[k],
                         wrong_in_row[k]);
        wrong += wrong_in_row[k];
    }
    char checked[64];
    if (whole_grid)
        std::snprintf(checked, sizeof checked, "every row");
    else
        std::snprintf(checked, sizeof checked, "%zu rows", rows.size());
    if (wrong) {
        std::fprintf(stderr, "jacobi2d: %zu points wrong in all\n", wrong);
        std::printf("jacobi2d: %zu x %zu grid, %llu sweeps, %s checked against the CPU: FAIL\n",
                    side, side, sweeps_done, checked);
        return 1;
    }
    std::printf("jacobi2d: %zu x %zu grid, %llu sweeps, %s checked against the CPU: PASS "
                "checksum 0x%016llx\n",
                side, side, sweeps_done, checked,
                (unsigned long long)example_checksum(result.data(), points * sizeof(float),
                                                     EXAMPLE_CHECKSUM_START));
    example_print_time(&defaults, &options, ms);
    for (float *g : grids)
        EXAMPLE_CHECK(cudaFree(g));
    EXAMPLE_CHECK(cudaStreamDestroy(stream));
    return 0;
}
