// stencil1d: the 1D stencil of NVIDIA's CUDA C/C++ introduction ("CUDA by
// Example" style): each block stages its BLOCK_SIZE inputs and a halo of
// RADIUS on each side in shared memory, __syncthreads(), and every thread sums
// the 2*RADIUS+1 values around it. Four sweeps between two buffers, integers so
// the check against the CPU is exact. Under mgpu: a 1D grid of 3907 blocks
// (not a multiple of 8) cut by blocks, halos read across the cuts.
// SCALE s (optional argument, 1 to 100000): n grows to 1000003 m, where m = s
// up to s = 100 (n = 100000300, 390627 blocks); beyond, m = ceil(s / R) and the
// four sweeps run R = ceil(s / 100) times over, each round from the input again
// (copied from a third buffer), since the host side (input, copies, the hash of
// the output) grows with n. At s > 1 the CPU checks 2048 windows of 1024 values
// spread from the first value to the last (every value when n is no larger).
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

// The CPU reference of out[a, b) after `sweeps` sweeps, from the input alone:
// the input over [a - sweeps * RADIUS, b + sweeps * RADIUS), zero outside
// [0, n), each sweep good on RADIUS fewer values at either end.
static void stencil_window(const std::vector<int> &in, int n, int a, int b, int sweeps,
                           std::vector<int> &out)
{
    const int lo = a - sweeps * RADIUS, hi = b + sweeps * RADIUS;
    std::vector<int> cur(hi - lo), next(hi - lo, 0);
    for (int i = lo; i < hi; i++)
        cur[i - lo] = i >= 0 && i < n ? in[i] : 0;
    for (int s = 1; s <= sweeps; s++) {
        for (int i = lo + s * RADIUS; i < hi - s * RADIUS; i++) {
            int r = 0;
            if (i >= 0 && i < n)
                for (int o = -RADIUS; o <= RADIUS; o++)
                    r += cur[i + o - lo];
            next[i - lo] = r;
        }
        cur.swap(next);
    }
    out.assign(cur.begin() + (a - lo), cur.begin() + (b - lo));
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "stencil1d", 100000);
    const int rounds = (scale + 99) / 100, size_scale = (scale + rounds - 1) / rounds;
    const int n = 1000003 * size_scale, sweeps = 4;
    std::vector<int> h_in(n), h_out(n);
    for (int i = 0; i < n; i++)
        h_in[i] = (int)(lcg() >> 8) % 1000 - 500;

    int *d_a, *d_b, *d_in = nullptr;
    CHECK(cudaMalloc(&d_a, n * sizeof(int)));
    CHECK(cudaMalloc(&d_b, n * sizeof(int)));
    CHECK(cudaMemcpy(d_a, h_in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    if (rounds > 1) { // the input, for the rounds after the first
        CHECK(cudaMalloc(&d_in, n * sizeof(int)));
        CHECK(cudaMemcpy(d_in, d_a, n * sizeof(int), cudaMemcpyDeviceToDevice));
    }
    int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    for (int r = 0; r < rounds; r++) {
        if (r > 0)
            CHECK(cudaMemcpy(d_a, d_in, n * sizeof(int), cudaMemcpyDeviceToDevice));
        for (int s = 0; s < sweeps; s++) {
            stencil_1d<<<blocks, BLOCK_SIZE>>>(s % 2 ? d_b : d_a, s % 2 ? d_a : d_b, n);
            CHECK(cudaGetLastError());
        }
    }
    CHECK(
        cudaMemcpy(h_out.data(), sweeps % 2 ? d_b : d_a, n * sizeof(int), cudaMemcpyDeviceToHost));

    long long wrong = 0, checked = n;
    const int windows = 2048, window = 1024;
    if (scale == 1) {
        // CPU reference: the same sweeps.
        std::vector<int> ref(n), tmp(n);
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

        for (int i = 0; i < n; i++)
            if (h_out[i] != ref[i] && wrong++ < 5)
                fprintf(stderr, "stencil1d: out[%d] = %d, expected %d\n", i, h_out[i], ref[i]);
    } else {
        // CPU reference of windows spread evenly from out[0] to out[n - 1],
        // each with its own margin of the input; the whole of out when the
        // windows would cover it anyway.
        const bool whole = (long long)windows * window >= n;
        const int count = whole ? 1 : windows, length = whole ? n : window;
        std::vector<int> ref;
        checked = 0;
        for (int w = 0; w < count; w++) {
            const int a = whole ? 0 : (int)((long long)(n - length) * w / (count - 1));
            stencil_window(h_in, n, a, a + length, sweeps, ref);
            for (int i = a; i < a + length; i++)
                if (h_out[i] != ref[i - a] && wrong++ < 5)
                    fprintf(stderr, "stencil1d: out[%d] = %d, expected %d\n", i, h_out[i],
                            ref[i - a]);
            checked += length;
        }
    }
    printf("stencil1d: n=%d radius=%d sweeps=%d blocks=%d checksum=0x%016llx\n", n, RADIUS, sweeps,
           blocks, (unsigned long long)fnv1a(h_out.data(), n * sizeof(int)));
    if (scale > 1)
        printf("stencil1d: SCALE %d: rounds %d, %lld values checked\n", scale, rounds, checked);
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    if (d_in)
        CHECK(cudaFree(d_in));
    if (wrong) {
        printf("stencil1d: FAIL %lld of %lld values wrong\n", wrong, checked);
        return 1;
    }
    printf("stencil1d: PASS\n");
    return 0;
}
