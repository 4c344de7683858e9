// stencil3d: a 7-point Jacobi stencil on a 128 x 124 x 100 float grid in the
// style of Parboil's "stencil" and the SDK's FDTD3d: a 3D grid with one z-plane
// per blockIdx.z, each block staging a 32 x 8 tile of its plane plus a one-point
// halo in shared memory, the z neighbours read from global memory; fixed
// boundary, six sweeps between two buffers. Under mgpu: a 4 x 16 x 100 grid cut
// along z (plane slabs), each slice reading the planes next to its cut.
// SCALE s (optional argument, 1 to 100000): ny grows to 124 m, where m = s up
// to s = 128 (128 x 15872 x 100, a 4 x 1984 x 100 grid); beyond, m = ceil(s / R)
// and the six sweeps run R = ceil(s / 128) times over, each round from the input
// again (copied from a third buffer), since the host side (input, copies) grows
// with the grid. At s > 1 only 32 bands of 32 rows of every plane, spread from
// the first row to the last (all rows while ny <= 1024), are copied back and
// checked against a CPU reference of those rows alone.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define TX 32
#define TY 8

static uint32_t lcg_state = 7u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

__global__ void stencil_7pt(const float *in, float *out, int nx, int ny, int nz, float c0, float c1)
{
    __shared__ float tile[TY + 2][TX + 2];
    int x = blockIdx.x * TX + threadIdx.x;
    int y = blockIdx.y * TY + threadIdx.y;
    int z = blockIdx.z;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    size_t plane = (size_t)nx * ny;
    size_t c = z * plane + (size_t)y * nx + x;
    bool inside = x < nx && y < ny;

    tile[ty][tx] = inside ? in[c] : 0.0f;
    if (threadIdx.x == 0)
        tile[ty][0] = x > 0 && y < ny ? in[c - 1] : 0.0f;
    if (threadIdx.x == TX - 1)
        tile[ty][TX + 1] = x + 1 < nx && y < ny ? in[c + 1] : 0.0f;
    if (threadIdx.y == 0)
        tile[0][tx] = y > 0 && x < nx ? in[c - nx] : 0.0f;
    if (threadIdx.y == TY - 1)
        tile[TY + 1][tx] = y + 1 < ny && x < nx ? in[c + nx] : 0.0f;
    __syncthreads();

    if (!inside)
        return;
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
        out[c] = tile[ty][tx];
        return;
    }
    float sum = tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] + tile[ty + 1][tx] +
                in[c - plane] + in[c + plane];
    out[c] = c0 * tile[ty][tx] + c1 * sum;
}

// The CPU reference of rows [y0, y1) of every plane after `sweeps` sweeps,
// from the input alone: the rows [y0 - sweeps, y1 + sweeps) (those of the
// grid) are swept as the whole grid is, the summands in the kernel's order,
// except that a row at a cut end of the band (one that is not the grid's
// boundary) keeps its value; the wrong values that makes creep inwards a row
// a sweep and do not reach [y0, y1). Out: nz planes of (y1 - y0) x nx.
static void stencil_band(const std::vector<float> &in, int nx, int ny, int nz, int y0, int y1,
                         int sweeps, float c0, float c1, std::vector<float> &out)
{
    const int lo = y0 - sweeps > 0 ? y0 - sweeps : 0, hi = y1 + sweeps < ny ? y1 + sweeps : ny;
    const int rows = hi - lo;
    const size_t plane = (size_t)rows * nx; // of the band
    std::vector<float> ref(plane * nz), tmp(plane * nz);
    for (int z = 0; z < nz; z++)
        for (int y = lo; y < hi; y++)
            for (int x = 0; x < nx; x++)
                ref[z * plane + (size_t)(y - lo) * nx + x] =
                    in[(size_t)z * nx * ny + (size_t)y * nx + x];
    for (int s = 0; s < sweeps; s++) {
        for (int z = 0; z < nz; z++)
            for (int y = lo; y < hi; y++)
                for (int x = 0; x < nx; x++) {
                    size_t c = z * plane + (size_t)(y - lo) * nx + x;
                    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1 ||
                        y == lo || y == hi - 1) {
                        tmp[c] = ref[c];
                        continue;
                    }
                    float sum = ref[c - 1] + ref[c + 1] + ref[c - nx] + ref[c + nx] +
                                ref[c - plane] + ref[c + plane];
                    tmp[c] = c0 * ref[c] + c1 * sum;
                }
        ref.swap(tmp);
    }
    out.resize((size_t)(y1 - y0) * nx * nz);
    for (int z = 0; z < nz; z++)
        for (int y = y0; y < y1; y++)
            for (int x = 0; x < nx; x++)
                out[((size_t)z * (y1 - y0) + (y - y0)) * nx + x] =
                    ref[z * plane + (size_t)(y - lo) * nx + x];
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "stencil3d", 100000);
    const int rounds = (scale + 127) / 128, size_scale = (scale + rounds - 1) / rounds;
    const int nx = 128, ny = 124 * size_scale, nz = 100, sweeps = 6;
    const float c0 = 0.4f, c1 = 0.1f;
    const size_t n = (size_t)nx * ny * nz, plane = (size_t)nx * ny;
    const bool sampled = scale > 1;
    std::vector<float> h_in(n), h_out(sampled ? 0 : n), ref(sampled ? 0 : n), tmp(sampled ? 0 : n);
    for (size_t i = 0; i < n; i++)
        h_in[i] = (float)(lcg() >> 8) / 16777216.0f;

    float *d_a, *d_b, *d_in = nullptr;
    CHECK(cudaMalloc(&d_a, n * sizeof(float)));
    CHECK(cudaMalloc(&d_b, n * sizeof(float)));
    CHECK(cudaMemcpy(d_a, h_in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    if (rounds > 1) { // the input, for the rounds after the first
        CHECK(cudaMalloc(&d_in, n * sizeof(float)));
        CHECK(cudaMemcpy(d_in, d_a, n * sizeof(float), cudaMemcpyDeviceToDevice));
    }
    dim3 block(TX, TY), grid((nx + TX - 1) / TX, (ny + TY - 1) / TY, nz);
    for (int r = 0; r < rounds; r++) {
        if (r > 0)
            CHECK(cudaMemcpy(d_a, d_in, n * sizeof(float), cudaMemcpyDeviceToDevice));
        for (int s = 0; s < sweeps; s++) {
            stencil_7pt<<<grid, block>>>(s % 2 ? d_b : d_a, s % 2 ? d_a : d_b, nx, ny, nz, c0, c1);
            CHECK(cudaGetLastError());
        }
    }
    const float *d_out = sweeps % 2 ? d_b : d_a;

    // Values stay in [0, 1]; the GPU may contract to FMAs, so allow rounding.
    size_t wrong = 0, checked = 0;
    double max_err = 0;
    const int bands = 32, band_rows = 32;
    if (!sampled) {
        CHECK(cudaMemcpy(h_out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));

        // CPU reference: the same sweeps, summed in the kernel's order.
        ref = h_in;
        for (int s = 0; s < sweeps; s++) {
            for (int z = 0; z < nz; z++)
                for (int y = 0; y < ny; y++)
                    for (int x = 0; x < nx; x++) {
                        size_t c = z * plane + (size_t)y * nx + x;
                        if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 ||
                            z == nz - 1) {
                            tmp[c] = ref[c];
                            continue;
                        }
                        float sum = ref[c - 1] + ref[c + 1] + ref[c - nx] + ref[c + nx] +
                                    ref[c - plane] + ref[c + plane];
                        tmp[c] = c0 * ref[c] + c1 * sum;
                    }
            ref.swap(tmp);
        }

        for (size_t i = 0; i < n; i++) {
            double err = fabs((double)h_out[i] - (double)ref[i]);
            max_err = err > max_err ? err : max_err;
            if (!(err <= 1e-5 * (1.0 + fabs(ref[i]))) && wrong++ < 5)
                fprintf(stderr, "stencil3d: out[%zu] = %.7g, expected %.7g\n", i, h_out[i], ref[i]);
        }
        checked = n;
    } else {
        // Bands of band_rows rows of every plane (every z slice), starting
        // evenly from row 0 to row ny - band_rows, each row of a band a
        // contiguous copy per plane; the whole grid when the bands would
        // cover it anyway.
        const bool whole = bands * band_rows >= ny;
        const int count = whole ? 1 : bands, rows = whole ? ny : band_rows;
        const size_t band = (size_t)rows * nx;
        std::vector<float> got(band * nz), want;
        for (int k = 0; k < count; k++) {
            const int y0 = whole ? 0 : (int)((long long)(ny - rows) * k / (count - 1));
            for (int z = 0; z < nz; z++)
                CHECK(cudaMemcpy(got.data() + z * band, d_out + z * plane + (size_t)y0 * nx,
                                 band * sizeof(float), cudaMemcpyDeviceToHost));
            stencil_band(h_in, nx, ny, nz, y0, y0 + rows, sweeps, c0, c1, want);
            for (size_t i = 0; i < band * nz; i++) {
                double err = fabs((double)got[i] - (double)want[i]);
                max_err = err > max_err ? err : max_err;
                if (!(err <= 1e-5 * (1.0 + fabs(want[i]))) && wrong++ < 5) {
                    size_t z = i / band, y = y0 + (i % band) / nx, x = i % nx;
                    fprintf(stderr, "stencil3d: out[%zu] = %.7g, expected %.7g\n",
                            z * plane + y * nx + x, got[i], want[i]);
                }
            }
            checked += band * nz;
        }
    }
    fprintf(stderr, "stencil3d: max abs error %.3g\n", max_err);
    printf("stencil3d: %dx%dx%d points, %d sweeps, grid %ux%ux%u\n", nx, ny, nz, sweeps, grid.x,
           grid.y, grid.z);
    if (sampled)
        printf("stencil3d: SCALE %d: rounds %d, %zu points checked\n", scale, rounds, checked);
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    if (d_in)
        CHECK(cudaFree(d_in));
    if (wrong) {
        printf("stencil3d: FAIL %zu of %zu points wrong\n", wrong, checked);
        return 1;
    }
    printf("stencil3d: PASS\n");
    return 0;
}
