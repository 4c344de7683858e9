// lookback_scan: inclusive prefix sum of 4M unsigned integers in a single
// pass with decoupled look-back (Merrill and Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", NVIDIA 2016; the scheme of CUB's
// DeviceScan): block b scans its tile of 2048 values in shared memory,
// publishes the tile's total in a status word, then walks back over the
// status words of tiles b-1, b-2, ..., spinning while one is still empty,
// adding totals until it meets an inclusive prefix, and publishes its own.
// Tiles are numbered by blockIdx, so a block waits for blocks launched
// before it to have started. Run 5 times; exact (mod 2^32).
// Under mgpu: one launch of 2048 blocks; the kernel waits in a loop for
// other blocks' writes (ptx/ptx_block_waits.h), so it is split over
// distinct GPUs only, never over entries of one device.
// SCALE s (optional argument, 1 to 1000): n grows to 4M s up to s = 64 (2^28
// values, 131072 tiles), then the repetitions grow instead, to (5 s + 32) /
// 64 (a larger input would take the host, which makes it, over a second); at
// s > 1 each repetition copies back only 256 stretches of 3072 values,
// spread from the first value to the last, which the CPU checks (and the
// checksum covers).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define THREADS 256
#define ITEMS 8 // per thread
#define TILE (THREADS * ITEMS)

// A status word: the state in the high half, the value in the low half.
#define STATE_EMPTY 0ull
#define STATE_TOTAL 1ull  // the tile's own total
#define STATE_PREFIX 2ull // the sum of every value up to the tile's end

static uint32_t lcg_state = 2016u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1103515245u + 12345u;
}

__global__ void scan_lookback(const unsigned int *in, unsigned int *out, unsigned long long *status,
                              int n)
{
    __shared__ unsigned int partial[THREADS];
    __shared__ unsigned int tile_offset;
    const int tile = blockIdx.x;
    const int first = tile * TILE + threadIdx.x * ITEMS;
    unsigned int value[ITEMS], running = 0;
    for (int i = 0; i < ITEMS; i++) { // the thread's items, scanned in registers
        running += first + i < n ? in[first + i] : 0;
        value[i] = running;
    }
    partial[threadIdx.x] = running;
    __syncthreads();
    for (int step = 1; step < THREADS; step *= 2) { // the threads' totals, scanned
        unsigned int left = threadIdx.x >= step ? partial[threadIdx.x - step] : 0;
        __syncthreads();
        partial[threadIdx.x] += left;
        __syncthreads();
    }
    const unsigned int tile_total = partial[THREADS - 1];
    const unsigned int before_thread = threadIdx.x > 0 ? partial[threadIdx.x - 1] : 0;
    if (threadIdx.x == 0) {
        volatile unsigned long long *word = status;
        unsigned int exclusive = 0;
        if (tile > 0) {
            word[tile] = STATE_TOTAL << 32 | tile_total;
            for (int look = tile - 1; look >= 0; look--) {
                unsigned long long seen;
                do {
                    seen = word[look];
                } while (seen >> 32 == STATE_EMPTY);
                exclusive += (unsigned int)seen;
                if (seen >> 32 == STATE_PREFIX)
                    break;
            }
        }
        __threadfence();
        word[tile] = STATE_PREFIX << 32 | (exclusive + tile_total);
        tile_offset = exclusive;
    }
    __syncthreads();
    const unsigned int add = tile_offset + before_thread;
    for (int i = 0; i < ITEMS; i++)
        if (first + i < n)
            out[first + i] = value[i] + add;
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "lookback_scan", 1000);
    const bool sampled = scale > 1;
    const int n = (4 << 20) * (scale < 64 ? scale : 64),
              reps = scale <= 64 ? 5 : (5 * scale + 32) / 64;
    const int tiles = (n + TILE - 1) / TILE;
    // The sample, at SCALE > 1: stretches of `stretch` values starting evenly
    // from 0 to n - stretch (their inclusive prefixes in ref, one after another).
    const int stretches = 256, stretch = 3072;
    const size_t sample = (size_t)stretches * stretch;
    std::vector<unsigned int> in(n), out(sampled ? sample : n), ref(sampled ? sample : n);
    unsigned int running = 0;
    if (!sampled) {
        for (int i = 0; i < n; i++) {
            in[i] = lcg() >> 8;
            running += in[i];
            ref[i] = running;
        }
    } else {
        for (int i = 0; i < n; i++)
            in[i] = lcg() >> 8;
        size_t i = 0;
        for (int k = 0; k < stretches; k++) {
            const size_t start = (size_t)k * (n - stretch) / (stretches - 1);
            for (; i < start; i++)
                running += in[i];
            for (int j = 0; j < stretch; j++, i++) {
                running += in[i];
                ref[(size_t)k * stretch + j] = running;
            }
        }
    }
    unsigned int *d_in, *d_out;
    unsigned long long *d_status;
    CHECK(cudaMalloc(&d_in, n * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_out, n * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_status, tiles * sizeof(unsigned long long)));
    CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));
    int wrong = 0;
    for (int r = 0; r < reps; r++) {
        CHECK(cudaMemset(d_status, 0, tiles * sizeof(unsigned long long)));
        CHECK(cudaMemset(d_out, 0, n * sizeof(unsigned int)));
        scan_lookback<<<tiles, THREADS>>>(d_in, d_out, d_status, n);
        CHECK(cudaGetLastError());
        if (!sampled) {
            CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
            for (int i = 0; i < n; i++)
                if (out[i] != ref[i] && wrong++ < 5)
                    fprintf(stderr, "lookback_scan: rep %d: out[%d] = %u, expected %u\n", r, i,
                            out[i], ref[i]);
        } else {
            for (int k = 0; k < stretches; k++) {
                const size_t start = (size_t)k * (n - stretch) / (stretches - 1);
                unsigned int *got = out.data() + (size_t)k * stretch;
                const unsigned int *want = ref.data() + (size_t)k * stretch;
                CHECK(cudaMemcpy(got, d_out + start, stretch * sizeof(unsigned int),
                                 cudaMemcpyDeviceToHost));
                for (int j = 0; j < stretch; j++)
                    if (got[j] != want[j] && wrong++ < 5)
                        fprintf(stderr, "lookback_scan: rep %d: out[%zu] = %u, expected %u\n", r,
                                start + j, got[j], want[j]);
            }
        }
    }
    printf("lookback_scan: %d values, %d tiles of %d, %d launches\n", n, tiles, TILE, reps);
    printf("lookback_scan: total %u, checksum 0x%016llx\n", ref[ref.size() - 1],
           (unsigned long long)fnv1a(out.data(), out.size() * sizeof(unsigned int)));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_status));
    if (wrong) {
        printf("lookback_scan: FAIL %d values wrong\n", wrong);
        return 1;
    }
    printf("lookback_scan: PASS\n");
    return 0;
}
