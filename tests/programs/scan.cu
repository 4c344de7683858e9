// scan: exclusive prefix sum of 2.5M unsigned integers, the work-efficient
// (Blelloch) scan of GPU Gems 3 ch. 39 as in the CUDA SDK's scan sample and
// Parboil's: each block of 512 threads scans 1024 elements in shared memory
// and writes its total; the totals are scanned the same way (recursively),
// and a third kernel adds each block's offset. Run 5 times; exact (mod 2^32).
// Under mgpu: grids of 2442 blocks, then 3 and 1 (the last one not split),
// and a result that depends on every slice's totals.
// SCALE s (optional argument, 1 to 1000): n grows to 2500003 s up to s = 128
// (320M values, levels of 312501, 306 and 1 blocks), then the repetitions
// grow instead, to (5 s + 64) / 128 (a larger input would take the host,
// which makes it, over a second); at s > 1 each repetition copies back
// only 256 stretches of 1536 values, spread from the first value to the last,
// which the CPU checks (and the checksum covers).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define THREADS 512
#define ELEMS (2 * THREADS) // elements per block

static uint32_t lcg_state = 6502u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

__global__ void scan_blocks(const unsigned int *in, unsigned int *out, unsigned int *block_sums,
                            int n)
{
    __shared__ unsigned int temp[ELEMS];
    int tid = threadIdx.x, base = blockIdx.x * ELEMS;
    int ai = tid, bi = tid + ELEMS / 2;
    temp[ai] = base + ai < n ? in[base + ai] : 0;
    temp[bi] = base + bi < n ? in[base + bi] : 0;
    int offset = 1;
    for (int d = ELEMS >> 1; d > 0; d >>= 1) { // up-sweep: build sums in place
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            temp[b] += temp[a];
        }
        offset *= 2;
    }
    if (tid == 0) {
        if (block_sums)
            block_sums[blockIdx.x] = temp[ELEMS - 1];
        temp[ELEMS - 1] = 0;
    }
    for (int d = 1; d < ELEMS; d *= 2) { // down-sweep
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            unsigned int t = temp[a];
            temp[a] = temp[b];
            temp[b] += t;
        }
    }
    __syncthreads();
    if (base + ai < n)
        out[base + ai] = temp[ai];
    if (base + bi < n)
        out[base + bi] = temp[bi];
}

__global__ void add_offsets(unsigned int *data, const unsigned int *offsets, int n)
{
    int base = blockIdx.x * ELEMS;
    unsigned int add = offsets[blockIdx.x];
    if (base + threadIdx.x < n)
        data[base + threadIdx.x] += add;
    if (base + threadIdx.x + THREADS < n)
        data[base + threadIdx.x + THREADS] += add;
}

static int launches;

// Exclusive scan of d_in[0..n) into d_out.
static void scan_device(const unsigned int *d_in, unsigned int *d_out, int n)
{
    int blocks = (n + ELEMS - 1) / ELEMS;
    if (blocks == 1) {
        scan_blocks<<<1, THREADS>>>(d_in, d_out, nullptr, n);
        CHECK(cudaGetLastError());
        launches++;
        return;
    }
    unsigned int *d_sums, *d_offsets;
    CHECK(cudaMalloc(&d_sums, blocks * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_offsets, blocks * sizeof(unsigned int)));
    scan_blocks<<<blocks, THREADS>>>(d_in, d_out, d_sums, n);
    CHECK(cudaGetLastError());
    scan_device(d_sums, d_offsets, blocks);
    add_offsets<<<blocks, THREADS>>>(d_out, d_offsets, n);
    CHECK(cudaGetLastError());
    launches += 2;
    CHECK(cudaFree(d_sums));
    CHECK(cudaFree(d_offsets));
}

// SCALE > 1: the stretches of `stretch` values starting evenly from 0 to
// n - stretch (their exclusive prefixes in ref, one after another), scanned
// `reps` times, each time copying back only the stretches and checking them.
// Returns the values wrong; the last repetition's copies are left in out.
static int sampled_reps(const unsigned int *d_in, unsigned int *d_out, int n, int reps,
                        int stretches, int stretch, const std::vector<unsigned int> &ref,
                        std::vector<unsigned int> &out)
{
    int wrong = 0;
    for (int r = 0; r < reps; r++) {
        CHECK(cudaMemset(d_out, 0, n * sizeof(unsigned int)));
        scan_device(d_in, d_out, n);
        for (int k = 0; k < stretches; k++) {
            const size_t start = (size_t)k * (n - stretch) / (stretches - 1);
            unsigned int *got = out.data() + (size_t)k * stretch;
            CHECK(cudaMemcpy(got, d_out + start, stretch * sizeof(unsigned int),
                             cudaMemcpyDeviceToHost));
            for (int j = 0; j < stretch; j++)
                if (got[j] != ref[(size_t)k * stretch + j] && wrong++ < 5)
                    fprintf(stderr, "scan: rep %d: out[%zu] = %u, expected %u\n", r, start + j,
                            got[j], ref[(size_t)k * stretch + j]);
        }
    }
    return wrong;
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "scan", 1000);
    const bool sampled = scale > 1;
    const int n = 2500003 * (scale < 128 ? scale : 128),
              reps = scale <= 128 ? 5 : (5 * scale + 64) / 128;
    const int stretches = 256, stretch = 1536; // the sample, at SCALE > 1
    std::vector<unsigned int> in(n), out(sampled ? (size_t)stretches * stretch : n),
        ref(sampled ? (size_t)stretches * stretch : n);
    for (int i = 0; i < n; i++)
        in[i] = lcg() >> 12;
    unsigned int *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, n * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_out, n * sizeof(unsigned int)));
    CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));
    int wrong = 0;
    if (sampled) {
        unsigned int running = 0;
        size_t i = 0;
        for (int k = 0; k < stretches; k++) {
            const size_t start = (size_t)k * (n - stretch) / (stretches - 1);
            for (; i < start; i++)
                running += in[i];
            for (int j = 0; j < stretch; j++, i++) {
                ref[(size_t)k * stretch + j] = running;
                running += in[i];
            }
        }
        wrong = sampled_reps(d_in, d_out, n, reps, stretches, stretch, ref, out);
    } else {
        unsigned int running = 0;
        for (int i = 0; i < n; i++) {
            ref[i] = running;
            running += in[i];
        }
        for (int r = 0; r < reps; r++) {
            CHECK(cudaMemset(d_out, 0, n * sizeof(unsigned int)));
            scan_device(d_in, d_out, n);
            CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
            for (int i = 0; i < n; i++)
                if (out[i] != ref[i] && wrong++ < 5)
                    fprintf(stderr, "scan: rep %d: out[%d] = %u, expected %u\n", r, i, out[i],
                            ref[i]);
        }
    }
    printf("scan: %d values, %d blocks at the first level, %d launches\n", n,
           (n + ELEMS - 1) / ELEMS, launches);
    printf("scan: last prefix %u, checksum 0x%016llx\n", ref[ref.size() - 1],
           (unsigned long long)fnv1a(out.data(), out.size() * sizeof(unsigned int)));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    if (wrong) {
        printf("scan: FAIL %d values wrong\n", wrong);
        return 1;
    }
    printf("scan: PASS\n");
    return 0;
}
