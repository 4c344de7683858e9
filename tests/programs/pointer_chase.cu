// pointer_chase: a linked structure in device memory, as in GPU graph and
// latency benchmarks (e.g. the pointer-chasing microbenchmarks of Wong et al.):
// 200000 nodes in three cudaMalloc buffers of different sizes, each node
// holding the device address of its successor (computed and written by the
// host) and a payload. walk_sum: each of 50000 threads follows 64 hops from its
// start node and sums the payloads; walk_bump: each thread follows its walk
// again and atomicAdd()s 1 to every payload it passes; walk_sum again. Under
// mgpu: pointers stored in device memory and followed across buffers, stores
// through them, grids of 391 blocks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

struct Node {
    Node *next;
    int payload;
    int id; // the node's global index, to check the walk on the host
};

static uint32_t lcg_state = 8675309u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

__global__ void walk_sum(Node *const *starts, int walkers, int hops, long long *sums, int *last_ids)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < walkers) {
        const Node *p = starts[t];
        long long sum = 0;
        for (int h = 0; h < hops; h++) {
            sum += p->payload;
            p = p->next;
        }
        sums[t] = sum;
        last_ids[t] = p->id;
    }
}

__global__ void walk_bump(Node *const *starts, int walkers, int hops)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < walkers) {
        Node *p = starts[t];
        for (int h = 0; h < hops; h++) {
            atomicAdd(&p->payload, 1);
            p = p->next;
        }
    }
}

int main()
{
    const int buffer_nodes[3] = {100000, 60000, 40000};
    const int total = 200000, walkers = 50000, hops = 64, threads = 128;
    // Global index g lives in buffer b at index g - first[b].
    int first[3] = {0, buffer_nodes[0], buffer_nodes[0] + buffer_nodes[1]};
    Node *d_buf[3];
    for (int b = 0; b < 3; b++)
        CHECK(cudaMalloc(&d_buf[b], buffer_nodes[b] * sizeof(Node)));
    auto device_address = [&](int g) {
        int b = g < first[1] ? 0 : g < first[2] ? 1 : 2;
        return d_buf[b] + (g - first[b]);
    };

    // A random successor for every node (a random functional graph), payloads,
    // and random start nodes.
    std::vector<int> next(total), payload(total), start(walkers);
    for (int g = 0; g < total; g++) {
        next[g] = (int)(lcg() % total);
        payload[g] = (int)(lcg() % 1000) - 300;
    }
    for (int t = 0; t < walkers; t++)
        start[t] = (int)(lcg() % total);
    std::vector<Node> h_nodes(total);
    for (int g = 0; g < total; g++)
        h_nodes[g] = Node{device_address(next[g]), payload[g], g};
    for (int b = 0; b < 3; b++)
        CHECK(cudaMemcpy(d_buf[b], &h_nodes[first[b]], buffer_nodes[b] * sizeof(Node),
                         cudaMemcpyHostToDevice));
    std::vector<Node *> h_starts(walkers);
    for (int t = 0; t < walkers; t++)
        h_starts[t] = device_address(start[t]);

    Node **d_starts;
    long long *d_sums;
    int *d_last;
    CHECK(cudaMalloc(&d_starts, walkers * sizeof(Node *)));
    CHECK(cudaMalloc(&d_sums, 2 * walkers * sizeof(long long)));
    CHECK(cudaMalloc(&d_last, walkers * sizeof(int)));
    CHECK(cudaMemcpy(d_starts, h_starts.data(), walkers * sizeof(Node *), cudaMemcpyHostToDevice));
    int blocks = (walkers + threads - 1) / threads;
    walk_sum<<<blocks, threads>>>(d_starts, walkers, hops, d_sums, d_last);
    CHECK(cudaGetLastError());
    walk_bump<<<blocks, threads>>>(d_starts, walkers, hops);
    CHECK(cudaGetLastError());
    walk_sum<<<blocks, threads>>>(d_starts, walkers, hops, d_sums + walkers, d_last);
    CHECK(cudaGetLastError());
    std::vector<long long> sums(2 * walkers);
    std::vector<int> last(walkers);
    CHECK(cudaMemcpy(sums.data(), d_sums, 2 * walkers * sizeof(long long), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(last.data(), d_last, walkers * sizeof(int), cudaMemcpyDeviceToHost));

    // CPU reference: the same walks over indices; visits per node for the bumps.
    std::vector<long long> ref(2 * walkers);
    std::vector<int> ref_last(walkers), bumped = payload;
    for (int t = 0; t < walkers; t++) {
        int g = start[t];
        long long s = 0;
        for (int h = 0; h < hops; h++, g = next[g]) {
            s += payload[g];
            bumped[g]++;
        }
        ref[t] = s;
        ref_last[t] = g;
    }
    long long total_after = 0;
    for (int t = 0; t < walkers; t++) {
        int g = start[t];
        long long s = 0;
        for (int h = 0; h < hops; h++, g = next[g])
            s += bumped[g];
        ref[walkers + t] = s;
        total_after += s;
    }
    int wrong = 0;
    for (int t = 0; t < walkers; t++)
        if ((sums[t] != ref[t] || sums[walkers + t] != ref[walkers + t] ||
             last[t] != ref_last[t]) &&
            wrong++ < 5)
            fprintf(stderr,
                    "pointer_chase: walker %d: sums %lld %lld, end %d; expected %lld %lld, %d\n", t,
                    sums[t], sums[walkers + t], last[t], ref[t], ref[walkers + t], ref_last[t]);
    printf("pointer_chase: %d nodes in 3 buffers, %d walkers of %d hops, %d blocks\n", total,
           walkers, hops, blocks);
    printf("pointer_chase: sum of all walks after the bumps %lld\n", total_after);
    for (int b = 0; b < 3; b++)
        CHECK(cudaFree(d_buf[b]));
    CHECK(cudaFree(d_starts));
    CHECK(cudaFree(d_sums));
    CHECK(cudaFree(d_last));
    if (wrong) {
        printf("pointer_chase: FAIL %d walkers wrong\n", wrong);
        return 1;
    }
    printf("pointer_chase: PASS\n");
    return 0;
}
