// sgemm_tiled_repeat: the textbook shared-memory tiled matrix multiply (the
// CUDA Programming Guide's and the SDK matrixMul sample's kernel, Kirk & Hwu's
// "tiled matrix multiplication"): one thread per element of C, a 2D grid of
// 32 x 32 blocks of 32 x 32 threads; every block walks the k dimension tile
// by tile in a fixed order, staging a 32 x 32 tile of A and one of B in shared
// memory between two __syncthreads(). The kernel takes SGEMM's beta and
// computes C = A B + beta C with beta = 1, so the 300 launches accumulate
// C = 300 A B in place, each launch reading the C the previous one wrote.
//
// Sizes: A, B and C are 1024 x 1024 floats (4 MiB each, 12 MiB of device
// memory); 300 launches of 2.15 GFLOP each, 644 GFLOP in all. The entries of
// A and B are k/16 for integers k in [-16, 16], so every product is a
// multiple of 1/256 and every partial sum of A B stays below 2^18 units of
// 1/256: A B is exact in float whatever the summation order, and so is every
// C = l A B along the way (|A B| <= 53 for this seed; exact while |C| < 2^16).
//
// Kernel and launch shape: sgemm_tiled<<<dim3(32, 32), dim3(32, 32)>>>, 8 KiB
// of shared memory per block, 300 launches on the default stream.
//
// Under a runtime that cuts each grid into contiguous block ranges: in
// linear block order (blockIdx.x fastest) a range is a band of whole block
// rows, so each GPU computes a band of rows of C and reads the matching rows
// of A, but every slice reads all of B (4 MiB) on every launch; A and B never
// change after the first copy, and the band of C a GPU writes is the band it
// reads again in the next launch (if the cut stays the same).
//
// Expected GPU time on one H100: the inner loop does one or two shared-memory
// loads per FMA (B's column; A's row element, a broadcast, unless ptxas
// merges four into one 128-bit load), so shared-memory bandwidth caps it at
// 8-13 TFLOPS, an eighth to a fifth of FP32 peak; 32 registers let two
// 1024-thread blocks share an SM (264 at once, the grid is ~4 waves). About
// 0.2-0.35 ms per launch, ~60-100 ms for the 300.
//
// Check: 64 sampled elements of C against 300 times the double-precision dot
// product of A's row and B's column, relative tolerance 1e-3 (the values are
// exact, so any error is a real one).
//
// SCALE s (1 to 100, default 1): 300 s launches accumulating C = 300 s A B.
// Past SCALE 4 C may outgrow 2^16, and then each launch's addition into C
// rounds once (each launch's A B stays exact); the check's reference makes
// the same float additions, one per launch for each of the 64 elements.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "tests/programs/program_check.h"

#define TILE 32

static uint32_t lcg_state = 31337u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

// C = A B + beta C for n x n row-major matrices, n a multiple of TILE.
__global__ void sgemm_tiled(const float *A, const float *B, float *C, int n, float beta)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;

    float sum = 0.0f;
    for (int t = 0; t < n / TILE; t++) {
        As[ty][tx] = A[row * n + t * TILE + tx];
        Bs[ty][tx] = B[(t * TILE + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = sum + beta * C[row * n + col];
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "sgemm_tiled_repeat", MAX_SCALE);
    const int n = 1024, launches = 300 * scale;
    const size_t elems = (size_t)n * n, bytes = elems * sizeof(float);
    std::vector<float> A(elems), B(elems), C(elems);
    for (size_t i = 0; i < elems; i++)
        A[i] = (float)((int)(lcg() % 33) - 16) / 16.0f;
    for (size_t i = 0; i < elems; i++)
        B[i] = (float)((int)(lcg() % 33) - 16) / 16.0f;

    float *d_A, *d_B, *d_C;
    CHECK(cudaMalloc(&d_A, bytes));
    CHECK(cudaMalloc(&d_B, bytes));
    CHECK(cudaMalloc(&d_C, bytes));
    CHECK(cudaMemcpy(d_A, A.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_B, B.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_C, 0, bytes));

    dim3 block(TILE, TILE), grid(n / TILE, n / TILE);
    for (int l = 0; l < launches; l++) {
        sgemm_tiled<<<grid, block>>>(d_A, d_B, d_C, n, 1.0f);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpy(C.data(), d_C, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_A));
    CHECK(cudaFree(d_B));
    CHECK(cudaFree(d_C));

    double sum = 0.0;
    for (size_t i = 0; i < elems; i++)
        sum += C[i];
    printf("sgemm_tiled_repeat: n=%d launches=%d sum=%.4f hash %016llx\n", n, launches, sum,
           (unsigned long long)fnv1a(C.data(), bytes));

    // 64 elements spread over the whole matrix (every block row and every
    // block column is hit twice): the dot product in double (exact), then
    // added into C once per launch in float as the kernel does (launches
    // times the dot product, exactly, while |C| < 2^16).
    for (int s = 0; s < 64; s++) {
        int row = s * 16 + (s * 7) % 16, col = (s * 23) % 64 * 16 + (s * 5 + 3) % 16;
        double dot = 0.0;
        for (int k = 0; k < n; k++)
            dot += (double)A[(size_t)row * n + k] * B[(size_t)k * n + col];
        float c = 0.0f;
        for (int l = 0; l < launches; l++)
            c = c + (float)dot;
        double ref = c, gpu = C[(size_t)row * n + col];
        if (!(fabs(gpu - ref) <= 1e-3 * fabs(ref) + 1e-6)) {
            printf("sgemm_tiled_repeat: WRONG C[%d][%d] = %.6f, expected %.6f\n", row, col, gpu,
                   ref);
            return 1;
        }
    }
    printf("sgemm_tiled_repeat: check ok\n");
    return 0;
}
