// thrust_sort: sort 128M random 32-bit keys with thrust::sort on a
// thrust::device_vector, the way the Thrust examples and countless programs
// do it ("generate on the host, copy into a device_vector, sort, reduce").
// The unsorted keys live in one device_vector; each of REPS = 10 rounds
// thrust::copy's them into a second device_vector, sorts that in place and
// thrust::reduce's the sorted keys into a uint64_t (the init's type, so no
// 32-bit overflow). The sorted keys of the last round are copied back.
//
// Sizes: n = 2^27 = 134,217,728 uint32 keys (512 MiB); device memory about
// 1.6 GiB (input copy, working copy, Thrust's temporary storage of about one
// more key array); host memory 1 GiB.
//
// Kernels and launch shapes (all chosen by Thrust/CUB, sm_90 tunings): the
// device_vector(n) constructor runs one fill kernel; the device-to-device
// thrust::copy of a trivially copyable type is a cudaMemcpyAsync, no kernel;
// thrust::sort of uint32 with the default less-than dispatches to
// cub::DeviceRadixSort::SortKeys (64-bit offsets, a DoubleBuffer whose second
// half Thrust allocates), which on sm_90 is the "onesweep" sort: one histogram
// kernel over all keys (an occupancy-sized grid, blocks per SM x SMs of 128
// threads striding over the keys, adding into 4 x 256 global counters with
// integer atomics), one small exclusive-sum kernel (one block per digit),
// then one onesweep kernel per 8-bit digit (4 launches) of about 18,400
// blocks of 384 threads (tiles of 19 x 384 keys). Thrust allocates and frees
// its temporary storage with cudaMalloc/cudaFree around every sort.
// thrust::reduce is cub::DeviceReduce: a grid-sized partial-reduction kernel
// followed by a single-block kernel, then the result comes back with a
// synchronous copy.
//
// Under a runtime that cuts each grid into contiguous block ranges: the
// onesweep kernel takes tile numbers from a global atomic counter and chains
// each tile's digit offsets to its predecessor's with decoupled look-back
// (spinning on flags that earlier blocks publish in global memory), so it
// must run whole on one GPU; the histogram kernel's blocks all add into the
// same 4 x 256 counters with atomics; the first reduce kernel splits cleanly,
// the second is one block.
//
// Expected GPU time on one H100: a sort moves about 4.5 GiB (4 passes of
// read+write 512 MiB, plus the histogram pass), roughly 3-5 ms; with the
// copy (~0.4 ms) and the reduce (~0.2 ms), 10 rounds take about 35-55 ms
// (no less than ~19 ms at the 3.35 TB/s peak).
//
// Check (host): the copied-back keys are non-decreasing and have the input's
// count, 64-bit sum, sum of squares (mod 2^64) and xor; every round's
// thrust::reduce equals the CPU's sum.
//
// SCALE s (1 to 100, default 1): 10 s rounds, each sorting the same keys
// again; the check is of the last round's keys, as at SCALE 1, and of every
// round's reduce (one comparison each).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>
#include <cuda_runtime.h>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>

#include "tests/programs/program_check.h"

static uint32_t lcg_state = 20250117u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

// A 32-bit key from the high halves of two LCG steps (the low bits of an LCG
// modulo 2^32 have short periods).
static uint32_t random_key()
{
    uint32_t hi = lcg() >> 16;
    uint32_t lo = lcg() >> 16;
    return (hi << 16) | lo;
}

struct KeyStats {
    uint64_t sum = 0, sum_sq = 0, xr = 0;
};

static KeyStats key_stats(const std::vector<uint32_t> &v)
{
    KeyStats s;
    for (uint32_t k : v) {
        s.sum += k;
        s.sum_sq += (uint64_t)k * k;
        s.xr ^= k;
    }
    return s;
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

static int run(int scale)
{
    const size_t n = (size_t)1 << 27;
    const int reps = 10 * scale;

    std::vector<uint32_t> h_keys(n);
    for (size_t i = 0; i < n; i++)
        h_keys[i] = random_key();

    thrust::device_vector<uint32_t> d_input(h_keys.begin(), h_keys.end());
    thrust::device_vector<uint32_t> d_work(n);
    std::vector<uint64_t> sums(reps);
    for (int r = 0; r < reps; r++) {
        thrust::copy(d_input.begin(), d_input.end(), d_work.begin());
        thrust::sort(d_work.begin(), d_work.end());
        sums[r] = thrust::reduce(d_work.begin(), d_work.end(), (uint64_t)0);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::vector<uint32_t> h_sorted(n);
    thrust::copy(d_work.begin(), d_work.end(), h_sorted.begin());

    printf("thrust_sort: n=%zu reps=%d min=%u max=%u sum=%llu hash %016llx\n", n, reps, h_sorted[0],
           h_sorted[n - 1], (unsigned long long)sums[reps - 1],
           (unsigned long long)fnv1a(h_sorted.data(), n * sizeof(uint32_t)));

    // CPU reference: the multiset of the input, and order of the output.
    KeyStats want = key_stats(h_keys), got = key_stats(h_sorted);
    for (size_t i = 1; i < n; i++)
        if (h_sorted[i - 1] > h_sorted[i]) {
            printf("thrust_sort: WRONG not sorted at %zu (%u > %u)\n", i, h_sorted[i - 1],
                   h_sorted[i]);
            return 1;
        }
    if (got.sum != want.sum || got.sum_sq != want.sum_sq || got.xr != want.xr) {
        printf("thrust_sort: WRONG multiset: sum %llu/%llu sum_sq %llu/%llu xor %llx/%llx "
               "(got/expected)\n",
               (unsigned long long)got.sum, (unsigned long long)want.sum,
               (unsigned long long)got.sum_sq, (unsigned long long)want.sum_sq,
               (unsigned long long)got.xr, (unsigned long long)want.xr);
        return 1;
    }
    for (int r = 0; r < reps; r++)
        if (sums[r] != want.sum) {
            printf("thrust_sort: WRONG reduce of round %d = %llu, expected %llu\n", r,
                   (unsigned long long)sums[r], (unsigned long long)want.sum);
            return 1;
        }
    printf("thrust_sort: check ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "thrust_sort", MAX_SCALE);
    // Thrust reports CUDA errors by throwing thrust::system_error (and
    // std::bad_alloc); treat those like CHECK does.
    try {
        return run(scale);
    } catch (const std::exception &e) {
        fprintf(stderr, "thrust_sort: %s\n", e.what());
        return 2;
    }
}
