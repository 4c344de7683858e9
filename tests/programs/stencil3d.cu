// stencil3d: a 7-point Jacobi stencil on a 128 x 124 x 100 float grid in the
// style of Parboil's "stencil" and the SDK's FDTD3d: a 3D grid with one z-plane
// per blockIdx.z, each block staging a 32 x 8 tile of its plane plus a one-point
// halo in shared memory, the z neighbours read from global memory; fixed
// boundary, six sweeps between two buffers. Under mgpu: a 4 x 16 x 100 grid cut
// along z (plane slabs), each slice reading the planes next to its cut.
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

int main()
{
    const int nx = 128, ny = 124, nz = 100, sweeps = 6;
    const float c0 = 0.4f, c1 = 0.1f;
    const size_t n = (size_t)nx * ny * nz, plane = (size_t)nx * ny;
    std::vector<float> h_in(n), h_out(n), ref(n), tmp(n);
    for (size_t i = 0; i < n; i++)
        h_in[i] = (float)(lcg() >> 8) / 16777216.0f;

    float *d_a, *d_b;
    CHECK(cudaMalloc(&d_a, n * sizeof(float)));
    CHECK(cudaMalloc(&d_b, n * sizeof(float)));
    CHECK(cudaMemcpy(d_a, h_in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(TX, TY), grid((nx + TX - 1) / TX, (ny + TY - 1) / TY, nz);
    for (int s = 0; s < sweeps; s++) {
        stencil_7pt<<<grid, block>>>(s % 2 ? d_b : d_a, s % 2 ? d_a : d_b, nx, ny, nz, c0, c1);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpy(h_out.data(), sweeps % 2 ? d_b : d_a, n * sizeof(float),
                     cudaMemcpyDeviceToHost));

    // CPU reference: the same sweeps, summed in the kernel's order.
    ref = h_in;
    for (int s = 0; s < sweeps; s++) {
        for (int z = 0; z < nz; z++)
            for (int y = 0; y < ny; y++)
                for (int x = 0; x < nx; x++) {
                    size_t c = z * plane + (size_t)y * nx + x;
                    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
                        tmp[c] = ref[c];
                        continue;
                    }
                    float sum = ref[c - 1] + ref[c + 1] + ref[c - nx] + ref[c + nx] +
                                ref[c - plane] + ref[c + plane];
                    tmp[c] = c0 * ref[c] + c1 * sum;
                }
        ref.swap(tmp);
    }

    // Values stay in [0, 1]; the GPU may contract to FMAs, so allow rounding.
    size_t wrong = 0;
    double max_err = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)h_out[i] - (double)ref[i]);
        max_err = err > max_err ? err : max_err;
        if (!(err <= 1e-5 * (1.0 + fabs(ref[i]))) && wrong++ < 5)
            fprintf(stderr, "stencil3d: out[%zu] = %.7g, expected %.7g\n", i, h_out[i], ref[i]);
    }
    fprintf(stderr, "stencil3d: max abs error %.3g\n", max_err);
    printf("stencil3d: %dx%dx%d points, %d sweeps, grid %ux%ux%u\n", nx, ny, nz, sweeps, grid.x,
           grid.y, grid.z);
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    if (wrong) {
        printf("stencil3d: FAIL %zu of %zu points wrong\n", wrong, n);
        return 1;
    }
    printf("stencil3d: PASS\n");
    return 0;
}
