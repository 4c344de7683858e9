// memory_bandwidth: what device memory costs a program, to compare a plain run
// with runs under mgpu (bench/run-memory-bandwidth.sh), where a buffer's
// granules are spread over the GPUs and copies are split by owner.
//   1. Copy bandwidth between the host and one device buffer of SIZE GiB:
//      host to device and device to host, from pinned memory (cudaMallocHost;
//      cudaMemcpyAsync on a created stream, timed with events recorded around
//      it) and from pageable memory (malloc; a synchronous cudaMemcpy on the
//      default stream, timed with the host clock around it). Median of REPS
//      copies, in GB/s (1e9 bytes). The data is a non-zero pattern, and a
//      sample of it is checked after every device-to-host copy.
//   2. The cost of cudaMalloc and cudaFree, timed separately with the host
//      clock over batches of buffers that are all live at once, for 256 B,
//      64 KiB, 2 MiB, 64 MiB and 1 GiB: median of 5 batches, µs per call.
// Prints a Markdown table, one row per case.
//   memory_bandwidth [SIZE_GIB=8] [REPS=5]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "memory_bandwidth: line %d: %s failed: %s\n", __LINE__, #call,    \
                         cudaGetErrorString(e_));                                                  \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

static const size_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// Word i of the pattern with this seed; cheap, never zero.
static inline uint32_t pattern_word(size_t i, uint32_t seed)
{
    return ((uint32_t)i * 2654435761u + seed * 40503u) | 1u;
}

// Fills words with the pattern on every host core (8 GiB on one core takes
// seconds).
static void fill_pattern(uint32_t *words, size_t n, uint32_t seed)
{
    unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; t++)
        workers.emplace_back([=] {
            size_t first = n / threads * t, last = t + 1 == threads ? n : n / threads * (t + 1);
            for (size_t i = first; i < last; i++)
                words[i] = pattern_word(i, seed);
        });
    for (std::thread &w : workers)
        w.join();
}

// The words a device-to-host copy is checked at: the first and last 1024 and
// one per MiB.
static std::vector<size_t> sample_indices(size_t n)
{
    std::vector<size_t> at;
    for (size_t i = 0; i < std::min<size_t>(n, 1024); i++)
        at.push_back(i);
    for (size_t i = 1024; i + 1024 < n; i += MiB / 4)
        at.push_back(i);
    for (size_t i = n > 1024 ? n - 1024 : 0; i < n; i++)
        at.push_back(i);
    return at;
}

static void poison_sample(uint32_t *words, const std::vector<size_t> &at)
{
    for (size_t i : at)
        words[i] = 0xdeadbeefu;
}

static void check_sample(const char *what, const uint32_t *words, const std::vector<size_t> &at,
                         uint32_t seed)
{
    for (size_t i : at)
        if (words[i] != pattern_word(i, seed)) {
            std::fprintf(stderr, "memory_bandwidth: %s: word %zu is %#x, expected %#x\n", what, i,
                         words[i], pattern_word(i, seed));
            std::exit(1);
        }
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t k = v.size();
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static double seconds_now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Row {
    char name[64];
    double value;
    const char *unit;
};

int main(int argc, char **argv)
{
    double size_gib = argc > 1 ? std::atof(argv[1]) : 8;
    int reps = argc > 2 ? std::atoi(argv[2]) : 5;
    if (size_gib <= 0 || reps <= 0) {
        std::fprintf(stderr, "usage: memory_bandwidth [SIZE_GIB > 0] [REPS > 0]\n");
        return 2;
    }
    const size_t bytes = (size_t)(size_gib * GiB) / 4 * 4, words = bytes / 4;
    const uint32_t pinned_seed = 1, pageable_seed = 2;
    std::vector<Row> rows;

    CHECK(cudaSetDevice(0));
    uint32_t *device;
    CHECK(cudaMalloc(&device, bytes));
    uint32_t *pinned = nullptr;
    cudaError_t e = cudaMallocHost(&pinned, bytes);
    uint32_t *pageable = (uint32_t *)std::malloc(bytes);
    if (e != cudaSuccess || pageable == nullptr) {
        std::fprintf(stderr,
                     "memory_bandwidth: cannot allocate %zu bytes of %s host memory (%s); "
                     "try a smaller size\n",
                     bytes, e != cudaSuccess ? "pinned" : "pageable",
                     e != cudaSuccess ? cudaGetErrorString(e) : "malloc failed");
        return 1;
    }
    fill_pattern(pinned, words, pinned_seed);
    fill_pattern(pageable, words, pageable_seed);
    CHECK(cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice));
    const std::vector<size_t> sample = sample_indices(words);

    cudaStream_t stream;
    cudaEvent_t start, stop;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    auto add_bandwidth = [&](const char *name, const std::vector<double> &seconds) {
        Row r;
        std::snprintf(r.name, sizeof r.name, "%s", name);
        r.value = bytes / median(seconds) / 1e9;
        r.unit = "GB/s";
        rows.push_back(r);
    };
    // A pinned copy on the stream, timed by events around it.
    auto timed_async_copy = [&](void *to, const void *from, cudaMemcpyKind kind) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaMemcpyAsync(to, from, bytes, kind, stream));
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        return ms / 1e3;
    };
    // A pageable copy, synchronous, timed by the host clock around it.
    auto timed_sync_copy = [&](void *to, const void *from, cudaMemcpyKind kind) {
        CHECK(cudaDeviceSynchronize());
        double t0 = seconds_now();
        CHECK(cudaMemcpy(to, from, bytes, kind));
        return seconds_now() - t0;
    };

    std::vector<double> seconds;
    for (int r = 0; r < reps; r++)
        seconds.push_back(timed_async_copy(device, pinned, cudaMemcpyHostToDevice));
    add_bandwidth("host to device, pinned", seconds);
    seconds.clear();
    for (int r = 0; r < reps; r++) {
        poison_sample(pinned, sample);
        seconds.push_back(timed_async_copy(pinned, device, cudaMemcpyDeviceToHost));
        check_sample("device to host, pinned", pinned, sample, pinned_seed);
    }
    add_bandwidth("device to host, pinned", seconds);
    seconds.clear();
    for (int r = 0; r < reps; r++)
        seconds.push_back(timed_sync_copy(device, pageable, cudaMemcpyHostToDevice));
    add_bandwidth("host to device, pageable", seconds);
    seconds.clear();
    for (int r = 0; r < reps; r++) {
        poison_sample(pageable, sample);
        seconds.push_back(timed_sync_copy(pageable, device, cudaMemcpyDeviceToHost));
        check_sample("device to host, pageable", pageable, sample, pageable_seed);
    }
    add_bandwidth("device to host, pageable", seconds);

    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(device));
    CHECK(cudaFreeHost(pinned));
    std::free(pageable);

    // Allocation cost: batches of live buffers, as many as fit in 80% of
    // the free memory, at most `planned`.
    struct AllocCase {
        size_t size;
        int planned;
        const char *label;
    };
    const AllocCase cases[] = {{256, 1000, "256 B"},
                               {64 * KiB, 1000, "64 KiB"},
                               {2 * MiB, 1000, "2 MiB"},
                               {64 * MiB, 100, "64 MiB"},
                               {GiB, 20, "1 GiB"}};
    char batches[256] = "";
    for (const AllocCase &c : cases) {
        size_t free_bytes, total_bytes;
        CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        int count = (int)std::min<size_t>(c.planned, free_bytes / 10 * 8 / c.size);
        if (count < 1) {
            std::fprintf(stderr, "memory_bandwidth: no room for a %s buffer\n", c.label);
            return 1;
        }
        std::snprintf(batches + std::strlen(batches), sizeof batches - std::strlen(batches),
                      "%s%s x%d", batches[0] ? ", " : "", c.label, count);
        std::vector<void *> buffers(count);
        std::vector<double> alloc_us, free_us;
        for (int batch = 0; batch < 5; batch++) {
            double t0 = seconds_now();
            for (int i = 0; i < count; i++)
                CHECK(cudaMalloc(&buffers[i], c.size));
            double t1 = seconds_now();
            for (int i = 0; i < count; i++)
                CHECK(cudaFree(buffers[i]));
            double t2 = seconds_now();
            alloc_us.push_back((t1 - t0) * 1e6 / count);
            free_us.push_back((t2 - t1) * 1e6 / count);
        }
        Row r;
        std::snprintf(r.name, sizeof r.name, "cudaMalloc %s", c.label);
        r.value = median(alloc_us);
        r.unit = "µs";
        rows.push_back(r);
        std::snprintf(r.name, sizeof r.name, "cudaFree %s", c.label);
        r.value = median(free_us);
        rows.push_back(r);
    }

    std::printf("memory_bandwidth: %zu bytes (%.2f GiB), %d repetitions; pinned copies: events "
                "around cudaMemcpyAsync on a created stream; pageable copies: host clock around "
                "cudaMemcpy; allocation: host clock, median of 5 batches of live buffers (%s)\n\n",
                bytes, (double)bytes / GiB, reps, batches);
    std::printf("| case | value | unit |\n| --- | --- | --- |\n");
    for (const Row &r : rows)
        std::printf("| %s | %.3f | %s |\n", r.name, r.value, r.unit);
    return 0;
}
