// mpi_jacobi: the 2D Jacobi sweep of jacobi2d.cu with the grid's rows divided
// among MPI ranks. Each rank holds its band of rows and one halo row on each
// side on its GPU; every sweep it updates its band in one kernel launch
// (which mgpu-run splits over the rank's GPUs), then trades its edge rows
// with the neighbouring ranks through host memory (MPI_Sendrecv). Rank 0
// gathers the grid, checks every point against the CPU (the arithmetic is
// explicit round-to-nearest, so results are bit-identical) and prints one
// result line that does not depend on the number of ranks or GPUs, then a
// "time:" line: the median time per sweep, halo exchange included.
//
//   mpirun -np 2 mgpu-run -n 4 examples/mpi_jacobi [--side N] [--sweeps S] [--quick]
#include <mpi.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK_CUDA(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,              \
                         cudaGetErrorString(e_));                                                  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

// Rows 1..rows of `in` (row 0 and rows+1 are halos) into `out`, interior
// columns only: the same arithmetic, in the same order, as the CPU's.
__global__ void jacobi_band(const float *in, float *out, size_t side, size_t rows)
{
    size_t col = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t row = (size_t)blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (row > rows || col < 1 || col + 1 >= side)
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

static void cpu_sweep(const std::vector<float> &in, std::vector<float> &out, size_t side)
{
    for (size_t r = 1; r + 1 < side; r++)
        for (size_t c = 1; c + 1 < side; c++) {
            size_t at = r * side + c;
            out[at] = 0.25f * (((in[at - side] + in[at + side]) + in[at - 1]) + in[at + 1]);
        }
}

static unsigned long long checksum(const std::vector<float> &grid)
{
    unsigned long long sum = 0;
    for (size_t i = 0; i < grid.size(); i++) {
        unsigned bits;
        std::memcpy(&bits, &grid[i], sizeof bits);
        sum = sum * 1000003u + bits;
    }
    return sum;
}

static size_t parse_size(const char *text, const char *flag)
{
    char *end;
    unsigned long long v = std::strtoull(text, &end, 10);
    if (*end != '\0' || v == 0) {
        std::fprintf(stderr, "mpi_jacobi: %s needs a positive number, not '%s'\n", flag, text);
        std::exit(2);
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    size_t side = 4096, sweeps = 100;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            side = 512;
            sweeps = 20;
        } else if (std::strcmp(argv[i], "--side") == 0 && i + 1 < argc) {
            side = parse_size(argv[++i], "--side");
        } else if (std::strcmp(argv[i], "--sweeps") == 0 && i + 1 < argc) {
            sweeps = parse_size(argv[++i], "--sweeps");
        } else {
            if (rank == 0)
                std::fprintf(
                    stderr, "usage: mpi_jacobi [--side N] [--sweeps S] [--quick]\n"
                            "  the grid is N x N floats (default 4096; --quick: 512, 20 sweeps)\n");
            MPI_Finalize();
            return 2;
        }
    }
    size_t interior = side - 2;
    if (side < 3 || interior < (size_t)ranks) {
        if (rank == 0)
            std::fprintf(stderr, "mpi_jacobi: a side of %zu has too few rows for %d ranks\n", side,
                         ranks);
        MPI_Finalize();
        return 2;
    }
    // Rank r owns interior rows [first, first + rows), counted in the grid.
    size_t base = interior / ranks, extra = interior % ranks;
    size_t rows = base + ((size_t)rank < extra);
    size_t first = 1 + (size_t)rank * base + std::min<size_t>((size_t)rank, extra);

    // The band and its two halo rows, from the initial grid.
    std::vector<float> band((rows + 2) * side);
    for (size_t r = 0; r < rows + 2; r++)
        for (size_t c = 0; c < side; c++)
            band[r * side + c] = initial_value(first - 1 + r, c);
    float *in, *out;
    size_t bytes = band.size() * sizeof(float);
    CHECK_CUDA(cudaMalloc(&in, bytes));
    CHECK_CUDA(cudaMalloc(&out, bytes));
    CHECK_CUDA(cudaMemcpy(in, band.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(out, band.data(), bytes, cudaMemcpyHostToDevice));

    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL,
        down = rank + 1 < ranks ? rank + 1 : MPI_PROC_NULL;
    std::vector<float> send_up(side), send_down(side), from_up(side), from_down(side);
    dim3 block(32, 8), grid((unsigned)((side + 31) / 32), (unsigned)((rows + 7) / 8));
    std::vector<double> sweep_ms;
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t s = 0; s < sweeps; s++) {
        double start = MPI_Wtime();
        jacobi_band<<<grid, block>>>(in, out, side, rows);
        CHECK_CUDA(cudaGetLastError());
        // The band's edge rows to the neighbours, theirs into the halos.
        CHECK_CUDA(
            cudaMemcpy(send_up.data(), out + side, side * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(send_down.data(), out + rows * side, side * sizeof(float),
                              cudaMemcpyDeviceToHost));
        MPI_Sendrecv(send_up.data(), (int)side, MPI_FLOAT, up, 0, from_down.data(), (int)side,
                     MPI_FLOAT, down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(send_down.data(), (int)side, MPI_FLOAT, down, 1, from_up.data(), (int)side,
                     MPI_FLOAT, up, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (up != MPI_PROC_NULL)
            CHECK_CUDA(
                cudaMemcpy(out, from_up.data(), side * sizeof(float), cudaMemcpyHostToDevice));
        if (down != MPI_PROC_NULL)
            CHECK_CUDA(cudaMemcpy(out + (rows + 1) * side, from_down.data(), side * sizeof(float),
                                  cudaMemcpyHostToDevice));
        std::swap(in, out);
        sweep_ms.push_back((MPI_Wtime() - start) * 1e3);
    }

    // The grid on rank 0: each rank's band without its halos.
    CHECK_CUDA(cudaMemcpy(band.data(), in, bytes, cudaMemcpyDeviceToHost));
    std::vector<int> counts(ranks), displs(ranks);
    for (int r = 0; r < ranks; r++) {
        size_t rr = base + ((size_t)r < extra),
               fr = 1 + (size_t)r * base + std::min<size_t>((size_t)r, extra);
        counts[r] = (int)(rr * side);
        displs[r] = (int)(fr * side);
    }
    std::vector<float> result(rank == 0 ? side * side : 0);
    MPI_Gatherv(band.data() + side, (int)(rows * side), MPI_FLOAT, result.data(), counts.data(),
                displs.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
    std::sort(sweep_ms.begin(), sweep_ms.end());
    double median = sweep_ms[sweep_ms.size() / 2], slowest = median;
    MPI_Reduce(&median, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int status = 0;
    if (rank == 0) {
        std::vector<float> ref(side * side), next;
        for (size_t r = 0; r < side; r++)
            for (size_t c = 0; c < side; c++)
                ref[r * side + c] = initial_value(r, c);
        // The boundary rows never change; the gathered grid lacks them.
        for (size_t c = 0; c < side; c++) {
            result[c] = ref[c];
            result[(side - 1) * side + c] = ref[(side - 1) * side + c];
        }
        next = ref;
        for (size_t s = 0; s < sweeps; s++) {
            cpu_sweep(ref, next, side);
            std::swap(ref, next);
        }
        size_t wrong = 0;
        for (size_t i = 0; i < ref.size(); i++)
            wrong += std::memcmp(&ref[i], &result[i], sizeof(float)) != 0;
        std::printf("mpi_jacobi: %zu x %zu, %zu sweeps, every point checked against the CPU: %s "
                    "checksum 0x%016llx\n",
                    side, side, sweeps, wrong == 0 ? "PASS" : "FAIL", checksum(result));
        std::printf("time: mpi_jacobi sweep_ms=%.4f ranks=%d\n", slowest, ranks);
        status = wrong == 0 ? 0 : 1;
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK_CUDA(cudaFree(in));
    CHECK_CUDA(cudaFree(out));
    MPI_Finalize();
    return status;
}
