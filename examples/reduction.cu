// reduction: the sum of 32-bit unsigned integers in one launch, the classic
// "last block finishes" pattern: each block sums its chunk and writes a
// partial sum, makes it visible with __threadfence(), and takes a ticket from
// a counter in a __device__ variable with atomicInc; the block that draws the
// last ticket adds up every block's partial sum and resets the counter for
// the next launch. Under mgpu the blocks run on several GPUs, so the fence and
// the atomic must work across GPUs, and the counter is a module variable that
// every GPU's rewritten module must share. Integer sums are exact: the last
// block adds its total to *total, so after k launches *total must be k times
// the CPU's sum (a launch that finished twice or never shows), and the
// counter must be back to 0.
#include "example_runtime.h"

static const example_defaults defaults = {
    "reduction", "number of values", 1ull << 28, 1ull << 20, 20, 5, 5, 3,
};

constexpr unsigned THREADS = 256;
constexpr unsigned VALUES_PER_THREAD = 64;
constexpr size_t VALUES_PER_BLOCK = (size_t)THREADS * VALUES_PER_THREAD;

// Blocks of the current launch that have written their partial sum.
__device__ unsigned int blocks_done;

// The sum of v over the block, returned to thread 0 (scratch: THREADS values).
__device__ unsigned long long block_sum(unsigned long long v, unsigned long long *scratch)
{
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            scratch[threadIdx.x] += scratch[threadIdx.x + half];
        __syncthreads();
    }
    return scratch[0];
}

__global__ void reduce_sum(const unsigned int *values, size_t n, unsigned long long *partials,
                           unsigned long long *total)
{
    __shared__ unsigned long long scratch[THREADS];
    __shared__ bool is_last_block;
    size_t begin = (size_t)blockIdx.x * VALUES_PER_BLOCK;
    unsigned long long sum = 0;
    for (unsigned k = 0; k < VALUES_PER_THREAD; k++) {
        size_t at = begin + (size_t)k * THREADS + threadIdx.x;
        if (at < n)
            sum += values[at];
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = sum;
        // The partial sum is visible to every block before this block counts
        // itself done.
        __threadfence();
        unsigned int ticket = atomicInc(&blocks_done, gridDim.x);
        is_last_block = ticket == gridDim.x - 1;
        // And every other block's partial is visible to this one if it is last.
        __threadfence();
    }
    __syncthreads();
    if (!is_last_block)
        return;
    unsigned long long all = 0;
    for (size_t b = threadIdx.x; b < gridDim.x; b += THREADS)
        all += ((volatile unsigned long long *)partials)[b];
    all = block_sum(all, scratch);
    if (threadIdx.x == 0) {
        *total += all;
        blocks_done = 0; // ready for the next launch
    }
}

static unsigned int input_value(size_t i)
{
    return (unsigned int)(example_hash(i) & 0xfffff);
}

int main(int argc, char **argv)
{
    example_options options = example_parse_options(argc, argv, &defaults);
    size_t n = options.size;
    if (n / VALUES_PER_BLOCK >= 0x7fffffff)
        example_bad_size(&defaults, "too many values for one block per 16384");
    unsigned blocks = (unsigned)((n + VALUES_PER_BLOCK - 1) / VALUES_PER_BLOCK);
    unsigned long long launches = example_total_launches(&options);
    // Values are below 2^20: the total of all launches must fit in 64 bits.
    if ((double)launches * (double)n * 1048576.0 >= 18446744073709551615.0)
        example_bad_size(&defaults, "the sum over all launches would not fit in 64 bits");

    std::vector<unsigned int> values(n);
    std::vector<unsigned long long> part_sums(example_host_threads(), 0);
    unsigned parts = example_parallel_parts(n, [&](unsigned part, size_t first, size_t last) {
        unsigned long long sum = 0;
        for (size_t i = first; i < last; i++) {
            values[i] = input_value(i);
            sum += values[i];
        }
        part_sums[part] = sum;
    });
    unsigned long long cpu_sum = 0;
    for (unsigned p = 0; p < parts; p++)
        cpu_sum += part_sums[p];

    cudaStream_t stream;
    EXAMPLE_CHECK(cudaStreamCreate(&stream));
    unsigned int *dvalues;
    unsigned long long *dpartials, *dtotal;
    EXAMPLE_CHECK(cudaMalloc(&dvalues, n * sizeof(unsigned int)));
    EXAMPLE_CHECK(cudaMalloc(&dpartials, blocks * sizeof(unsigned long long)));
    EXAMPLE_CHECK(cudaMalloc(&dtotal, sizeof(unsigned long long)));
    EXAMPLE_CHECK(cudaMemcpyAsync(dvalues, values.data(), n * sizeof(unsigned int),
                                  cudaMemcpyHostToDevice, stream));
    EXAMPLE_CHECK(cudaMemsetAsync(dtotal, 0, sizeof(unsigned long long), stream));

    auto launch_once = [&] {
        reduce_sum<<<blocks, THREADS, 0, stream>>>(dvalues, n, dpartials, dtotal);
    };
    launch_once(); // warm-up, not timed
    EXAMPLE_CHECK(cudaGetLastError());
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    float ms = example_time_launches(stream, options, launch_once);

    unsigned long long total = 0;
    unsigned int counter_after = 0;
    EXAMPLE_CHECK(cudaMemcpyAsync(&total, dtotal, sizeof total, cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaMemcpyFromSymbolAsync(&counter_after, blocks_done, sizeof counter_after, 0,
                                            cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    bool right = total == launches * cpu_sum && counter_after == 0;
    if (!right) {
        std::fprintf(stderr,
                     "reduction: after %llu launches the total is %llu, expected %llu (%llu each); "
                     "the block counter is %u, expected 0\n",
                     launches, total, launches * cpu_sum, cpu_sum, counter_after);
        std::printf("reduction: %zu values, %llu launches: FAIL\n", n, launches);
        return 1;
    }
    std::printf("reduction: %zu values, %llu launches: PASS sum %llu\n", n, launches, cpu_sum);
    example_print_time(&defaults, &options, ms);
    EXAMPLE_CHECK(cudaFree(dvalues));
    EXAMPLE_CHECK(cudaFree(dpartials));
    EXAMPLE_CHECK(cudaFree(dtotal));
    EXAMPLE_CHECK(cudaStreamDestroy(stream));
    return 0;
}
