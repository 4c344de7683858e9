// two_threads: two host threads (std::thread), each with its own non-blocking
// stream, pinned host buffers and device buffers, each running 40 rounds of
// copy in / kernel / copy out concurrently with the other, as a server or a
// pipelined application does (cf. the CUDA SDK's simpleMultiCopy and
// simpleCallback). Each round's output is checked against the CPU (integers,
// exact). Under mgpu: split launches and copies issued from two threads at
// once into two streams; grids of 3907 and 1563 blocks.
// SCALE s (optional argument, 1 to 1000): both threads' elements grow s-fold
// (1000003 s and 400000 s), still 40 rounds; at s > 1 each thread makes its
// inputs once (round r's input is the same hash stream moved on by 7919 r, so
// a round copies in from there), and the CPU checks (and the checksum covers)
// 256 runs of 256 elements a round, spread from the first to the last.
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

// Round r's input: element i is hash32(which * 1000003 + r * 7919 + i).
#define ROUND_SHIFT 7919

struct Worker {
    int which, n, rounds;
    bool sampled; // SCALE > 1: inputs made once, a sample checked
    unsigned long long checksum = 0;
    int wrong = 0;

    void run()
    {
        if (sampled) {
            run_sampled();
            return;
        }
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
                h_in[i] = hash32((uint32_t)(which * 1000003 + r * ROUND_SHIFT + i));
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
            for (int i = 0; i < n; i++)
                check(r, i, h_in, h_out);
        }
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
        CHECK(cudaFreeHost(h_in));
        CHECK(cudaFreeHost(h_out));
        CHECK(cudaStreamDestroy(stream));
    }

    // Element i of round r against the CPU, into the checksum.
    void check(int r, int i, const unsigned int *in, const unsigned int *out)
    {
        unsigned int v = in[i], want;
        if (which == 0) {
            want = v * 2654435761u + (unsigned int)r;
        } else {
            unsigned int s = (unsigned int)r % 31 + 1;
            want = ((v << s) | (v >> (32 - s))) ^ in[(i + 1) % n];
        }
        if (out[i] != want && wrong++ < 5)
            fprintf(stderr, "two_threads: thread %d round %d: out[%d] = %u, expected %u\n", which,
                    r, i, out[i], want);
        checksum = checksum * 31 + out[i];
    }

    // SCALE > 1: the rounds' inputs, one stream of hashes made once, n +
    // (rounds - 1) * ROUND_SHIFT long, round r copying in from r * ROUND_SHIFT
    // on (what filling h_in would have made); then the same copy in, kernel,
    // copy out, with the CPU checking runs of 256 elements spread over the
    // output, the last run ending at the last element.
    void run_sampled()
    {
        const int threads = 256, blocks = (n + threads - 1) / threads;
        const int runs = 256, run_length = 256;
        const size_t src_length = (size_t)n + (size_t)(rounds - 1) * ROUND_SHIFT;
        cudaStream_t stream;
        CHECK(cudaSetDevice(0));
        CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        unsigned int *h_src, *h_out, *d_in, *d_out;
        CHECK(cudaMallocHost(&h_src, src_length * sizeof(unsigned int)));
        CHECK(cudaMallocHost(&h_out, n * sizeof(unsigned int)));
        CHECK(cudaMalloc(&d_in, n * sizeof(unsigned int)));
        CHECK(cudaMalloc(&d_out, n * sizeof(unsigned int)));
        for (size_t j = 0; j < src_length; j++)
            h_src[j] = hash32((uint32_t)(which * 1000003u + j));
        for (int r = 0; r < rounds; r++) {
            const unsigned int *h_in = h_src + (size_t)r * ROUND_SHIFT;
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
            for (int k = 0; k < runs; k++) {
                const int start = (int)((size_t)k * (n - run_length) / (runs - 1));
                for (int i = start; i < start + run_length; i++)
                    check(r, i, h_in, h_out);
            }
        }
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
        CHECK(cudaFreeHost(h_src));
        CHECK(cudaFreeHost(h_out));
        CHECK(cudaStreamDestroy(stream));
    }
};

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "two_threads", 1000);
    CHECK(cudaFree(0)); // create the context before the threads start
    // Buffers of 3.8 and 1.5 MiB: neither ends just past a 2 MiB page, whose
    // few bytes would give the last GPU no blocks where mgpu cuts at the
    // pages' owners.
    Worker a{0, 1000003 * scale, 40, scale > 1}, b{1, 400000 * scale, 40, scale > 1};
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
