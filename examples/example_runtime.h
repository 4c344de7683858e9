// example_runtime.h: what the CUDA-runtime examples share on top of
// example_common.h: checking runtime calls, host work spread over the cores
// (inputs of gigabytes and CPU references), and the kernel timing every
// example reports.
#ifndef MGPU_EXAMPLE_RUNTIME_H
#define MGPU_EXAMPLE_RUNTIME_H

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <cuda_runtime.h>
#include "example_common.h"

// A failed runtime call ends the example with status 1, naming the call.
#define EXAMPLE_CHECK(call)                                                                        \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,              \
                         cudaGetErrorString(e_));                                                  \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// Host threads for input generation and CPU references: every core, at most 64.
static inline unsigned example_host_threads()
{
    return std::max(1u, std::min(64u, std::thread::hardware_concurrency()));
}

// Calls work(part, first, last) on consecutive parts of [0, n), numbered
// from 0, one part per host thread, and waits for them; returns the number
// of parts.
template <typename Work> static unsigned example_parallel_parts(size_t n, Work work)
{
    unsigned parts = (unsigned)std::min<size_t>(example_host_threads(), std::max<size_t>(n, 1));
    std::vector<std::thread> workers;
    for (unsigned p = 0; p < parts; p++) {
        size_t first = n / parts * p, last = p + 1 == parts ? n : n / parts * (p + 1);
        workers.emplace_back([=] { work(p, first, last); });
    }
    for (std::thread &w : workers)
        w.join();
    return parts;
}

// Calls work(first, last) on consecutive parts of [0, n) in parallel.
template <typename Work> static void example_parallel_for(size_t n, Work work)
{
    example_parallel_parts(n, [&](unsigned, size_t first, size_t last) { work(first, last); });
}

// How many i in [0, n) is_wrong(i) says are wrong, and the first of them (n
// if none); checked in parallel.
struct example_mismatches {
    size_t count, first;
};
template <typename IsWrong>
static example_mismatches example_find_mismatches(size_t n, IsWrong is_wrong)
{
    std::vector<example_mismatches> per_part(example_host_threads(), example_mismatches{0, n});
    unsigned parts = example_parallel_parts(n, [&](unsigned part, size_t first, size_t last) {
        example_mismatches found = {0, n};
        for (size_t i = first; i < last; i++)
            if (is_wrong(i) && found.count++ == 0)
                found.first = i;
        per_part[part] = found;
    });
    example_mismatches all = {0, n};
    for (unsigned p = 0; p < parts; p++) {
        all.count += per_part[p].count;
        all.first = std::min(all.first, per_part[p].first);
    }
    return all;
}

// Indices in [lo, hi] to check where checking all of [0, n) on the CPU takes
// too long: both sides of every eighth of n (where the slices of 2, 4 and 8
// GPUs meet), lo and hi, and more from the hash until there are `count`;
// sorted.
static inline std::vector<size_t> example_indices_to_check(size_t n, size_t lo, size_t hi,
                                                           size_t count)
{
    std::vector<size_t> picked;
    auto pick = [&](size_t i) {
        i = std::min(std::max(i, lo), hi);
        if (std::find(picked.begin(), picked.end(), i) == picked.end())
            picked.push_back(i);
    };
    pick(lo);
    pick(hi);
    for (size_t k = 1; k < 8; k++) {
        pick(n * k / 8 > 0 ? n * k / 8 - 1 : 0);
        pick(n * k / 8);
    }
    count = std::min(count, hi - lo + 1);
    for (uint64_t k = 0; picked.size() < count; k++)
        pick(lo + example_hash(k) % (hi - lo + 1));
    std::sort(picked.begin(), picked.end());
    return picked;
}

// Times launch_once() (which enqueues one kernel launch on `stream`): events
// recorded on the stream around a loop of `iterations` launches, so that the
// host's cost of the next launch overlaps the GPU's work as in real codes;
// `repeats` such loops. Returns the median milliseconds per launch. The
// caller has already run the untimed warm-up launch.
template <typename LaunchOnce>
static float example_time_launches(cudaStream_t stream, const example_options &options,
                                   LaunchOnce launch_once)
{
    cudaEvent_t start, stop;
    EXAMPLE_CHECK(cudaEventCreate(&start));
    EXAMPLE_CHECK(cudaEventCreate(&stop));
    std::vector<float> ms_per_launch(options.repeats);
    for (int r = 0; r < options.repeats; r++) {
        EXAMPLE_CHECK(cudaEventRecord(start, stream));
        for (int i = 0; i < options.iterations; i++)
            launch_once();
        EXAMPLE_CHECK(cudaGetLastError());
        EXAMPLE_CHECK(cudaEventRecord(stop, stream));
        EXAMPLE_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        EXAMPLE_CHECK(cudaEventElapsedTime(&ms, start, stop));
        ms_per_launch[r] = ms / options.iterations;
    }
    EXAMPLE_CHECK(cudaEventDestroy(start));
    EXAMPLE_CHECK(cudaEventDestroy(stop));
    return example_median(ms_per_launch.data(), options.repeats);
}

#endif
