// histogram: a 256-bin histogram of bytes. Each block counts its own 1 MiB
// chunk of the input in shared-memory bins (shared atomics, 16-byte loads),
// then adds them to the global bins with one global atomic per bin. Under
// mgpu those global atomics come from every GPU to the one that holds the
// bins. The counts are integers, so the check is exact: the global bins are
// never cleared between launches, and after k launches each must be k times
// the CPU's count. The input is skewed (the smaller of two random bytes), so
// low bins are hot.
#include "example_runtime.h"

static const example_defaults defaults = {
    "histogram", "input bytes", 1ull << 30, 1ull << 24, 20, 5, 5, 3,
};

constexpr int BINS = 256;
constexpr unsigned THREADS = BINS; // one thread per bin for the clearing and the final adds
constexpr size_t CHUNK_BYTES = 1 << 20;

__device__ void count_bytes_of_word(unsigned int word, unsigned int *block_bins)
{
    for (int shift = 0; shift < 32; shift += 8)
        atomicAdd(&block_bins[(word >> shift) & 0xff], 1u);
}

__global__ void histogram_bytes(const unsigned char *data, size_t n, unsigned long long *bins)
{
    __shared__ unsigned int block_bins[BINS];
    block_bins[threadIdx.x] = 0;
    __syncthreads();
    size_t begin = (size_t)blockIdx.x * CHUNK_BYTES;
    size_t end = min(begin + CHUNK_BYTES, n);
    // Whole 16-byte groups (begin is a multiple of 16 and data is aligned),
    // then the last few bytes of the input one at a time.
    size_t groups_end = begin + ((end - begin) & ~(size_t)15);
    for (size_t at = begin + 16 * (size_t)threadIdx.x; at < groups_end;
         at += 16 * (size_t)THREADS) {
        uint4 group = *reinterpret_cast<const uint4 *>(data + at);
        count_bytes_of_word(group.x, block_bins);
        count_bytes_of_word(group.y, block_bins);
        count_bytes_of_word(group.z, block_bins);
        count_bytes_of_word(group.w, block_bins);
    }
    for (size_t at = groups_end + threadIdx.x; at < end; at += THREADS)
        atomicAdd(&block_bins[data[at]], 1u);
    __syncthreads();
    unsigned int count = block_bins[threadIdx.x];
    if (count != 0)
        atomicAdd(&bins[threadIdx.x], (unsigned long long)count);
}

static unsigned char input_byte(size_t i)
{
    uint64_t h = example_hash(i);
    return (unsigned char)std::min(h & 0xff, (h >> 8) & 0xff);
}

int main(int argc, char **argv)
{
    example_options options = example_parse_options(argc, argv, &defaults);
    size_t n = options.size;
    if (n / CHUNK_BYTES >= 0x7fffffff)
        example_bad_size(&defaults, "too many bytes for one block per MiB");
    unsigned blocks = (unsigned)((n + CHUNK_BYTES - 1) / CHUNK_BYTES);
    unsigned long long launches = example_total_launches(&options);

    std::vector<unsigned char> data(n);
    std::vector<unsigned long long> cpu_bins(BINS, 0), bins(BINS, 0);
    std::vector<std::vector<unsigned long long>> part_bins(example_host_threads(),
                                                           std::vector<unsigned long long>(BINS));
    unsigned parts = example_parallel_parts(n, [&](unsigned part, size_t first, size_t last) {
        for (size_t i = first; i < last; i++) {
            data[i] = input_byte(i);
            part_bins[part][data[i]]++;
        }
    });
    for (unsigned p = 0; p < parts; p++)
        for (int bin = 0; bin < BINS; bin++)
            cpu_bins[bin] += part_bins[p][bin];

    cudaStream_t stream;
    EXAMPLE_CHECK(cudaStreamCreate(&stream));
    unsigned char *ddata;
    unsigned long long *dbins;
    EXAMPLE_CHECK(cudaMalloc(&ddata, n));
    EXAMPLE_CHECK(cudaMalloc(&dbins, BINS * sizeof(unsigned long long)));
    EXAMPLE_CHECK(cudaMemcpyAsync(ddata, data.data(), n, cudaMemcpyHostToDevice, stream));
    EXAMPLE_CHECK(cudaMemsetAsync(dbins, 0, BINS * sizeof(unsigned long long), stream));

    auto launch_once = [&] { histogram_bytes<<<blocks, THREADS, 0, stream>>>(ddata, n, dbins); };
    launch_once(); // warm-up, not timed
    EXAMPLE_CHECK(cudaGetLastError());
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    float ms = example_time_launches(stream, options, launch_once);

    EXAMPLE_CHECK(cudaMemcpyAsync(bins.data(), dbins, BINS * sizeof(unsigned long long),
                                  cudaMemcpyDeviceToHost, stream));
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    int wrong = 0;
    for (int bin = 0; bin < BINS; bin++)
        if (bins[bin] != launches * cpu_bins[bin] && wrong++ == 0)
            std::fprintf(stderr, "histogram: bin %d: %llu after %llu launches, expected %llu\n",
                         bin, bins[bin], launches, launches * cpu_bins[bin]);
    if (wrong) {
        std::fprintf(stderr, "histogram: %d bins wrong\n", wrong);
        std::printf("histogram: %zu bytes, %d bins, %llu launches: FAIL\n", n, BINS, launches);
        return 1;
    }
    std::printf("histogram: %zu bytes, %d bins, %llu launches: PASS checksum 0x%016llx\n", n, BINS,
                launches,
                (unsigned long long)example_checksum(bins.data(), BINS * sizeof(unsigned long long),
                                                     EXAMPLE_CHECKSUM_START));
    example_print_time(&defaults, &options, ms);
    EXAMPLE_CHECK(cudaFree(ddata));
    EXAMPLE_CHECK(cudaFree(dbins));
    EXAMPLE_CHECK(cudaStreamDestroy(stream));
    return 0;
}
