// Placement that follows the kernels (issue 19; sched/placement_follow.h),
// one way of using large buffers per mode, each checked against the CPU.
// Run by tests/gpu-placement-follow.sh plainly and under mgpu-run
// --gpus 0x4 with MGPU_PLACEMENT=auto, whose report must show where each
// buffer ended:
//   small_loop   12 one-block kernels over a 1 GiB buffer: moves to GPU 0
//   vector_add   6 split vector adds of 256 MiB buffers: they stay spread
//   alternate    a split kernel and a one-block kernel in turn, 12 times
//                each: no streak, no move
//   streaks      5 one-block launches, then 5 split ones, 4 times: moves
//                to GPU 0 once; weighed over all launches so far, the split
//                streaks after do not pay for a move back (1 move)
//   unknown      one-block kernels reaching the buffer through a pointer
//                stored in memory: it moves to GPU 0 all the same
//   small_whole  6 one-block kernels over a 16 MiB buffer: it starts on the
//                home GPU (under MGPU_SPREAD_MIN) and stays there, no move
//   small_split  6 split kernels over a 16 MiB buffer: it starts on the
//                home GPU and is spread after 4 of them (1 move)
//   spread_split [ROUNDS]
//                60 launches of a kernel of tens of microseconds (ROUNDS
//                multiply-adds per element, 80 by default) over 48 MiB made on
//                the home GPU: split with the data there it would not pay,
//                after a spread it would, so under MGPU_SPLIT=auto the buffer
//                is spread before the first split try (decided together);
//                the last 20 launches' time on stderr
//   no_ptx CUBIN a kernel of a cubin with no PTX (mgpu cannot analyse or
//                split it) filling one of two 256 MiB buffers, 5 times: it
//                counts for both, and both move to GPU 0
// Prints "placement_follow: MODE PASS".
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cu_check.h"

static const char *mode = "";
static const unsigned THREADS = 256;
static const size_t QUARTER_GIB = (size_t)1 << 28;

// p[offset + i] += 1 for the block's threads: a small kernel, run whole.
extern "C" __global__ void touch(unsigned *p, unsigned long long offset)
{
    p[offset + threadIdx.x] += 1;
}

// The same through a pointer stored in memory: of unknown origin to mgpu.
extern "C" __global__ void touch_via(unsigned *const *where, unsigned long long offset)
{
    unsigned *p = where[0];
    p[offset + threadIdx.x] += 1;
}

// p[i] = 3 p[i] + 1 for every i: a large kernel, split.
extern "C" __global__ void scale(unsigned *p, unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 3 * p[i] + 1;
}

// p[i] taken `rounds` times through x -> 1664525 x + 1013904223: work of
// tens of microseconds on a few tens of MiB, exact for the CPU to check.
extern "C" __global__ void mix(unsigned *p, unsigned long long n, unsigned rounds)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned x = p[i];
    for (unsigned r = 0; r < rounds; r++)
        x = x * 1664525u + 1013904223u;
    p[i] = x;
}

extern "C" __global__ void vector_add(const unsigned *a, const unsigned *b, unsigned *c,
                                      unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static void launch(const void *kernel, unsigned blocks, void **args)
{
    CU(cuLaunchKernel(cu_kernel(kernel), blocks, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
}

static unsigned blocks_for(unsigned long long n)
{
    return (unsigned)((n + THREADS - 1) / THREADS);
}

static void touch_at(CUdeviceptr p, unsigned long long offset)
{
    void *args[] = {&p, &offset};
    launch((const void *)touch, 1, args);
}

static void scale_all(CUdeviceptr p, unsigned long long n)
{
    void *args[] = {&p, &n};
    launch((const void *)scale, blocks_for(n), args);
}

static bool is(const char *m)
{
    return strcmp(mode, m) == 0;
}

// The buffer must hold `want`.
static void expect(CUdeviceptr p, const std::vector<unsigned> &want, const char *what)
{
    std::vector<unsigned> got(want.size());
    CU(cuCtxSynchronize());
    CU(cuMemcpyDtoH(got.data(), p, want.size() * sizeof(unsigned)));
    for (size_t i = 0; i < want.size(); i++)
        if (got[i] != want[i]) {
            printf("placement_follow: %s FAIL: %s[%zu] is %u, not %u\n", mode, what, i, got[i],
                   want[i]);
            exit(1);
        }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: placement_follow MODE [CUBIN] (see the source)\n");
        return 2;
    }
    mode = argv[1];
    cu_check_program = "placement_follow";
    cu_check_mode = mode;
    cudaFree(0);
    if (is("small_loop")) {
        size_t count = 4 * QUARTER_GIB / 4; // 1 GiB of unsigned
        CUdeviceptr p;
        CU(cuMemAlloc(&p, count * 4));
        CU(cuMemsetD32(p, 0, count));
        std::vector<unsigned> want(count, 0);
        for (int k = 0; k < 12; k++) {
            unsigned long long offset = (unsigned long long)k * (count / 12);
            touch_at(p, offset);
            for (unsigned t = 0; t < THREADS; t++)
                want[offset + t]++;
        }
        expect(p, want, "buffer");
    } else if (is("vector_add")) {
        size_t n = QUARTER_GIB / 4;
        std::vector<unsigned> a(n), b(n), c(n);
        for (size_t i = 0; i < n; i++) {
            a[i] = (unsigned)i;
            b[i] = (unsigned)(3 * i + 7);
            c[i] = a[i] + b[i];
        }
        CUdeviceptr da, db, dc;
        CU(cuMemAlloc(&da, n * 4));
        CU(cuMemAlloc(&db, n * 4));
        CU(cuMemAlloc(&dc, n * 4));
        CU(cuMemcpyHtoD(da, a.data(), n * 4));
        CU(cuMemcpyHtoD(db, b.data(), n * 4));
        unsigned long long count = n;
        for (int k = 0; k < 6; k++) {
            void *args[] = {&da, &db, &dc, &count};
            launch((const void *)vector_add, blocks_for(n), args);
        }
        expect(dc, c, "c");
    } else if (is("alternate") || is("streaks")) {
        size_t n = QUARTER_GIB / 4;
        CUdeviceptr p;
        CU(cuMemAlloc(&p, n * 4));
        CU(cuMemsetD32(p, 1, n));
        std::vector<unsigned> want(n, 1);
        int rounds = is("alternate") ? 12 : 4, each = is("alternate") ? 1 : 5;
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < each; k++) {
                unsigned long long offset = (unsigned long long)(r * each + k) * 4096;
                touch_at(p, offset);
                for (unsigned t = 0; t < THREADS; t++)
                    want[offset + t]++;
            }
            for (int k = 0; k < each; k++) {
                scale_all(p, n);
                for (size_t i = 0; i < n; i++)
                    want[i] = 3 * want[i] + 1;
            }
        }
        expect(p, want, "buffer");
    } else if (is("small_whole") || is("small_split")) {
        size_t n = (size_t)4 << 20; // 16 MiB of unsigned
        CUdeviceptr p;
        CU(cuMemAlloc(&p, n * 4));
        CU(cuMemsetD32(p, 1, n));
        std::vector<unsigned> want(n, 1);
        for (int k = 0; k < 6; k++) {
            if (is("small_whole")) {
                unsigned long long offset = (unsigned long long)k * 4096;
                touch_at(p, offset);
                for (unsigned t = 0; t < THREADS; t++)
                    want[offset + t]++;
            } else {
                scale_all(p, n);
                for (size_t i = 0; i < n; i++)
                    want[i] = 3 * want[i] + 1;
            }
        }
        expect(p, want, "buffer");
    } else if (is("spread_split")) {
        size_t n = (size_t)12 << 20; // 48 MiB of unsigned
        unsigned rounds = argc >= 3 ? (unsigned)strtoul(argv[2], NULL, 10) : 80;
        const int launches = 60, timed = 20;
        std::vector<unsigned> want(n);
        for (size_t i = 0; i < n; i++)
            want[i] = (unsigned)(i * 2654435761u);
        CUdeviceptr p;
        CU(cuMemAlloc(&p, n * 4));
        CU(cuMemcpyHtoD(p, want.data(), n * 4));
        // Every launch's steps as one map x -> a x + c.
        unsigned a = 1, c = 0;
        for (unsigned long long k = 0; k < (unsigned long long)rounds * launches; k++) {
            a *= 1664525u;
            c = c * 1664525u + 1013904223u;
        }
        cudaEvent_t begin, end;
        cudaEventCreate(&begin);
        cudaEventCreate(&end);
        unsigned long long count = n;
        for (int k = 0; k < launches; k++) {
            if (k == launches - timed)
                cudaEventRecord(begin, 0);
            void *args[] = {&p, &count, &rounds};
            launch((const void *)mix, blocks_for(n), args);
        }
        cudaEventRecord(end, 0);
        cudaEventSynchronize(end);
        float ms = 0;
        cudaEventElapsedTime(&ms, begin, end);
        fprintf(stderr, "placement_follow: spread_split: %.4f ms per launch (the last %d)\n",
                ms / timed, timed);
        for (size_t i = 0; i < n; i++)
            want[i] = want[i] * a + c;
        expect(p, want, "buffer");
    } else if (is("unknown")) {
        size_t n = QUARTER_GIB / 4;
        CUdeviceptr p, where;
        CU(cuMemAlloc(&p, n * 4));
        CU(cuMemAlloc(&where, sizeof p));
        CU(cuMemsetD32(p, 0, n));
        CU(cuMemcpyHtoD(where, &p, sizeof p));
        std::vector<unsigned> want(n, 0);
        for (int k = 0; k < 6; k++) {
            unsigned long long offset = (unsigned long long)k * 65536;
            void *args[] = {&where, &offset};
            launch((const void *)touch_via, 1, args);
            for (unsigned t = 0; t < THREADS; t++)
                want[offset + t]++;
        }
        expect(p, want, "buffer");
    } else if (is("no_ptx") && argc == 3) {
        // fill<int>(out, value, n) of tests/ptx/kernels.cu, a grid-stride
        // loop, from a cubin with no PTX: mgpu cannot tell what it uses, so
        // it counts for every large buffer, the one it fills and the other.
        CUmodule module;
        CUfunction fill;
        CU(cuModuleLoad(&module, argv[2]));
        CU(cuModuleGetFunction(&fill, module, "_Z4fillIiEvPT_S0_i"));
        int n = (int)(QUARTER_GIB / 4);
        CUdeviceptr filled, other;
        CU(cuMemAlloc(&filled, (size_t)n * 4));
        CU(cuMemAlloc(&other, (size_t)n * 4));
        CU(cuMemsetD32(other, 5, (size_t)n));
        for (int value = 1; value <= 5; value++) {
            void *args[] = {&filled, &value, &n};
            CU(cuLaunchKernel(fill, 1024, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
        }
        expect(filled, std::vector<unsigned>((size_t)n, 5u), "filled");
        expect(other, std::vector<unsigned>((size_t)n, 5u), "other");
    } else {
        printf("placement_follow: unknown mode %s (or no cubin given)\n", mode);
        return 2;
    }
    printf("placement_follow: %s PASS\n", mode);
    return 0;
}
