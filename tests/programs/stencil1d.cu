// stencil1d: the 1D stencil of NVIDIA's CUDA C/C++ introduction ("CUDA by
// Example" style): each block stages its BLOCK_SIZE inputs and a halo of
// RADIUS on each side in shared memory, __syncthreads(), and every thread sums
// the 2*RADIUS+1 values around it. Four sweeps between two buffers, integers so
// the check against the CPU is exact. Under mgpu: a 1D grid of 3907 blocks
// (not a multiple of 8) cut by blocks, halos read across the cuts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define RADIUS 3
#define BLOCK_SIZE 256

static uint32_t lcg_state = 20240601u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

__global__ void stencil_1d(const int *in, int *out, int n)
{
    __shared__ int temp[BLOCK_SIZE + 2 * RADIUS];
    int gindex = blockIdx.x * blockDim.x + threadIdx.x;
    int lindex = threadIdx.x + RADIUS;

    // Read input elements into shared memory (zero outside the array).
    temp[lindex] = gindex < n ? in[gindex] : 0;
    if (threadIdx.x < RADIUS) {
        int left = gindex - RADIUS, right = gindex + BLOCK_SIZE;
        temp[lindex - RADIUS] = left >= 0 && left < n ? in[left] : 0;
        temp[lindex + BLOCK_SIZE] = right < n ? in[right] : 0;
    }
    __syncthreads();

    if (gindex < n) {
        int result = 0;
        for (int offset = -RADIUS; offset <= RADIUS; offset++)
            result += temp[lindex + offset];
        out[gindex] = result;
    }
}

int main()
{
    const int n = 1000003, sweeps = 4;
    std::vector<int> h_in(n), h_out(n), ref(n), tmp(n);
    for (int i = 0; i < n; i++)
        h_in[i] = (int)(lcg() >> 8) % 1000 - 500;

    int *d_a, *d_b;
    CHECK(cudaMalloc(&d_a, n * sizeof(int)));
    CHECK(cudaMalloc(&d_b, n * sizeof(int)));
    CHECK(cudaMemcpy(d_a, h_in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    for (int s = 0; s < sweeps; s++) {
        stencil_1d<<<blocks, BLOCK_SIZE>>>(s % 2 ? d_b : d_a, s % 2 ? d_a : d_b, n);
        CHECK(cudaGetLastError());
    }
    CHECK(
        cudaMemcpy(h_out.data(), sweeps % 2 ? d_b : d_a, n * sizeof(int), cudaMemcpyDeviceToHost));

    // CPU reference: the same sweeps.
    ref = h_in;
    for (int s = 0; s < sweeps; s++) {
        for (int i = 0; i < n; i++) {
            int r = 0;
            for (int o = -RADIUS; o <= RADIUS; o++)
                if (i + o >= 0 && i + o < n)
                    r += ref[i + o];
            tmp[i] = r;
        }
        ref.swap(tmp);
    }

    int wrong = 0;
    for (int i = 0; i < n; i++)
        if (h_out[i] != ref[i] && wrong++ < 5)
            fprintf(stderr, "stencil1d: out[%d] = %d, expected %d\n", i, h_out[i], ref[i]);
    printf("stencil1d: n=%d radius=%d sweeps=%d blocks=%d checksum=0x%016llx\n", n, RADIUS, sweeps,
           blocks, (unsigned long long)fnv1a(h_out.data(), n * sizeof(int)));
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    if (wrong) {
        printf("stencil1d: FAIL %d of %d values wrong\n", wrong, n);
        return 1;
    }
    printf("stencil1d: PASS\n");
    return 0;
}
