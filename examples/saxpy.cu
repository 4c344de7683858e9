// saxpy: y = a*x + y with a grid-stride loop, the grid sized from the
// device's multiprocessor count as persistent-style kernels do. Under mgpu
// device 0 reports the multiprocessors of all selected GPUs (MGPU_SM_COUNT),
// so the grid grows with the GPU count; the result must not change. Note that
// a grid-stride loop hands each block elements spread over the whole array,
// so a grid split by blocks would have each GPU's blocks touch every GPU's
// memory: mgpu cuts this loop's iterations instead (ptx/ptx_stride_loop.h).
// Every launch applies saxpy again: with a = 2 and small whole numbers the
// float result after k launches, y0 + 2*k*x, is exact, and is checked exactly.
#include "example_runtime.h"

static const example_defaults defaults = {
    "saxpy", "elements per array", 1ull << 28, 1ull << 20, 20, 5, 5, 3,
};

__global__ void saxpy(size_t n, float a, const float *x, float *y)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = __fmaf_rn(a, x[i], y[i]);
}

static float initial_x(size_t i)
{
    return (float)(i % 13 + 1);
}
static float initial_y(size_t i)
{
    return (float)(i % 251);
}

int main(int argc, char **argv)
{
    example_options options = example_parse_options(argc, argv, &defaults);
    size_t n = options.size;
    const float a = 2.0f;
    unsigned long long launches = example_total_launches(&options);
    // y stays below 2^24 (every value exact) while 250 + 2 * 13 * launches does.
    if (launches > 600000)
        example_bad_size(&defaults, "at most 600000 launches in all (iterations x repeats + 1)");

    int device = 0, sms = 0, threads_per_sm = 0;
    EXAMPLE_CHECK(cudaGetDevice(&device));
    EXAMPLE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    EXAMPLE_CHECK(
        cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    const unsigned threads = 256;
    // Enough blocks to fill every multiprocessor once.
    unsigned blocks = (unsigned)sms * std::max(1u, (unsigned)threads_per_sm / threads);

    std::vector<float> x(n), y(n);
    example_parallel_for(n, [&](size_t first, size_t last) {
        for (size_t i = first; i < last; i++) {
            x[i] = initial_x(i);
            y[i] = initial_y(i);
        }
    });
    cudaStream_t stream;
    EXAMPLE_CHECK(cudaStreamCreate(&stream));
    float *dx, *dy;
    EXAMPLE_CHECK(cudaMalloc(&dx, n * sizeof(float)));
    EXAMPLE_CHECK(cudaMalloc(&dy, n * sizeof(float)));
    EXAMPLE_CHECK(cudaMemcpyAsync(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    EXAMPLE_CHECK(cudaMemcpyAsync(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));

    auto launch_once = [&] { saxpy<<<blocks, threads, 0, stream>>>(n, a, dx, dy); };
    launch_once(); // warm-up, not timed
    EXAMPLE_CHECK(cudaGetLastError());
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    float ms = example_time_launches(stream, options, launch_once);

    EXAMPLE_CHECK(cudaMemcpyAsync(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    auto expected = [&](size_t i) { return initial_y(i) + a * (float)launches * initial_x(i); };
    example_mismatches wrong =
        example_find_mismatches(n, [&](size_t i) { return y[i] != expected(i); });
    if (wrong.count) {
        std::fprintf(stderr, "saxpy: %zu wrong elements; the first, %zu: expected %g, got %g\n",
                     wrong.count, wrong.first, expected(wrong.first), y[wrong.first]);
        std::printf("saxpy: %zu elements, a=%g, %llu launches: FAIL\n", n, a, launches);
        return 1;
    }
    std::printf(
        "saxpy: %zu elements, a=%g, %llu launches: PASS checksum 0x%016llx\n", n, a, launches,
        (unsigned long long)example_checksum(y.data(), n * sizeof(float), EXAMPLE_CHECKSUM_START));
    example_print_time(&defaults, &options, ms);
    EXAMPLE_CHECK(cudaFree(dx));
    EXAMPLE_CHECK(cudaFree(dy));
    EXAMPLE_CHECK(cudaStreamDestroy(stream));
    return 0;
}
