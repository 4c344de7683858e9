// Privatised reductions (issue 18, item 4; mirror/private_reductions.h):
// kernels that update a buffer only with atomics whose results they never
// read, each checked against the CPU after two launches (so copies are
// reused, started again and combined again), with buffers that start from
// values other than the operation's identity (the home GPU's slice updates
// the buffer itself). Run by tests/gpu-private-reductions.sh plainly and
// under mgpu-run with MGPU_MIRROR=always, where mgpu must privatise:
//   histogram (add.u32), lowest and highest in separate buffers (min.s32,
//   max.s32), a float sum of whole numbers (add.f32: exact in any order),
//   a 64-bit count and a 64-bit maximum (add.u64, max.u64);
// and must not (their results still right):
//   tickets (an atomic whose result is stored), lowest and highest in one
//   buffer (two parameters reach it), and a sum into a buffer the kernel
//   also reads through another parameter.
// Prints "private_reductions: PASS".
#include <cuda.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cu_check.h"

static const unsigned N = 1u << 22;
static const unsigned THREADS = 256;
static const unsigned BINS = 256;

extern "C" __global__ void histogram(const unsigned char *data, unsigned *bins, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[data[i]], 1u);
}

extern "C" __global__ void extremes(const int *values, int *lowest, int *highest, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMin(lowest, values[i]);
        atomicMax(highest, values[i]);
    }
}

extern "C" __global__ void float_sum(const int *values, float *sum, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(sum, (float)(values[i] & 3));
}

extern "C" __global__ void wide(const int *values, unsigned long long *count,
                                unsigned long long *largest, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(count, (unsigned long long)(values[i] & 0xff));
        atomicMax(largest, (unsigned long long)(unsigned)values[i] << 20);
    }
}

extern "C" __global__ void tickets(unsigned *next, unsigned *order, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && threadIdx.x == 0)
        order[blockIdx.x] = atomicAdd(next, 1u);
}

extern "C" __global__ void sum_from_self(const unsigned *source, unsigned *sums, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&sums[i % 4], source[4 + i % 4] & 1);
}

static void launch(const void *kernel, void **args, CUstream s)
{
    CU(cuLaunchKernel(cu_kernel(kernel), (N + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, s, args,
                      NULL));
}

template <typename T> static std::vector<T> download(CUdeviceptr p, size_t count)
{
    std::vector<T> v(count);
    CU(cuMemcpyDtoH(v.data(), p, count * sizeof(T)));
    return v;
}

static int failures;

template <typename T> static void expect(const char *what, size_t i, T got, T want)
{
    if (got != want && failures++ < 10)
        printf("private_reductions: FAIL: %s[%zu] is %.17g, not %.17g\n", what, i, (double)got,
               (double)want);
}

int main()
{
    cu_check_program = "private_reductions";
    cudaFree(0);
    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    std::vector<unsigned char> data(N);
    std::vector<int> values(N);
    unsigned seed = 12345;
    for (unsigned i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        data[i] = (unsigned char)(seed >> 24);
        values[i] = (int)(seed >> 8) - (1 << 23); // negative and positive
    }
    CUdeviceptr d_data, d_values, bins, lowest, highest, sum, count, largest, next, order, pair,
        sums;
    CU(cuMemAlloc(&d_data, N));
    CU(cuMemAlloc(&d_values, (size_t)N * 4));
    CU(cuMemAlloc(&bins, BINS * 4));
    CU(cuMemAlloc(&lowest, 4));
    CU(cuMemAlloc(&highest, 4));
    CU(cuMemAlloc(&sum, 4));
    CU(cuMemAlloc(&count, 8));
    CU(cuMemAlloc(&largest, 8));
    CU(cuMemAlloc(&next, 4));
    CU(cuMemAlloc(&order, (size_t)(N / THREADS) * 4));
    CU(cuMemAlloc(&pair, 8));
    CU(cuMemAlloc(&sums, 8 * 4));
    CU(cuMemcpyHtoD(d_data, data.data(), N));
    CU(cuMemcpyHtoD(d_values, values.data(), (size_t)N * 4));

    // Start values that are not the identity: the buffer's own contents
    // must survive into the result.
    std::vector<unsigned> bins_start(BINS);
    for (unsigned b = 0; b < BINS; b++)
        bins_start[b] = 7 * b + 1;
    int low_start = 1000, high_start = -1000, pair_start[2] = {1000, -1000};
    float sum_start = 2.0f; // whole: every partial sum is exact in a float
    unsigned long long count_start = 3, largest_start = 1;
    unsigned next_start = 10;
    std::vector<unsigned> sums_start = {1, 2, 3, 4, 5, 6, 7, 8};
    CU(cuMemcpyHtoD(bins, bins_start.data(), BINS * 4));
    CU(cuMemcpyHtoD(lowest, &low_start, 4));
    CU(cuMemcpyHtoD(highest, &high_start, 4));
    CU(cuMemcpyHtoD(sum, &sum_start, 4));
    CU(cuMemcpyHtoD(count, &count_start, 8));
    CU(cuMemcpyHtoD(largest, &largest_start, 8));
    CU(cuMemcpyHtoD(next, &next_start, 4));
    CU(cuMemcpyHtoD(pair, pair_start, 8));
    CU(cuMemcpyHtoD(sums, sums_start.data(), 8 * 4));

    const int launches = 2;
    unsigned n = N;
    CUdeviceptr pair_high = pair + 4;
    for (int round = 0; round < launches; round++) {
        void *h[] = {&d_data, &bins, &n};
        launch((const void *)histogram, h, s);
        void *e[] = {&d_values, &lowest, &highest, &n};
        launch((const void *)extremes, e, s);
        void *f[] = {&d_values, &sum, &n};
        launch((const void *)float_sum, f, s);
        void *w[] = {&d_values, &count, &largest, &n};
        launch((const void *)wide, w, s);
        void *t[] = {&next, &order, &n};
        launch((const void *)tickets, t, s);
        void *p[] = {&d_values, &pair, &pair_high, &n};
        launch((const void *)extremes, p, s);
        void *q[] = {&sums, &sums, &n};
        launch((const void *)sum_from_self, q, s);
    }
    CU(cuStreamSynchronize(s));

    // The CPU's answers.
    std::vector<unsigned> want_bins = bins_start;
    int want_low = low_start, want_high = high_start;
    double want_sum = sum_start;
    unsigned long long want_count = count_start, want_largest = largest_start;
    for (int round = 0; round < launches; round++)
        for (unsigned i = 0; i < N; i++) {
            want_bins[data[i]]++;
            want_low = values[i] < want_low ? values[i] : want_low;
            want_high = values[i] > want_high ? values[i] : want_high;
            want_sum += values[i] & 3;
            want_count += (unsigned long long)(values[i] & 0xff);
            unsigned long long shifted = (unsigned long long)(unsigned)values[i] << 20;
            want_largest = shifted > want_largest ? shifted : want_largest;
        }
    std::vector<unsigned> want_sums = sums_start;
    for (int round = 0; round < launches; round++)
        for (unsigned i = 0; i < N; i++)
            want_sums[i % 4] += want_sums[4 + i % 4] & 1;

    std::vector<unsigned> got_bins = download<unsigned>(bins, BINS);
    for (unsigned b = 0; b < BINS; b++)
        expect("bins", b, got_bins[b], want_bins[b]);
    expect("lowest", 0, download<int>(lowest, 1)[0], want_low);
    expect("highest", 0, download<int>(highest, 1)[0], want_high);
    expect("sum", 0, (double)download<float>(sum, 1)[0], want_sum);
    expect("count", 0, download<unsigned long long>(count, 1)[0], want_count);
    expect("largest", 0, download<unsigned long long>(largest, 1)[0], want_largest);
    std::vector<int> got_pair = download<int>(pair, 2);
    expect("pair", 0, got_pair[0], want_low < 1000 ? want_low : 1000);
    expect("pair", 1, got_pair[1], want_high);
    std::vector<unsigned> got_sums = download<unsigned>(sums, 8);
    for (unsigned i = 0; i < 8; i++)
        expect("sums", i, got_sums[i], want_sums[i]);
    // Every ticket from next_start on taken exactly once.
    unsigned blocks = N / THREADS;
    std::vector<unsigned> got_order = download<unsigned>(order, blocks);
    std::vector<char> taken((size_t)launches * blocks, 0);
    for (unsigned b = 0; b < blocks; b++) {
        unsigned t = got_order[b] - next_start;
        if (t >= taken.size() || taken[t]++)
            expect("order", b, got_order[b], 0u);
    }
    expect("next", 0, download<unsigned>(next, 1)[0], next_start + launches * blocks);
    if (failures > 0)
        return 1;
    printf("private_reductions: PASS\n");
    return 0;
}
