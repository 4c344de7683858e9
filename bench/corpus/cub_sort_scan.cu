// cub_sort_scan: the two CUB device-wide primitives programs call most, used
// the way CUB's own examples (example_device_radix_sort.cu,
// example_device_scan.cu) use them: cub::DeviceRadixSort::SortPairs of 32M
// (uint32 key, uint32 value) pairs and cub::DeviceScan::ExclusiveSum of 128M
// int32, each REPS = 20 times. Temporary storage is sized with the usual first
// call (d_temp_storage = nullptr), once for the larger of the two, and
// allocated once.
//
// Sizes: 2^25 = 33,554,432 pairs (keys and values 128 MiB each, in and out:
// 512 MiB) and 2^27 = 134,217,728 int32 scan elements (512 MiB in, 512 MiB
// out), scan inputs 0..9 so every prefix fits in int32 (total < 1.35e9).
// Device memory about 1.7 GiB with the sort's temporary storage.
//
// Kernels and launch shapes (chosen by CUB, sm_90 tunings): SortPairs with
// full 32-bit keys is the onesweep radix sort: a histogram kernel (an
// occupancy-sized grid of 128-thread blocks striding over the keys, 4 x 256
// global counters, integer atomics), an
// exclusive-sum kernel (one block per digit), then 4 onesweep kernels, one
// per 8-bit digit, each of about 3,800 blocks of 384 threads (23 pairs per
// thread, 32-bit offsets). ExclusiveSum is the single-pass decoupled look-back
// scan: an init kernel for the tile-status array, then one scan kernel of
// about 43,700 blocks of 128 threads (tiles of 24 x 128 ints).
//
// Under a runtime that cuts each grid into contiguous block ranges: both big
// kernels chain blocks through global memory. The onesweep kernel takes tile
// numbers from an atomic counter and each tile waits for its predecessor's
// published digit offsets (decoupled look-back); the scan kernel's block b
// spins on the status words of blocks b-1, b-2, ... until it finds an
// inclusive prefix. Either runs whole on one GPU; split, a later range would
// wait on flags written by another GPU's blocks. The histogram kernel's
// blocks all add into the same global counters.
//
// Expected GPU time on one H100: a sort moves about 2.2 GiB (4 passes over
// keys and values in and out, plus the histogram pass), ~1.0-1.5 ms; a scan
// moves 1 GiB, ~0.4 ms; 20 of each: about 30-40 ms (no less than ~20 ms at
// the 3.35 TB/s peak).
//
// Check (host): the scan exactly, every element, against a sequential int64
// prefix sum; the sort: keys non-decreasing, the multiset of keys (count,
// sum, sum of squares, xor) and of (key, value) pairs (sum and xor of a
// 64-bit mix of each pair) equal to the input's.
//
// SCALE s (1 to 100, default 1): 20 s sorts, then 20 s scans, of the same
// inputs; the check is of the outputs once, as at SCALE 1.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "tests/programs/program_check.h"

static uint32_t lcg_state = 987654321u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

// 32 random bits from the high halves of two LCG steps.
static uint32_t random_u32()
{
    uint32_t hi = lcg() >> 16;
    uint32_t lo = lcg() >> 16;
    return (hi << 16) | lo;
}

// SplitMix64's finaliser: a pair's fingerprint for the multiset checksums.
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct PairStats {
    uint64_t key_sum = 0, key_sum_sq = 0, key_xor = 0, pair_sum = 0, pair_xor = 0;
    bool operator==(const PairStats &o) const
    {
        return key_sum == o.key_sum && key_sum_sq == o.key_sum_sq && key_xor == o.key_xor &&
               pair_sum == o.pair_sum && pair_xor == o.pair_xor;
    }
};

static PairStats pair_stats(const std::vector<uint32_t> &keys, const std::vector<uint32_t> &vals)
{
    PairStats s;
    for (size_t i = 0; i < keys.size(); i++) {
        uint64_t k = keys[i];
        s.key_sum += k;
        s.key_sum_sq += k * k;
        s.key_xor ^= k;
        uint64_t h = mix64(k << 32 | vals[i]);
        s.pair_sum += h;
        s.pair_xor ^= h;
    }
    return s;
}

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 100

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "cub_sort_scan", MAX_SCALE);
    const int num_pairs = 1 << 25, num_scan = 1 << 27, reps = 20 * scale;

    std::vector<uint32_t> h_keys(num_pairs), h_vals(num_pairs);
    for (int i = 0; i < num_pairs; i++) {
        h_keys[i] = random_u32();
        h_vals[i] = random_u32();
    }
    std::vector<int> h_scan_in(num_scan);
    for (int i = 0; i < num_scan; i++)
        h_scan_in[i] = (int)((lcg() >> 16) % 10);

    uint32_t *d_keys_in, *d_keys_out, *d_vals_in, *d_vals_out;
    int *d_scan_in, *d_scan_out;
    CHECK(cudaMalloc(&d_keys_in, num_pairs * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_keys_out, num_pairs * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_vals_in, num_pairs * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_vals_out, num_pairs * sizeof(uint32_t)));
    CHECK(cudaMalloc(&d_scan_in, num_scan * sizeof(int)));
    CHECK(cudaMalloc(&d_scan_out, num_scan * sizeof(int)));
    CHECK(
        cudaMemcpy(d_keys_in, h_keys.data(), num_pairs * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CHECK(
        cudaMemcpy(d_vals_in, h_vals.data(), num_pairs * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_scan_in, h_scan_in.data(), num_scan * sizeof(int), cudaMemcpyHostToDevice));

    // Determine temporary device storage requirements, allocate once.
    size_t sort_bytes = 0, scan_bytes = 0;
    CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, d_keys_in, d_keys_out, d_vals_in,
                                          d_vals_out, num_pairs));
    CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, d_scan_in, d_scan_out, num_scan));
    size_t temp_bytes = sort_bytes > scan_bytes ? sort_bytes : scan_bytes;
    void *d_temp = nullptr;
    CHECK(cudaMalloc(&d_temp, temp_bytes));

    for (int r = 0; r < reps; r++) {
        CHECK(cub::DeviceRadixSort::SortPairs(d_temp, sort_bytes, d_keys_in, d_keys_out, d_vals_in,
                                              d_vals_out, num_pairs));
        CHECK(cudaGetLastError());
    }
    for (int r = 0; r < reps; r++) {
        CHECK(cub::DeviceScan::ExclusiveSum(d_temp, scan_bytes, d_scan_in, d_scan_out, num_scan));
        CHECK(cudaGetLastError());
    }
    CHECK(cudaDeviceSynchronize());

    std::vector<uint32_t> out_keys(num_pairs), out_vals(num_pairs);
    std::vector<int> out_scan(num_scan);
    CHECK(cudaMemcpy(out_keys.data(), d_keys_out, num_pairs * sizeof(uint32_t),
                     cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out_vals.data(), d_vals_out, num_pairs * sizeof(uint32_t),
                     cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out_scan.data(), d_scan_out, num_scan * sizeof(int), cudaMemcpyDeviceToHost));

    uint64_t sort_hash = fnv1a(out_keys.data(), num_pairs * sizeof(uint32_t));
    sort_hash = fnv1a(out_vals.data(), num_pairs * sizeof(uint32_t), sort_hash);
    printf("cub_sort_scan: sort pairs=%d reps=%d min_key=%u max_key=%u hash %016llx\n", num_pairs,
           reps, out_keys[0], out_keys[num_pairs - 1], (unsigned long long)sort_hash);
    long long total = (long long)out_scan[num_scan - 1] + h_scan_in[num_scan - 1];
    printf("cub_sort_scan: scan n=%d reps=%d total=%lld hash %016llx\n", num_scan, reps, total,
           (unsigned long long)fnv1a(out_scan.data(), num_scan * sizeof(int)));

    // CPU reference, scan: every element.
    long long running = 0;
    for (int i = 0; i < num_scan; i++) {
        if (out_scan[i] != running) {
            printf("cub_sort_scan: WRONG scan out[%d] = %d, expected %lld\n", i, out_scan[i],
                   running);
            return 1;
        }
        running += h_scan_in[i];
    }
    // Sort: order, then the multisets of keys and of pairs.
    for (int i = 1; i < num_pairs; i++)
        if (out_keys[i - 1] > out_keys[i]) {
            printf("cub_sort_scan: WRONG sort keys not sorted at %d (%u > %u)\n", i,
                   out_keys[i - 1], out_keys[i]);
            return 1;
        }
    PairStats want = pair_stats(h_keys, h_vals), got = pair_stats(out_keys, out_vals);
    if (!(got == want)) {
        printf("cub_sort_scan: WRONG sort multiset: key sum %llx/%llx key xor %llx/%llx pair sum "
               "%llx/%llx (got/expected)\n",
               (unsigned long long)got.key_sum, (unsigned long long)want.key_sum,
               (unsigned long long)got.key_xor, (unsigned long long)want.key_xor,
               (unsigned long long)got.pair_sum, (unsigned long long)want.pair_sum);
        return 1;
    }

    CHECK(cudaFree(d_temp));
    CHECK(cudaFree(d_keys_in));
    CHECK(cudaFree(d_keys_out));
    CHECK(cudaFree(d_vals_in));
    CHECK(cudaFree(d_vals_out));
    CHECK(cudaFree(d_scan_in));
    CHECK(cudaFree(d_scan_out));
    printf("cub_sort_scan: check ok\n");
    return 0;
}
