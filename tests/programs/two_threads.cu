// two_threads: two host threads (std::thread), each with its own non-blocking
// stream, pinned host buffers and device buffers, each running 40 rounds of
// copy in / kernel / copy out concurrently with the other, as a server or a
// pipelined application does (cf. the CUDA SDK's simpleMultiCopy and
// simpleCallback). Each round's output is checked against the CPU (integers,
// exact). Under mgpu: split launches and copies issued from two threads at
// once into two streams; grids of 3907 and 1563 blocks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

static uint32_t hash32(uint32_t x) // a stateless mix, so each thread's input is fixed
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

__global__ void scale_offset(const unsigned int *in, unsigned int *out, int n, unsigned int round)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * 2654435761u + round;
}

__global__ void rotate_xor(const unsigned int *in, unsigned int *out, int n, unsigned int round)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned int v = in[i], r = round % 31 + 1;
        out[i] = ((v << r) | (v >> (32 - r))) ^ in[(i + 1) % n];
    }
}

struct Worker {
    int which, n, rounds;
    unsigned long long checksum = 0;
    int wrong = 0;

    void run()
    {
        const int threads = 256, blocks = (n + threads - 1) / threads;
        cudaStream_t stream;
        CHECK(cudaSetDevice(0));
        CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        unsigned int *h_in, *h_out, *d_in, *d_out;
        CHECK(cudaMallocHost(&h_in, n * sizeof(unsigned int)));
        CHECK(cudaMallocHost(&h_out, n * sizeof(unsigned int)));
        CHECK(cudaMalloc(&d_in, n * sizeof(unsigned int)));
        CHECK(cudaMalloc(&d_out, n * sizeof(unsigned int)));
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < n; i++)
                h_in[i] = hash32((uint32_t)(which * 1000003 + r * 7919 + i));
            CHECK(cudaMemcpyAsync(d_in, h_in, n * sizeof(unsigned int), cudaMemcpyHostToDevice,
                                  stream));
            if (which == 0)
                scale_offset<<<blocks, threads, 0, stream>>>(d_in, d_out, n, r);
            else
                rotate_xor<<<blocks, threads, 0, stream>>>(d_in, d_out, n, r);
            CHECK(cudaGetLastError());
            CHECK(cudaMemcpyAsync(h_out, d_out, n * sizeof(unsigned int), cudaMemcpyDeviceToHost,
                                  stream));
            CHECK(cudaStreamSynchronize(stream));
            for (int i = 0; i < n; i++) {
                unsigned int v = h_in[i], want;
                if (which == 0) {
                    want = v * 2654435761u + (unsigned int)r;
                } else {
                    unsigned int s = (unsigned int)r % 31 + 1;
                    want = ((v << s) | (v >> (32 - s))) ^ h_in[(i + 1) % n];
                }
                if (h_out[i] != want && wrong++ < 5)
                    fprintf(stderr, "two_threads: thread %d round %d: out[%d] = %u, expected %u\n",
                            which, r, i, h_out[i], want);
                checksum = checksum * 31 + h_out[i];
            }
        }
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
        CHECK(cudaFreeHost(h_in));
        CHECK(cudaFreeHost(h_out));
        CHECK(cudaStreamDestroy(stream));
    }
};

int main()
{
    CHECK(cudaFree(0)); // create the context before the threads start
    // Buffers of 3.8 and 1.5 MiB: neither ends just past a 2 MiB page, whose
    // few bytes would give the last GPU no blocks where mgpu cuts at the
    // pages' owners.
    Worker a{0, 1000003, 40}, b{1, 400000, 40};
    std::thread ta([&] { a.run(); }), tb([&] { b.run(); });
    ta.join();
    tb.join();
    printf("two_threads: thread 0: %d elements, %d rounds, checksum 0x%016llx\n", a.n, a.rounds,
           a.checksum);
    printf("two_threads: thread 1: %d elements, %d rounds, checksum 0x%016llx\n", b.n, b.rounds,
           b.checksum);
    if (a.wrong || b.wrong) {
        printf("two_threads: FAIL %d and %d values wrong\n", a.wrong, b.wrong);
        return 1;
    }
    printf("two_threads: PASS\n");
    return 0;
}
