// transpose: matrix transpose from the CUDA SDK's "transpose" sample (Ruetsch &
// Micikevicius): a naive kernel and the coalesced one that goes through a
// 32 x 33 shared-memory tile (padding against bank conflicts), 32 x 8 threads
// per tile, each thread moving four elements. A 2000 x 1500 matrix (not a
// multiple of the tile), each kernel run 5 times. Under mgpu: a 63 x 47 grid
// cut along y, each slice reading a band of rows and writing a band of columns.
// SCALE s (optional argument, 1 to 1000): both sides grow by sqrt(s), to
// round(2000 sqrt(s)) x round(1500 sqrt(s)), up to s = 100 (20000 x 15000, a
// 625 x 469 grid); beyond, the launches grow instead, to (5 s + 50) / 100 of
// each (a larger input would take the host, which makes it, over a second);
// at s > 1 only 64 bands of 16 whole rows of each output, spread from the
// first row to the last, are copied back, checked and (those of the tiled
// kernel) hashed.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define TILE_DIM 32
#define BLOCK_ROWS 8

static uint32_t lcg_state = 31u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

// in is height x width, out is width x height.
__global__ void transpose_naive(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            out[x * height + (y + j)] = in[(y + j) * width + x];
}

__global__ void transpose_coalesced(float *out, const float *in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x; // transposed block offset
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "transpose", 1000);
    const bool sampled = scale > 1;
    const int size_scale = scale < 100 ? scale : 100;
    // width * height < 2^31 (the kernels' int indices): 3e8 at most.
    const int width = (int)lround(2000 * sqrt((double)size_scale)),
              height = (int)lround(1500 * sqrt((double)size_scale)),
              reps = scale <= 100 ? 5 : (5 * scale + 50) / 100;
    const size_t n = (size_t)width * height;
    const int bands = 64, band_rows = 16; // the sample of out's rows, at SCALE > 1
    std::vector<float> in(n), out_naive(sampled ? 0 : n), out_tiled(sampled ? 0 : n);
    for (size_t i = 0; i < n; i++)
        in[i] = (float)(lcg() >> 8);
    float *d_in, *d_naive, *d_tiled;
    CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK(cudaMalloc(&d_naive, n * sizeof(float)));
    CHECK(cudaMalloc(&d_tiled, n * sizeof(float)));
    CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_naive, 0, n * sizeof(float)));
    CHECK(cudaMemset(d_tiled, 0, n * sizeof(float)));
    dim3 block(TILE_DIM, BLOCK_ROWS);
    dim3 grid((width + TILE_DIM - 1) / TILE_DIM, (height + TILE_DIM - 1) / TILE_DIM);
    for (int r = 0; r < reps; r++) {
        transpose_naive<<<grid, block>>>(d_naive, d_in, width, height);
        CHECK(cudaGetLastError());
        transpose_coalesced<<<grid, block>>>(d_tiled, d_in, width, height);
        CHECK(cudaGetLastError());
    }
    size_t wrong = 0;
    uint64_t checksum;
    if (!sampled) {
        CHECK(cudaMemcpy(out_naive.data(), d_naive, n * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(out_tiled.data(), d_tiled, n * sizeof(float), cudaMemcpyDeviceToHost));

        for (int y = 0; y < height; y++)
            for (int x = 0; x < width; x++) {
                float want = in[(size_t)y * width + x];
                size_t at = (size_t)x * height + y;
                if ((out_naive[at] != want || out_tiled[at] != want) && wrong++ < 5)
                    fprintf(stderr,
                            "transpose: out[%d][%d] = %g (naive), %g (tiled), expected %g\n", x, y,
                            out_naive[at], out_tiled[at], want);
            }
        checksum = fnv1a(out_tiled.data(), n * sizeof(float));
    } else {
        // Bands of out's rows (columns of in) starting evenly from row 0 to
        // row width - band_rows: each row takes every block row of the grid.
        const size_t band = (size_t)band_rows * height;
        std::vector<float> naive(band), tiled(band);
        checksum = fnv1a(nullptr, 0);
        for (int k = 0; k < bands; k++) {
            const int x0 = (int)((size_t)k * (width - band_rows) / (bands - 1));
            CHECK(cudaMemcpy(naive.data(), d_naive + (size_t)x0 * height, band * sizeof(float),
                             cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(tiled.data(), d_tiled + (size_t)x0 * height, band * sizeof(float),
                             cudaMemcpyDeviceToHost));
            for (int y = 0; y < height; y++)
                for (int x = x0; x < x0 + band_rows; x++) {
                    float want = in[(size_t)y * width + x];
                    size_t at = (size_t)(x - x0) * height + y;
                    if ((naive[at] != want || tiled[at] != want) && wrong++ < 5)
                        fprintf(stderr,
                                "transpose: out[%d][%d] = %g (naive), %g (tiled), expected %g\n", x,
                                y, naive[at], tiled[at], want);
                }
            checksum = fnv1a(tiled.data(), band * sizeof(float), checksum);
        }
    }
    printf("transpose: %dx%d matrix, grid %ux%u, %d launches of each kernel\n", height, width,
           grid.x, grid.y, reps);
    printf("transpose: checksum 0x%016llx\n", (unsigned long long)checksum);
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_naive));
    CHECK(cudaFree(d_tiled));
    if (wrong) {
        printf("transpose: FAIL %zu elements wrong\n", wrong);
        return 1;
    }
    printf("transpose: PASS\n");
    return 0;
}
