// conv2d: 2D convolution with a 5 x 5 filter in __constant__ memory, in the
// style of the CUDA SDK's convolution samples and Kirk & Hwu's tiled
// convolution: each 16 x 16 block stages a 20 x 20 input tile (halo of 2,
// zero outside the image) in shared memory. Two filters, a binomial blur and
// a Laplacian, are swapped in with cudaMemcpyToSymbol between launches. Pixels
// are whole numbers and the weights are k/256, so every sum is exact. Under
// mgpu: a 128 x 125 grid cut along y, and __constant__ rewrites between launches.
// SCALE s (optional argument, 1 to 100000): the image grows to 2040 x 2000 m,
// where m = s up to s = 16 (2040 x 32000, a 128 x 2000 grid); beyond, m =
// ceil(s / R) and the rounds grow to 3 R, R = ceil(s / 16), since the host side
// (image, copies, the hash of both outputs) grows with the image. At s > 1 the
// CPU checks every 13th row (all 16 rows of a tile among them) and the first
// and last three rows, whole.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define FILTER_RADIUS 2
#define FILTER_SIZE (2 * FILTER_RADIUS + 1)
#define TILE 16
#define SHARED (TILE + 2 * FILTER_RADIUS)

__constant__ float c_filter[FILTER_SIZE * FILTER_SIZE];

static uint32_t lcg_state = 2048u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

__global__ void conv2d_tiled(const float *in, float *out, int width, int height)
{
    __shared__ float tile[SHARED][SHARED];
    int x0 = blockIdx.x * TILE - FILTER_RADIUS, y0 = blockIdx.y * TILE - FILTER_RADIUS;
    for (int i = threadIdx.y * TILE + threadIdx.x; i < SHARED * SHARED; i += TILE * TILE) {
        int sx = i % SHARED, sy = i / SHARED;
        int gx = x0 + sx, gy = y0 + sy;
        tile[sy][sx] = gx >= 0 && gx < width && gy >= 0 && gy < height ? in[gy * width + gx] : 0.0f;
    }
    __syncthreads();

    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    if (x < width && y < height) {
        float sum = 0.0f;
        for (int fy = 0; fy < FILTER_SIZE; fy++)
            for (int fx = 0; fx < FILTER_SIZE; fx++)
                sum += c_filter[fy * FILTER_SIZE + fx] * tile[threadIdx.y + fy][threadIdx.x + fx];
        out[y * width + x] = sum;
    }
}

// The CPU reference, on a copy of the image with a border of zeros.
static void conv2d_cpu(const std::vector<float> &in, std::vector<float> &out, const float *filter,
                       int width, int height)
{
    const int pw = width + 2 * FILTER_RADIUS, ph = height + 2 * FILTER_RADIUS;
    std::vector<float> padded((size_t)pw * ph, 0.0f);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++)
            padded[(size_t)(y + FILTER_RADIUS) * pw + x + FILTER_RADIUS] =
                in[(size_t)y * width + x];
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            float sum = 0.0f;
            for (int fy = 0; fy < FILTER_SIZE; fy++) {
                const float *row = &padded[(size_t)(y + fy) * pw + x];
                for (int fx = 0; fx < FILTER_SIZE; fx++)
                    sum += filter[fy * FILTER_SIZE + fx] * row[fx];
            }
            out[(size_t)y * width + x] = sum;
        }
}

// The CPU reference of row y alone, summed as conv2d_cpu sums it (zero
// outside the image).
static void conv2d_cpu_row(const std::vector<float> &in, float *out, const float *filter, int width,
                           int height, int y)
{
    for (int x = 0; x < width; x++) {
        float sum = 0.0f;
        for (int fy = 0; fy < FILTER_SIZE; fy++) {
            const int iy = y + fy - FILTER_RADIUS;
            for (int fx = 0; fx < FILTER_SIZE; fx++) {
                const int ix = x + fx - FILTER_RADIUS;
                float v = iy >= 0 && iy < height && ix >= 0 && ix < width
                              ? in[(size_t)iy * width + ix]
                              : 0.0f;
                sum += filter[fy * FILTER_SIZE + fx] * v;
            }
        }
        out[x] = sum;
    }
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "conv2d", 100000);
    const int repeats = (scale + 15) / 16, size_scale = (scale + repeats - 1) / repeats;
    const int width = 2040, height = 2000 * size_scale, rounds = 3 * repeats;
    const size_t n = (size_t)width * height;
    // A binomial blur ([1 4 6 4 1] x [1 4 6 4 1] / 256) and a Laplacian
    // (24 in the middle, -1 elsewhere, / 256).
    static const float taps[FILTER_SIZE] = {1, 4, 6, 4, 1};
    float blur[FILTER_SIZE * FILTER_SIZE], laplacian[FILTER_SIZE * FILTER_SIZE];
    for (int i = 0; i < FILTER_SIZE * FILTER_SIZE; i++) {
        blur[i] = taps[i / FILTER_SIZE] * taps[i % FILTER_SIZE] / 256.0f;
        laplacian[i] = (i == FILTER_SIZE * FILTER_SIZE / 2 ? 24.0f : -1.0f) / 256.0f;
    }
    std::vector<float> image(n);
    for (size_t i = 0; i < n; i++)
        image[i] = (float)(lcg() % 256);

    float *d_in, *d_blur, *d_edges;
    CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK(cudaMalloc(&d_blur, n * sizeof(float)));
    CHECK(cudaMalloc(&d_edges, n * sizeof(float)));
    CHECK(cudaMemcpy(d_in, image.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE), grid((width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
    for (int r = 0; r < rounds; r++) {
        CHECK(cudaMemcpyToSymbol(c_filter, blur, sizeof(blur)));
        conv2d_tiled<<<grid, block>>>(d_in, d_blur, width, height);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyToSymbol(c_filter, laplacian, sizeof(laplacian)));
        conv2d_tiled<<<grid, block>>>(d_in, d_edges, width, height);
        CHECK(cudaGetLastError());
    }
    const bool sampled = scale > 1;
    std::vector<float> got_blur(n), got_edges(n), ref_blur(sampled ? 0 : n),
        ref_edges(sampled ? 0 : n);
    CHECK(cudaMemcpy(got_blur.data(), d_blur, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(got_edges.data(), d_edges, n * sizeof(float), cudaMemcpyDeviceToHost));

    size_t wrong = 0;
    int checked_rows = 0;
    if (!sampled) {
        conv2d_cpu(image, ref_blur, blur, width, height);
        conv2d_cpu(image, ref_edges, laplacian, width, height);
        for (size_t i = 0; i < n; i++)
            if ((got_blur[i] != ref_blur[i] || got_edges[i] != ref_edges[i]) && wrong++ < 5)
                fprintf(stderr, "conv2d: pixel %zu: %g %g, expected %g %g\n", i, got_blur[i],
                        got_edges[i], ref_blur[i], ref_edges[i]);
    } else {
        // Every 13th row (13 is prime to the tile's 16 rows, so every row of
        // a tile, halo rows too, on every band of the grid) and the rows
        // nearest the top and bottom edges.
        std::vector<float> row_blur(width), row_edges(width);
        for (int y = 0; y < height; y++) {
            if (y % 13 != 0 && y >= 3 && y < height - 3)
                continue;
            conv2d_cpu_row(image, row_blur.data(), blur, width, height, y);
            conv2d_cpu_row(image, row_edges.data(), laplacian, width, height, y);
            for (int x = 0; x < width; x++) {
                size_t i = (size_t)y * width + x;
                if ((got_blur[i] != row_blur[x] || got_edges[i] != row_edges[x]) && wrong++ < 5)
                    fprintf(stderr, "conv2d: pixel %zu: %g %g, expected %g %g\n", i, got_blur[i],
                            got_edges[i], row_blur[x], row_edges[x]);
            }
            checked_rows++;
        }
    }
    printf("conv2d: %dx%d image, %dx%d filters, grid %ux%u, %d rounds\n", width, height,
           FILTER_SIZE, FILTER_SIZE, grid.x, grid.y, rounds);
    if (sampled)
        printf("conv2d: SCALE %d: %d of %d rows checked\n", scale, checked_rows, height);
    printf("conv2d: checksum 0x%016llx\n",
           (unsigned long long)fnv1a(got_edges.data(), n * sizeof(float),
                                     fnv1a(got_blur.data(), n * sizeof(float))));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_blur));
    CHECK(cudaFree(d_edges));
    if (wrong) {
        printf("conv2d: FAIL %zu pixels wrong\n", wrong);
        return 1;
    }
    printf("conv2d: PASS\n");
    return 0;
}
