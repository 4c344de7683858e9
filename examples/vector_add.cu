// vector_add: c = a + b over three float arrays, one element per thread, the
// "hello world" of mgpu: a memory-bound kernel whose blocks each touch their
// own part of every array. Checks every element exactly and prints the kernel
// time. Run it as it is, or under mgpu: mgpu-run -n 2 ./vector_add
#include "example_runtime.h"

static const example_defaults defaults = {
    "vector_add", "elements per array", 1ull << 28, 1ull << 20, 20, 5, 5, 3,
};

__global__ void vector_add(const float *a, const float *b, float *c, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

int main(int argc, char **argv)
{
    example_options options = example_parse_options(argc, argv, &defaults);
    size_t n = options.size;
    const unsigned threads = 256;
    if (n > (size_t)0x7fffffff * threads)
        example_bad_size(&defaults, "too many elements for one block per 256");
    unsigned blocks = (unsigned)((n + threads - 1) / threads);

    // Small whole numbers and halves: every sum is exact in float.
    std::vector<float> a(n), b(n), c(n);
    example_parallel_for(n, [&](size_t first, size_t last) {
        for (size_t i = first; i < last; i++) {
            a[i] = (float)(i % 1000) * 0.5f;
            b[i] = (float)(i % 37) + 1.0f;
        }
    });
    cudaStream_t stream;
    EXAMPLE_CHECK(cudaStreamCreate(&stream));
    float *da, *db, *dc;
    EXAMPLE_CHECK(cudaMalloc(&da, n * sizeof(float)));
    EXAMPLE_CHECK(cudaMalloc(&db, n * sizeof(float)));
    EXAMPLE_CHECK(cudaMalloc(&dc, n * sizeof(float)));
    EXAMPLE_CHECK(cudaMemcpyAsync(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    EXAMPLE_CHECK(cudaMemcpyAsync(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));

    auto launch_once = [&] { vector_add<<<blocks, threads, 0, stream>>>(da, db, dc, n); };
    launch_once(); // warm-up, not timed
    EXAMPLE_CHECK(cudaGetLastError());
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    float ms = example_time_launches(stream, options, launch_once);

    EXAMPLE_CHECK(cudaMemcpyAsync(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    example_mismatches wrong =
        example_find_mismatches(n, [&](size_t i) { return c[i] != a[i] + b[i]; });
    if (wrong.count) {
        size_t i = wrong.first;
        std::fprintf(stderr, "vector_add: %zu wrong elements; the first, %zu: %g + %g gave %g\n",
                     wrong.count, i, a[i], b[i], c[i]);
        std::printf("vector_add: %zu elements: FAIL\n", n);
        return 1;
    }
    std::printf(
        "vector_add: %zu elements: PASS checksum 0x%016llx\n", n,
        (unsigned long long)example_checksum(c.data(), n * sizeof(float), EXAMPLE_CHECKSUM_START));
    example_print_time(&defaults, &options, ms);
    EXAMPLE_CHECK(cudaFree(da));
    EXAMPLE_CHECK(cudaFree(db));
    EXAMPLE_CHECK(cudaFree(dc));
    EXAMPLE_CHECK(cudaStreamDestroy(stream));
    return 0;
}
