// graph_replay: one iteration of a small pipeline (a memset and three kernels)
// captured into a CUDA graph with stream capture, instantiated and replayed,
// as in the CUDA SDK's simpleCudaGraphs and in codes that use graphs to cut
// launch overhead. The first iteration runs as plain launches, the other 99 as
// graph launches; the final state is compared with the CPU doing the same 100
// iterations (unsigned integers, exact). Under mgpu: launches into a stream
// being captured (not split), replayed by cudaGraphLaunch, after split launches
// of the same kernels.
// SCALE s (optional argument, 1 to 1000): n grows to s * 2^19 + 3, still 100
// iterations; at s > 1 the CPU checks (and the checksum covers) 1024 windows of
// 256 elements spread from the first to the last, each simulated on its own.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

static uint32_t lcg_state = 1234567u;
static uint32_t lcg()
{
    return lcg_state = lcg_state * 1664525u + 1013904223u;
}

__global__ void mix_x(unsigned int *x, const unsigned int *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * 3u + y[i];
}

// tmp has been cleared; the pairwise sum of neighbours (wrapping).
__global__ void pair_sum(const unsigned int *x, unsigned int *tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        tmp[i] += x[i] + x[i + 1 < n ? i + 1 : 0];
}

__global__ void mix_y(unsigned int *y, const unsigned int *tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = (y[i] ^ (tmp[i] >> 3)) + (unsigned int)i;
}

// The CPU reference for the w elements from start on (wrapping past n) after
// `iterations` iterations: element i depends only on x and y at i, i + 1, ...,
// i + iterations, so a window of w + iterations elements is simulated, its
// last valid element moving one to the left each iteration.
static void reference_window(const unsigned int *x0, const unsigned int *y0, int n, int start,
                             int w, int iterations, unsigned int *wx, unsigned int *wy)
{
    int len = w + iterations;
    std::vector<unsigned int> x(len), y(len);
    for (int j = 0; j < len; j++) {
        x[j] = x0[(start + (size_t)j) % n];
        y[j] = y0[(start + (size_t)j) % n];
    }
    for (int it = 0; it < iterations; it++, len--) {
        for (int j = 0; j < len; j++)
            x[j] = x[j] * 3u + y[j];
        for (int j = 0; j + 1 < len; j++)
            y[j] = (y[j] ^ ((x[j] + x[j + 1]) >> 3)) + (unsigned int)((start + (size_t)j) % n);
    }
    for (int j = 0; j < w; j++) {
        wx[j] = x[j];
        wy[j] = y[j];
    }
}

static void one_iteration(unsigned int *x, unsigned int *y, unsigned int *tmp, int n,
                          cudaStream_t stream)
{
    const int threads = 256, blocks = (n + threads - 1) / threads;
    mix_x<<<blocks, threads, 0, stream>>>(x, y, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemsetAsync(tmp, 0, n * sizeof(unsigned int), stream));
    pair_sum<<<blocks, threads, 0, stream>>>(x, tmp, n);
    CHECK(cudaGetLastError());
    mix_y<<<blocks, threads, 0, stream>>>(y, tmp, n);
    CHECK(cudaGetLastError());
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "graph_replay", 1000);
    const bool sampled = scale > 1;
    const int n = scale * (1 << 19) + 3, iterations = 100;
    const int windows = 1024, window = 256; // the sample, at SCALE > 1
    std::vector<unsigned int> x(n), y(n), tmp(sampled ? 0 : n);
    for (int i = 0; i < n; i++) {
        x[i] = lcg();
        y[i] = lcg();
    }
    unsigned int *d_x, *d_y, *d_tmp;
    CHECK(cudaMalloc(&d_x, n * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_y, n * sizeof(unsigned int)));
    CHECK(cudaMalloc(&d_tmp, n * sizeof(unsigned int)));
    CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_y, y.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));

    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    one_iteration(d_x, d_y, d_tmp, n, stream); // iteration 1, as plain launches

    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    one_iteration(d_x, d_y, d_tmp, n, stream);
    CHECK(cudaStreamEndCapture(stream, &graph));
    size_t num_nodes = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &num_nodes));
    CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
    for (int it = 1; it < iterations; it++)
        CHECK(cudaGraphLaunch(graph_exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    int wrong = 0;
    uint64_t checksum;
    if (!sampled) {
        std::vector<unsigned int> gx(n), gy(n);
        CHECK(cudaMemcpy(gx.data(), d_x, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(gy.data(), d_y, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));

        // CPU reference: the same 100 iterations.
        for (int it = 0; it < iterations; it++) {
            for (int i = 0; i < n; i++)
                x[i] = x[i] * 3u + y[i];
            for (int i = 0; i < n; i++)
                tmp[i] = x[i] + x[i + 1 < n ? i + 1 : 0];
            for (int i = 0; i < n; i++)
                y[i] = (y[i] ^ (tmp[i] >> 3)) + (unsigned int)i;
        }
        for (int i = 0; i < n; i++)
            if ((gx[i] != x[i] || gy[i] != y[i]) && wrong++ < 5)
                fprintf(stderr, "graph_replay: [%d]: x %u y %u, expected x %u y %u\n", i, gx[i],
                        gy[i], x[i], y[i]);
        checksum =
            fnv1a(gy.data(), n * sizeof(unsigned int), fnv1a(gx.data(), n * sizeof(unsigned int)));
    } else {
        // The windows start evenly from 0 to n - window (the last one reads
        // past the end, wrapping to the start); only they are copied back.
        std::vector<unsigned int> gx(window), gy(window), wx(window), wy(window);
        checksum = fnv1a(nullptr, 0);
        for (int k = 0; k < windows; k++) {
            const int start = (int)((size_t)k * (n - window) / (windows - 1));
            CHECK(cudaMemcpy(gx.data(), d_x + start, window * sizeof(unsigned int),
                             cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(gy.data(), d_y + start, window * sizeof(unsigned int),
                             cudaMemcpyDeviceToHost));
            reference_window(x.data(), y.data(), n, start, window, iterations, wx.data(),
                             wy.data());
            for (int j = 0; j < window; j++)
                if ((gx[j] != wx[j] || gy[j] != wy[j]) && wrong++ < 5)
                    fprintf(stderr, "graph_replay: [%d]: x %u y %u, expected x %u y %u\n",
                            start + j, gx[j], gy[j], wx[j], wy[j]);
            checksum = fnv1a(gy.data(), window * sizeof(unsigned int),
                             fnv1a(gx.data(), window * sizeof(unsigned int), checksum));
        }
    }
    printf("graph_replay: n=%d, a graph of %zu nodes, %d iterations (1 plain, %d replays)\n", n,
           num_nodes, iterations, iterations - 1);
    printf("graph_replay: checksum 0x%016llx\n", (unsigned long long)checksum);
    CHECK(cudaGraphExecDestroy(graph_exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_y));
    CHECK(cudaFree(d_tmp));
    if (wrong) {
        printf("graph_replay: FAIL %d elements wrong\n", wrong);
        return 1;
    }
    printf("graph_replay: PASS\n");
    return 0;
}
