// pointer_chase: a linked structure in device memory, as in GPU graph and
// latency benchmarks (e.g. the pointer-chasing microbenchmarks of Wong et al.):
// 200000 nodes in three cudaMalloc buffers of different sizes, each node
// holding the device address of its successor (computed and written by the
// host) and a payload. walk_sum: each of 50000 threads follows 64 hops from its
// start node and sums the payloads; walk_bump: each thread follows its walk
// again and atomicAdd()s 1 to every payload it passes; walk_sum again. Under
// mgpu: pointers stored in device memory and followed across buffers, stores
// through them, grids of 391 blocks.
// SCALE s (optional argument, 1 to 1000): s times the walkers (and the
// blocks), each still of 64 hops, over min(s, 16) times the nodes of the first
// two buffers (the third stays under 1 MiB; at 16, 2.6M nodes, 42 MB; more
// would take the CPU's check over a second). The CPU counts every node's
// visits hop by hop over the nodes reached (not walker by walker), which gives
// the sums over all walks and the end nodes of all; above 1 it follows only
// every s-th walker and the last (50001 walks) to check their sums and ends
// one by one.
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

// The largest SCALE (the optional argument; program_check.h).
#define MAX_SCALE 1000
// The SCALE up to which the nodes grow (the walkers grow on).
#define NODES_CAP 16

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

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "pointer_chase", MAX_SCALE);
    const int m = scale < NODES_CAP ? scale : NODES_CAP;
    const int buffer_nodes[3] = {100000 * m, 60000 * m, 40000};
    const int total = buffer_nodes[0] + buffer_nodes[1] + buffer_nodes[2], walkers = 50000 * scale,
              hops = 64, threads = 128;
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
    std::vector<long long> sums(2 * (size_t)walkers);
    std::vector<int> last(walkers);
    CHECK(cudaMemcpy(sums.data(), d_sums, 2 * walkers * sizeof(long long), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(last.data(), d_last, walkers * sizeof(int), cudaMemcpyDeviceToHost));

    // CPU reference. Visits per node, hop by hop: at[g] walkers stand on node g
    // (the nodes in `on`), and move on together. After the last hop at[] holds
    // how many walks end on each node.
    std::vector<long long> visits(total, 0);
    std::vector<int> at(total, 0), at_next(total, 0), on, on_next;
    for (int t = 0; t < walkers; t++)
        if (at[start[t]]++ == 0)
            on.push_back(start[t]);
    for (int h = 0; h < hops; h++) {
        on_next.clear();
        for (int g : on) {
            int n = next[g];
            visits[g] += at[g];
            if (at_next[n] == 0)
                on_next.push_back(n);
            at_next[n] += at[g];
            at[g] = 0;
        }
        at.swap(at_next);
        on.swap(on_next);
    }
    // The sums over all walks, before and after the bumps (each node's
    // payload counted once a visit), and what the GPU's add up to.
    std::vector<long long> bumped(total);
    long long total_before = 0, total_after = 0, gpu_before = 0, gpu_after = 0;
    for (int g = 0; g < total; g++) {
        bumped[g] = payload[g] + visits[g];
        total_before += visits[g] * payload[g];
        total_after += visits[g] * bumped[g];
    }
    for (int t = 0; t < walkers; t++) {
        gpu_before += sums[t];
        gpu_after += sums[walkers + t];
    }
    int totals_wrong = 0;
    if (gpu_before != total_before || gpu_after != total_after) {
        fprintf(stderr, "pointer_chase: sums of all walks %lld %lld; expected %lld %lld\n",
                gpu_before, gpu_after, total_before, total_after);
        totals_wrong++;
    }
    // Every end node as many times as walks end there.
    for (int t = 0; t < walkers; t++)
        if (last[t] >= 0 && last[t] < total)
            at[last[t]]--;
    for (int g = 0; g < total; g++)
        if (at[g] != 0) {
            fprintf(stderr,
                    "pointer_chase: node %d: the walks ending there, expected minus found: %d\n", g,
                    at[g]);
            totals_wrong++;
            break;
        }
    // The walks themselves: every one at SCALE 1, every s-th and the last above.
    std::vector<int> checked;
    for (int t = 0; t < walkers; t += scale)
        checked.push_back(t);
    if (checked.back() != walkers - 1)
        checked.push_back(walkers - 1);
    int wrong = 0;
    for (int t : checked) {
        int g = start[t];
        long long s = 0, s_after = 0;
        for (int h = 0; h < hops; h++, g = next[g]) {
            s += payload[g];
            s_after += bumped[g];
        }
        if ((sums[t] != s || sums[walkers + t] != s_after || last[t] != g) && wrong++ < 5)
            fprintf(stderr,
                    "pointer_chase: walker %d: sums %lld %lld, end %d; expected %lld %lld, %d\n", t,
                    sums[t], sums[walkers + t], last[t], s, s_after, g);
    }
    printf("pointer_chase: %d nodes in 3 buffers, %d walkers of %d hops, %d blocks\n", total,
           walkers, hops, blocks);
    printf("pointer_chase: sum of all walks after the bumps %lld\n", total_after);
    for (int b = 0; b < 3; b++)
        CHECK(cudaFree(d_buf[b]));
    CHECK(cudaFree(d_starts));
    CHECK(cudaFree(d_sums));
    CHECK(cudaFree(d_last));
    if (wrong || totals_wrong) {
        printf("pointer_chase: FAIL %d walkers wrong%s\n", wrong,
               totals_wrong ? ", sums or ends of all walks wrong" : "");
        return 1;
    }
    printf("pointer_chase: PASS\n");
    return 0;
}
