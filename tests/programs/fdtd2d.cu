// fdtd2d: the 2D finite-difference time-domain kernel of PolyBench/GPU
// ("fdtd-2d"): per time step three kernels, one updating ey (row 0 from the
// source _fict_[t]), one ex, one hz from the new ex and ey, on an 800 x 1000
// grid for 30 steps, with PolyBench's coefficients 0.5 and 0.7. Under mgpu: 90
// launches of 32 x 100 grids cut along y (rows), each kernel reading the row
// next to its slice that the previous kernel wrote on another slice.
// SCALE s (optional argument, 1 to 1000): both sides grow by sqrt(s), to
// round(800 sqrt(s)) x round(1000 sqrt(s)) (s times the cells and the work,
// still 30 steps); above 1 the CPU checks every row in three full-height
// strips of 64 columns (left, middle, right) and every column in three
// full-width bands of 64 rows (top, middle, bottom), each simulated with 32
// rows and columns more around it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

// The grid at SCALE 1.
#define NX 800
#define NY 1000
#define TMAX 30
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8
// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 1000
// Above SCALE 1, the width of a checked strip or band, and how many rows or
// columns more the CPU simulates on each side of it (more than TMAX: an edge
// of the simulated window that lies inside the grid is left as it was, and
// the error that makes moves one row or column a time step).
#define STRIP 64
#define MARGIN (TMAX + 2)

static uint32_t lcg_state = 31337u;
static float lcg_unit()
{
    return (float)((lcg_state = lcg_state * 1664525u + 1013904223u) >> 8) / 16777216.0f;
}

// nx rows of ny values, row by row; nx * ny < 2^31 up to MAX_SCALE.
__global__ void fdtd_step1_kernel(const float *_fict_, float *ex, float *ey, float *hz, int t,
                                  int nx, int ny)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < nx && j < ny) {
        if (i == 0)
            ey[i * ny + j] = _fict_[t];
        else
            ey[i * ny + j] = ey[i * ny + j] - 0.5f * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
    }
}

__global__ void fdtd_step2_kernel(float *ex, float *ey, float *hz, int t, int nx, int ny)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < nx && j < ny && j > 0)
        ex[i * ny + j] = ex[i * ny + j] - 0.5f * (hz[i * ny + j] - hz[i * ny + (j - 1)]);
}

__global__ void fdtd_step3_kernel(float *ex, float *ey, float *hz, int t, int nx, int ny)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < nx - 1 && j < ny - 1)
        hz[i * ny + j] = hz[i * ny + j] - 0.7f * (ex[i * ny + (j + 1)] - ex[i * ny + j] +
                                                  ey[(i + 1) * ny + j] - ey[i * ny + j]);
}

// Cells the CPU checks, rows [r0, r1) x columns [c0, c1), and the window it
// simulates for them, [wr0, wr1) x [wc0, wc1): MARGIN more on each side where
// the grid goes on. At SCALE 1 one window, the whole grid, checked whole.
struct Window {
    int r0, r1, c0, c1, wr0, wr1, wc0, wc1;
    std::vector<float> ex, ey, hz;       // the window's cells row by row: initial, then the CPU's
    std::vector<float> g_ex, g_ey, g_hz; // the GPU's
};

static Window window(int r0, int r1, int c0, int c1, int nx, int ny)
{
    Window w;
    w.r0 = r0, w.r1 = r1, w.c0 = c0, w.c1 = c1;
    w.wr0 = r0 > MARGIN ? r0 - MARGIN : 0;
    w.wr1 = r1 + MARGIN < nx ? r1 + MARGIN : nx;
    w.wc0 = c0 > MARGIN ? c0 - MARGIN : 0;
    w.wc1 = c1 + MARGIN < ny ? c1 + MARGIN : ny;
    size_t cells = (size_t)(w.wr1 - w.wr0) * (w.wc1 - w.wc0);
    w.ex.resize(cells), w.ey.resize(cells), w.hz.resize(cells);
    w.g_ex.resize(cells), w.g_ey.resize(cells), w.g_hz.resize(cells);
    return w;
}

// Copies rows [a, b) of a field (row by row, ny a row) into the window's.
static void take_rows(std::vector<float> &dst, const Window &w, const float *rows, int a, int b,
                      int ny)
{
    int wd = w.wc1 - w.wc0;
    for (int i = a > w.wr0 ? a : w.wr0; i < b && i < w.wr1; i++)
        for (int j = 0; j < wd; j++)
            dst[(size_t)(i - w.wr0) * wd + j] = rows[(size_t)(i - a) * ny + w.wc0 + j];
}

// CPU reference: PolyBench's loops on the window (on the whole grid, exactly
// them). The window's own first row (ey), first column (ex), last row and last
// column (hz) stay as they are: the grid's, as PolyBench does, or for lack of
// the neighbours outside the window.
static void reference(Window &w, const std::vector<float> &fict)
{
    const int h = w.wr1 - w.wr0, wd = w.wc1 - w.wc0;
    float *ex = w.ex.data(), *ey = w.ey.data(), *hz = w.hz.data();
    for (int t = 0; t < TMAX; t++) {
        if (w.wr0 == 0)
            for (int j = 0; j < wd; j++)
                ey[j] = fict[t];
        for (int i = 1; i < h; i++)
            for (int j = 0; j < wd; j++)
                ey[i * wd + j] = ey[i * wd + j] - 0.5f * (hz[i * wd + j] - hz[(i - 1) * wd + j]);
        for (int i = 0; i < h; i++)
            for (int j = 1; j < wd; j++)
                ex[i * wd + j] = ex[i * wd + j] - 0.5f * (hz[i * wd + j] - hz[i * wd + (j - 1)]);
        for (int i = 0; i < h - 1; i++)
            for (int j = 0; j < wd - 1; j++)
                hz[i * wd + j] = hz[i * wd + j] - 0.7f * (ex[i * wd + (j + 1)] - ex[i * wd + j] +
                                                          ey[(i + 1) * wd + j] - ey[i * wd + j]);
    }
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "fdtd2d", MAX_SCALE);
    const int nx = (int)(NX * sqrt((double)scale) + 0.5),
              ny = (int)(NY * sqrt((double)scale) + 0.5);
    const size_t cells = (size_t)nx * ny;
    std::vector<Window> windows;
    if (scale == 1) {
        windows.push_back(window(0, nx, 0, ny, nx, ny));
    } else {
        for (int k = 0; k < 3; k++) {
            int c = k * ((ny - STRIP) / 2), r = k * ((nx - STRIP) / 2);
            windows.push_back(window(0, nx, c, c + STRIP, nx, ny));
            windows.push_back(window(r, r + STRIP, 0, ny, nx, ny));
        }
    }

    std::vector<float> fict(TMAX);
    for (int t = 0; t < TMAX; t++)
        fict[t] = (float)t;
    float *d_fict, *d_ex, *d_ey, *d_hz;
    CHECK(cudaMalloc(&d_fict, TMAX * sizeof(float)));
    CHECK(cudaMalloc(&d_ex, cells * sizeof(float)));
    CHECK(cudaMalloc(&d_ey, cells * sizeof(float)));
    CHECK(cudaMalloc(&d_hz, cells * sizeof(float)));
    CHECK(cudaMemcpy(d_fict, fict.data(), TMAX * sizeof(float), cudaMemcpyHostToDevice));
    // The fields made and copied NX rows at a time (the whole grid at SCALE 1),
    // the windows' cells kept.
    const int chunk_rows = NX;
    std::vector<float> ex((size_t)chunk_rows * ny), ey(ex.size()), hz(ex.size());
    for (int a = 0; a < nx; a += chunk_rows) {
        int b = a + chunk_rows < nx ? a + chunk_rows : nx;
        size_t count = (size_t)(b - a) * ny, at = (size_t)a * ny;
        for (size_t i = 0; i < count; i++) {
            ex[i] = lcg_unit();
            ey[i] = lcg_unit();
            hz[i] = lcg_unit();
        }
        CHECK(cudaMemcpy(d_ex + at, ex.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_ey + at, ey.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_hz + at, hz.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        for (Window &w : windows) {
            take_rows(w.ex, w, ex.data(), a, b, ny);
            take_rows(w.ey, w, ey.data(), a, b, ny);
            take_rows(w.hz, w, hz.data(), a, b, ny);
        }
    }
    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((ny + block.x - 1) / block.x, (nx + block.y - 1) / block.y);
    for (int t = 0; t < TMAX; t++) {
        fdtd_step1_kernel<<<grid, block>>>(d_fict, d_ex, d_ey, d_hz, t, nx, ny);
        CHECK(cudaGetLastError());
        fdtd_step2_kernel<<<grid, block>>>(d_ex, d_ey, d_hz, t, nx, ny);
        CHECK(cudaGetLastError());
        fdtd_step3_kernel<<<grid, block>>>(d_ex, d_ey, d_hz, t, nx, ny);
        CHECK(cudaGetLastError());
    }
    for (int a = 0; a < nx; a += chunk_rows) {
        int b = a + chunk_rows < nx ? a + chunk_rows : nx;
        size_t count = (size_t)(b - a) * ny, at = (size_t)a * ny;
        CHECK(cudaMemcpy(ex.data(), d_ex + at, count * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(ey.data(), d_ey + at, count * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hz.data(), d_hz + at, count * sizeof(float), cudaMemcpyDeviceToHost));
        for (Window &w : windows) {
            take_rows(w.g_ex, w, ex.data(), a, b, ny);
            take_rows(w.g_ey, w, ey.data(), a, b, ny);
            take_rows(w.g_hz, w, hz.data(), a, b, ny);
        }
    }

    // The GPU may fuse multiplies and adds: compare relative to the field's
    // size (its largest value among the cells checked).
    double scale_of_values = 0, max_err = 0;
    for (Window &w : windows) {
        reference(w, fict);
        int wd = w.wc1 - w.wc0;
        for (int i = w.r0; i < w.r1; i++)
            for (int j = w.c0; j < w.c1; j++) {
                size_t k = (size_t)(i - w.wr0) * wd + (j - w.wc0);
                scale_of_values =
                    fmax(scale_of_values, fmax(fabs(w.hz[k]), fmax(fabs(w.ex[k]), fabs(w.ey[k]))));
            }
    }
    int wrong = 0;
    const char *names[3] = {"ex", "ey", "hz"};
    for (Window &w : windows) {
        const std::vector<float> *got[3] = {&w.g_ex, &w.g_ey, &w.g_hz},
                                 *want[3] = {&w.ex, &w.ey, &w.hz};
        int wd = w.wc1 - w.wc0;
        for (int f = 0; f < 3; f++)
            for (int i = w.r0; i < w.r1; i++)
                for (int j = w.c0; j < w.c1; j++) {
                    size_t k = (size_t)(i - w.wr0) * wd + (j - w.wc0);
                    double err = fabs((double)(*got[f])[k] - (double)(*want[f])[k]);
                    max_err = fmax(max_err, err);
                    if (!(err <= 1e-4 * scale_of_values) && wrong++ < 5)
                        fprintf(stderr, "fdtd2d: %s[%d][%d] = %.7g, expected %.7g\n", names[f], i,
                                j, (*got[f])[k], (*want[f])[k]);
                }
    }
    fprintf(stderr, "fdtd2d: max error %.3g relative to the largest value %.3g\n", max_err,
            scale_of_values);
    printf("fdtd2d: %dx%d grid, %d time steps, %d launches of grid %ux%u\n", nx, ny, TMAX, 3 * TMAX,
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
