// mirror_refresh: what refreshing a replicated buffer costs (issue 18). A
// kernel reads a 256 MiB buffer B (every slice reads all of it, so under
// mgpu-run with MGPU_MIRROR=always each GPU entry reads its own copy); each
// round first sets a 256 MiB buffer, then launches the kernel, timed with
// events around both: in "stale" rounds the set writes B, so every copy is
// refreshed before the launch; in "fresh" rounds it writes another buffer
// of the same size, so nothing is. The difference of the medians is the
// refresh of all copies. Prints one line with both medians and the
// difference.
//   mirror_refresh [MiB=256] [rounds=21]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "mirror_refresh: %s failed: %s\n", #call,                         \
                         cudaGetErrorString(e_));                                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

// Each block reads one word per 64 KiB page of B: every slice touches all of
// B, cheaply, and the sum keeps the reads from being optimised away.
__global__ void touch_pages(const unsigned *b, size_t words, unsigned *out)
{
    size_t step = 16384; // words per 64 KiB
    unsigned sum = 0;
    for (size_t i = threadIdx.x * step; i < words; i += (size_t)blockDim.x * step)
        sum += b[i];
    if (threadIdx.x == 0)
        out[blockIdx.x] = sum;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)std::atoi(argv[1]) : 256;
    int rounds = argc > 2 ? std::atoi(argv[2]) : 21;
    if (mib == 0 || rounds <= 0) {
        std::fprintf(stderr, "usage: mirror_refresh [MiB > 0] [rounds > 0]\n");
        return 2;
    }
    size_t bytes = mib << 20, words = bytes / 4;
    const unsigned blocks = 1024;
    unsigned *b, *other, *out;
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&other, bytes));
    CHECK(cudaMalloc(&out, blocks * sizeof(unsigned)));
    CHECK(cudaMemset(b, 1, bytes));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    touch_pages<<<blocks, 256>>>(b, words, out); // makes the copies
    CHECK(cudaDeviceSynchronize());
    std::vector<double> stale, fresh;
    for (int r = 0; r < 2 * rounds; r++) {
        bool write_b = r % 2 == 0;
        CHECK(cudaEventRecord(start));
        CHECK(cudaMemsetAsync(write_b ? b : other, r & 0xff, bytes));
        touch_pages<<<blocks, 256>>>(b, words, out);
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        (write_b ? stale : fresh).push_back(ms);
    }
    CHECK(cudaGetLastError());
    double s = median(stale), f = median(fresh);
    std::printf("mirror_refresh: %zu MiB, median of %d: stale_ms=%.3f fresh_ms=%.3f refresh_ms=%.3f\n",
                mib, rounds, s, f, s - f);
    return 0;
}
