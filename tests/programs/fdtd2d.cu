// fdtd2d: the 2D finite-difference time-domain kernel of PolyBench/GPU
// ("fdtd-2d"): per time step three kernels, one updating ey (row 0 from the
// source _fict_[t]), one ex, one hz from the new ex and ey, on an 800 x 1000
// grid for 30 steps, with PolyBench's coefficients 0.5 and 0.7. Under mgpu: 90
// launches of 32 x 100 grids cut along y (rows), each kernel reading the row
// next to its slice that the previous kernel wrote on another slice.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define NX 800
#define NY 1000
#define TMAX 30
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

static uint32_t lcg_state = 31337u;
static float lcg_unit()
{
    return (float)((lcg_state = lcg_state * 1664525u + 1013904223u) >> 8) / 16777216.0f;
}

__global__ void fdtd_step1_kernel(const float *_fict_, float *ex, float *ey, float *hz, int t)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < NX && j < NY) {
        if (i == 0)
            ey[i * NY + j] = _fict_[t];
        else
            ey[i * NY + j] = ey[i * NY + j] - 0.5f * (hz[i * NY + j] - hz[(i - 1) * NY + j]);
    }
}

__global__ void fdtd_step2_kernel(float *ex, float *ey, float *hz, int t)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < NX && j < NY && j > 0)
        ex[i * NY + j] = ex[i * NY + j] - 0.5f * (hz[i * NY + j] - hz[i * NY + (j - 1)]);
}

__global__ void fdtd_step3_kernel(float *ex, float *ey, float *hz, int t)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < NX - 1 && j < NY - 1)
        hz[i * NY + j] = hz[i * NY + j] - 0.7f * (ex[i * NY + (j + 1)] - ex[i * NY + j] +
                                                  ey[(i + 1) * NY + j] - ey[i * NY + j]);
}

int main()
{
    std::vector<float> fict(TMAX), ex(NX * NY), ey(NX * NY), hz(NX * NY);
    for (int t = 0; t < TMAX; t++)
        fict[t] = (float)t;
    for (int i = 0; i < NX * NY; i++) {
        ex[i] = lcg_unit();
        ey[i] = lcg_unit();
        hz[i] = lcg_unit();
    }

    float *d_fict, *d_ex, *d_ey, *d_hz;
    CHECK(cudaMalloc(&d_fict, TMAX * sizeof(float)));
    CHECK(cudaMalloc(&d_ex, NX * NY * sizeof(float)));
    CHECK(cudaMalloc(&d_ey, NX * NY * sizeof(float)));
    CHECK(cudaMalloc(&d_hz, NX * NY * sizeof(float)));
    CHECK(cudaMemcpy(d_fict, fict.data(), TMAX * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_ex, ex.data(), NX * NY * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_ey, ey.data(), NX * NY * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_hz, hz.data(), NX * NY * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((NY + block.x - 1) / block.x, (NX + block.y - 1) / block.y);
    for (int t = 0; t < TMAX; t++) {
        fdtd_step1_kernel<<<grid, block>>>(d_fict, d_ex, d_ey, d_hz, t);
        CHECK(cudaGetLastError());
        fdtd_step2_kernel<<<grid, block>>>(d_ex, d_ey, d_hz, t);
        CHECK(cudaGetLastError());
        fdtd_step3_kernel<<<grid, block>>>(d_ex, d_ey, d_hz, t);
        CHECK(cudaGetLastError());
    }
    std::vector<float> g_ex(NX * NY), g_ey(NX * NY), g_hz(NX * NY);
    CHECK(cudaMemcpy(g_ex.data(), d_ex, NX * NY * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(g_ey.data(), d_ey, NX * NY * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(g_hz.data(), d_hz, NX * NY * sizeof(float), cudaMemcpyDeviceToHost));

    // CPU reference: PolyBench's loops.
    for (int t = 0; t < TMAX; t++) {
        for (int j = 0; j < NY; j++)
            ey[j] = fict[t];
        for (int i = 1; i < NX; i++)
            for (int j = 0; j < NY; j++)
                ey[i * NY + j] = ey[i * NY + j] - 0.5f * (hz[i * NY + j] - hz[(i - 1) * NY + j]);
        for (int i = 0; i < NX; i++)
            for (int j = 1; j < NY; j++)
                ex[i * NY + j] = ex[i * NY + j] - 0.5f * (hz[i * NY + j] - hz[i * NY + (j - 1)]);
        for (int i = 0; i < NX - 1; i++)
            for (int j = 0; j < NY - 1; j++)
                hz[i * NY + j] = hz[i * NY + j] - 0.7f * (ex[i * NY + (j + 1)] - ex[i * NY + j] +
                                                          ey[(i + 1) * NY + j] - ey[i * NY + j]);
    }

    // The GPU may fuse multiplies and adds: compare relative to the field's size.
    double scale = 0, max_err = 0;
    for (int i = 0; i < NX * NY; i++)
        scale = fmax(scale, fmax(fabs(hz[i]), fmax(fabs(ex[i]), fabs(ey[i]))));
    int wrong = 0;
    const std::vector<float> *got[3] = {&g_ex, &g_ey, &g_hz}, *want[3] = {&ex, &ey, &hz};
    const char *names[3] = {"ex", "ey", "hz"};
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < NX * NY; i++) {
            double err = fabs((double)(*got[f])[i] - (double)(*want[f])[i]);
            max_err = fmax(max_err, err);
            if (!(err <= 1e-4 * scale) && wrong++ < 5)
                fprintf(stderr, "fdtd2d: %s[%d][%d] = %.7g, expected %.7g\n", names[f], i / NY,
                        i % NY, (*got[f])[i], (*want[f])[i]);
        }
    fprintf(stderr, "fdtd2d: max error %.3g relative to the largest value %.3g\n", max_err, scale);
    printf("fdtd2d: %dx%d grid, %d time steps, %d launches of grid %ux%u\n", NX, NY, TMAX, 3 * TMAX,
           grid.x, grid.y);
    CHECK(cudaFree(d_fict));
    CHECK(cudaFree(d_ex));
    CHECK(cudaFree(d_ey));
    CHECK(cudaFree(d_hz));
    if (wrong) {
        printf("fdtd2d: FAIL %d values wrong\n", wrong);
        return 1;
    }
    printf("fdtd2d: PASS\n");
    return 0;
}
