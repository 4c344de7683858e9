// bfs: breadth-first search over a CSR graph in the style of Rodinia's "bfs":
// one thread per node, boolean mask / updating-mask / visited arrays, Kernel
// expands the frontier and Kernel2 makes the next one and sets a device flag
// that the host copies back with cudaMemcpy every level, looping until no node
// changed. 100000 nodes with 1-6 mostly local edges each (fixed seed), 22
// levels. Under mgpu: two kernels of 196 blocks per level, a blocking copy
// after each pair, scattered byte stores across slices.
// SCALE s (optional argument, 1 to 100000): 100000 m nodes, where m = s up to
// s = 128 (12.8M nodes, about 45M edges, 25000 blocks); beyond, m = ceil(s / R)
// and the search runs R = ceil(s / 128) times over from the same start (its
// state copied in again), since the host side (graph, check) grows with the
// graph (and one 24-bit draw, a long edge's, reaches 2^24 nodes). At s > 1 the
// check is still whole and exact, but linear instead of a CPU BFS: the GPU's
// levels are checked to be the BFS levels (the source at 0, no edge from a
// reached node going more than one level down or to an unreached node, every
// other reached node with an edge from the level above).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <vector>
#include <cuda_runtime.h>

#include "program_check.h"

#define MAX_THREADS_PER_BLOCK 512

struct Node {
    int starting;
    int no_of_edges;
};

static uint32_t lcg_state = 4242u;
static uint32_t lcg()
{
    return (lcg_state = lcg_state * 1664525u + 1013904223u) >> 8;
}

__global__ void Kernel(const Node *g_graph_nodes, const int *g_graph_edges, bool *g_graph_mask,
                       bool *g_updating_graph_mask, const bool *g_graph_visited, int *g_cost,
                       int no_of_nodes)
{
    int tid = blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x;
    if (tid < no_of_nodes && g_graph_mask[tid]) {
        g_graph_mask[tid] = false;
        for (int i = g_graph_nodes[tid].starting;
             i < g_graph_nodes[tid].no_of_edges + g_graph_nodes[tid].starting; i++) {
            int id = g_graph_edges[i];
            if (!g_graph_visited[id]) {
                g_cost[id] = g_cost[tid] + 1;
                g_updating_graph_mask[id] = true;
            }
        }
    }
}

__global__ void Kernel2(bool *g_graph_mask, bool *g_updating_graph_mask, bool *g_graph_visited,
                        bool *g_over, int no_of_nodes)
{
    int tid = blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x;
    if (tid < no_of_nodes && g_updating_graph_mask[tid]) {
        g_graph_mask[tid] = true;
        g_graph_visited[tid] = true;
        *g_over = true;
        g_updating_graph_mask[tid] = false;
    }
}

int main(int argc, char **argv)
{
    const int scale = program_scale(argc, argv, "bfs", 100000);
    const int runs = (scale + 127) / 128, size_scale = (scale + runs - 1) / runs;
    const int no_of_nodes = 100000 * size_scale, source = 0;
    // Edges mostly to nodes within +-1000 (wrapping), one node in 500 with a
    // long edge anywhere.
    std::vector<Node> nodes(no_of_nodes);
    std::vector<int> edges;
    for (int v = 0; v < no_of_nodes; v++) {
        int degree = 1 + lcg() % 6;
        nodes[v].starting = (int)edges.size();
        nodes[v].no_of_edges = degree;
        for (int e = 0; e < degree; e++) {
            int to = lcg() % 500 == 0
                         ? (int)(lcg() % no_of_nodes)
                         : (v + (int)(lcg() % 2001) - 1000 + no_of_nodes) % no_of_nodes;
            edges.push_back(to);
        }
    }
    int edge_list_size = (int)edges.size();
    std::vector<char> mask(no_of_nodes, 0), visited(no_of_nodes, 0);
    std::vector<int> cost(no_of_nodes, -1);
    mask[source] = visited[source] = 1;
    cost[source] = 0;

    Node *d_graph_nodes;
    int *d_graph_edges, *d_cost;
    bool *d_graph_mask, *d_updating_graph_mask, *d_graph_visited, *d_over;
    CHECK(cudaMalloc(&d_graph_nodes, sizeof(Node) * no_of_nodes));
    CHECK(cudaMalloc(&d_graph_edges, sizeof(int) * edge_list_size));
    CHECK(cudaMalloc(&d_graph_mask, sizeof(bool) * no_of_nodes));
    CHECK(cudaMalloc(&d_updating_graph_mask, sizeof(bool) * no_of_nodes));
    CHECK(cudaMalloc(&d_graph_visited, sizeof(bool) * no_of_nodes));
    CHECK(cudaMalloc(&d_cost, sizeof(int) * no_of_nodes));
    CHECK(cudaMalloc(&d_over, sizeof(bool)));
    CHECK(cudaMemcpy(d_graph_nodes, nodes.data(), sizeof(Node) * no_of_nodes,
                     cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_graph_edges, edges.data(), sizeof(int) * edge_list_size,
                     cudaMemcpyHostToDevice));
    static_assert(sizeof(bool) == sizeof(char), "bool is one byte");
    int num_of_blocks = (no_of_nodes + MAX_THREADS_PER_BLOCK - 1) / MAX_THREADS_PER_BLOCK;
    int k = 0;
    for (int run = 0; run < runs; run++) {
        CHECK(cudaMemcpy(d_graph_mask, mask.data(), no_of_nodes, cudaMemcpyHostToDevice));
        CHECK(cudaMemset(d_updating_graph_mask, 0, no_of_nodes));
        CHECK(cudaMemcpy(d_graph_visited, visited.data(), no_of_nodes, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_cost, cost.data(), sizeof(int) * no_of_nodes, cudaMemcpyHostToDevice));

        k = 0;
        bool stop;
        do {
            stop = false;
            CHECK(cudaMemcpy(d_over, &stop, sizeof(bool), cudaMemcpyHostToDevice));
            Kernel<<<num_of_blocks, MAX_THREADS_PER_BLOCK>>>(d_graph_nodes, d_graph_edges,
                                                             d_graph_mask, d_updating_graph_mask,
                                                             d_graph_visited, d_cost, no_of_nodes);
            CHECK(cudaGetLastError());
            Kernel2<<<num_of_blocks, MAX_THREADS_PER_BLOCK>>>(d_graph_mask, d_updating_graph_mask,
                                                              d_graph_visited, d_over, no_of_nodes);
            CHECK(cudaGetLastError());
            CHECK(cudaMemcpy(&stop, d_over, sizeof(bool), cudaMemcpyDeviceToHost));
            k++;
        } while (stop && k <= no_of_nodes);
    }
    std::vector<int> h_cost(no_of_nodes);
    CHECK(cudaMemcpy(h_cost.data(), d_cost, sizeof(int) * no_of_nodes, cudaMemcpyDeviceToHost));

    int reached = 0, max_level = 0, wrong = 0;
    long long level_sum = 0;
    if (scale == 1) {
        // CPU reference: a queue-based BFS.
        std::vector<int> ref(no_of_nodes, -1);
        std::queue<int> q;
        ref[source] = 0;
        q.push(source);
        while (!q.empty()) {
            int v = q.front();
            q.pop();
            for (int i = nodes[v].starting; i < nodes[v].starting + nodes[v].no_of_edges; i++)
                if (ref[edges[i]] < 0) {
                    ref[edges[i]] = ref[v] + 1;
                    q.push(edges[i]);
                }
        }
        for (int v = 0; v < no_of_nodes; v++) {
            if (ref[v] >= 0) {
                reached++;
                level_sum += ref[v];
                max_level = ref[v] > max_level ? ref[v] : max_level;
            }
            if (h_cost[v] != ref[v] && wrong++ < 5)
                fprintf(stderr, "bfs: cost[%d] = %d, expected %d\n", v, h_cost[v], ref[v]);
        }
    } else {
        // The GPU's costs are the BFS levels if and only if the source has 0,
        // every edge from a reached node u goes to a reached node at most
        // cost[u] + 1, and every other reached node has an edge from a node
        // one level above it (a path of its length back to the source) and a
        // cost above 0; one pass over the edges in order.
        std::vector<char> has_parent(no_of_nodes, 0);
        for (int u = 0; u < no_of_nodes; u++) {
            const int cu = h_cost[u];
            if (cu < 0)
                continue;
            for (int i = nodes[u].starting; i < nodes[u].starting + nodes[u].no_of_edges; i++) {
                const int v = edges[i], cv = h_cost[v];
                if (cv == cu + 1)
                    has_parent[v] = 1;
                else if ((cv < 0 || cv > cu + 1) && wrong++ < 5)
                    fprintf(stderr, "bfs: cost[%d] = %d, cost[%d] = %d along an edge\n", u, cu, v,
                            cv);
            }
        }
        for (int v = 0; v < no_of_nodes; v++) {
            const int cv = h_cost[v];
            if (cv >= 0) {
                reached++;
                level_sum += cv;
                max_level = cv > max_level ? cv : max_level;
            }
            const bool good = v == source ? cv == 0 : cv == -1 || (cv > 0 && has_parent[v]);
            if (!good && wrong++ < 5)
                fprintf(stderr, "bfs: cost[%d] = %d, not reached from a node one level above\n", v,
                        cv);
        }
    }
    printf("bfs: %d nodes, %d edges, %d blocks\n", no_of_nodes, edge_list_size, num_of_blocks);
    printf("bfs: %d iterations, %d nodes reached, deepest level %d, level sum %lld\n", k, reached,
           max_level, level_sum);
    if (scale > 1)
        printf("bfs: SCALE %d: searches %d, every level checked\n", scale, runs);
    CHECK(cudaFree(d_graph_nodes));
    CHECK(cudaFree(d_graph_edges));
    CHECK(cudaFree(d_graph_mask));
    CHECK(cudaFree(d_updating_graph_mask));
    CHECK(cudaFree(d_graph_visited));
    CHECK(cudaFree(d_cost));
    CHECK(cudaFree(d_over));
    if (wrong || k != max_level + 1) {
        printf("bfs: FAIL %d costs wrong, %d iterations for %d levels\n", wrong, k, max_level + 1);
        return 1;
    }
    printf("bfs: PASS\n");
    return 0;
}
