// fork_join_floor: what the driver alone charges the host for one launch
// cut into S slices on one GPU, with no mgpu in the process: the ways a
// split launch can be queued in one context, each timed over N launches of
// an empty kernel (1024 blocks in all) on the host clock, per launch:
//   flags   the program's stream writes a fork flag, each of S-1 other
//           streams waits for it, launches its slice and writes its join
//           flag, the program's stream launches its own slice and waits for
//           the joins in one batch (what mgpu does with MGPU_FORK_JOIN=flags)
//   events  the same with a fork event and one join event per stream
//   one stream  the S slices launched one after another in the program's
//           stream: no fork or join at all, the least any mechanism that
//           launches every slice from the host can cost
//   graph   one executable graph of S kernel nodes, each node's parameters
//           set again before every launch of the graph
// Prints a Markdown table, one column per S.
//   fork_join_floor [N=5000] [S...=2 4 8]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>

#define CU(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorString(r_, &s_);                                                             \
            std::fprintf(stderr, "fork_join_floor: %s failed: %s\n", #call, s_);                   \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

__global__ void empty_kernel(int *never_written)
{
    if (never_written != nullptr && blockIdx.x > gridDim.x)
        *never_written = 1;
}

static double seconds_now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

enum { MAX_SLICES = 8, TOTAL_BLOCKS = 1024 };

struct slices {
    int count;
    CUfunction fn;
    CUstream program; // the legacy default stream, as in split_launch_cost
    CUstream streams[MAX_SLICES];
    CUdeviceptr flags;
    CUevent fork, joins[MAX_SLICES];
    void *args[1];
    int *never_written;
};

static void launch(const slices &s, CUstream stream)
{
    CU(cuLaunchKernel(s.fn, TOTAL_BLOCKS / s.count, 1, 1, 128, 1, 1, 0, stream,
                      const_cast<void **>(s.args), nullptr));
}

static void with_flags(const slices &s, unsigned sequence)
{
    CU(cuStreamWriteValue32(s.program, s.flags, sequence, CU_STREAM_WRITE_VALUE_DEFAULT));
    CUstreamBatchMemOpParams waits[MAX_SLICES];
    std::memset(waits, 0, sizeof waits);
    for (int g = 1; g < s.count; g++) {
        CUdeviceptr join = s.flags + g * sizeof(unsigned);
        CU(cuStreamWaitValue32(s.streams[g], s.flags, sequence, CU_STREAM_WAIT_VALUE_GEQ));
        launch(s, s.streams[g]);
        CU(cuStreamWriteValue32(s.streams[g], join, sequence, CU_STREAM_WRITE_VALUE_DEFAULT));
        waits[g - 1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        waits[g - 1].waitValue.address = join;
        waits[g - 1].waitValue.value = sequence;
        waits[g - 1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    }
    launch(s, s.program);
    if (s.count > 1)
        CU(cuStreamBatchMemOp(s.program, s.count - 1, waits, 0));
}

static void with_events(const slices &s, unsigned)
{
    CU(cuEventRecord(s.fork, s.program));
    for (int g = 1; g < s.count; g++) {
        CU(cuStreamWaitEvent(s.streams[g], s.fork, 0));
        launch(s, s.streams[g]);
        CU(cuEventRecord(s.joins[g], s.streams[g]));
    }
    launch(s, s.program);
    for (int g = 1; g < s.count; g++)
        CU(cuStreamWaitEvent(s.program, s.joins[g], 0));
}

static void in_one_stream(const slices &s, unsigned)
{
    for (int g = 0; g < s.count; g++)
        launch(s, s.program);
}

// Host microseconds per launch of `queue_one` over n launches, the final
// synchronisation included.
static double per_launch_us(const slices &s, int n, void (*queue_one)(const slices &, unsigned))
{
    static unsigned sequence;
    for (int i = 0; i < 100; i++)
        queue_one(s, ++sequence);
    CU(cuCtxSynchronize());
    double start = seconds_now();
    for (int i = 0; i < n; i++)
        queue_one(s, ++sequence);
    CU(cuCtxSynchronize());
    return (seconds_now() - start) * 1e6 / n;
}

static double graph_per_launch_us(const slices &s, int n)
{
    CUgraph graph;
    CU(cuGraphCreate(&graph, 0));
    CUDA_KERNEL_NODE_PARAMS node_params;
    std::memset(&node_params, 0, sizeof node_params);
    node_params.func = s.fn;
    node_params.gridDimX = TOTAL_BLOCKS / s.count;
    node_params.gridDimY = node_params.gridDimZ = 1;
    node_params.blockDimX = 128;
    node_params.blockDimY = node_params.blockDimZ = 1;
    node_params.kernelParams = const_cast<void **>(s.args);
    CUgraphNode nodes[MAX_SLICES];
    for (int g = 0; g < s.count; g++)
        CU(cuGraphAddKernelNode(&nodes[g], graph, nullptr, 0, &node_params));
    CUgraphExec exec;
    CU(cuGraphInstantiate(&exec, graph, 0));
    double start = 0;
    for (int i = -100; i < n; i++) {
        if (i == 0) {
            CU(cuCtxSynchronize());
            start = seconds_now();
        }
        for (int g = 0; g < s.count; g++)
            CU(cuGraphExecKernelNodeSetParams(exec, nodes[g], &node_params));
        CU(cuGraphLaunch(exec, s.program));
    }
    CU(cuCtxSynchronize());
    double us = (seconds_now() - start) * 1e6 / n;
    CU(cuGraphExecDestroy(exec));
    CU(cuGraphDestroy(graph));
    return us;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 5000;
    int counts[8] = {2, 4, 8}, ncounts = 3;
    if (argc > 2) {
        ncounts = 0;
        for (int i = 2; i < argc && ncounts < 8; i++)
            counts[ncounts++] = std::atoi(argv[i]);
    }
    for (int i = 0; i < ncounts; i++)
        if (counts[i] < 1 || counts[i] > MAX_SLICES || n <= 0) {
            std::fprintf(stderr, "usage: fork_join_floor [launches > 0] [slices 1 to %d ...]\n",
                         MAX_SLICES);
            return 2;
        }
    if (cudaFree(nullptr) != cudaSuccess) {
        std::fprintf(stderr, "fork_join_floor: no GPU\n");
        return 1;
    }
    slices s;
    std::memset(&s, 0, sizeof s);
    if (cudaGetFuncBySymbol(&s.fn, (const void *)empty_kernel) != cudaSuccess) {
        std::fprintf(stderr, "fork_join_floor: the kernel cannot be found\n");
        return 1;
    }
    s.args[0] = &s.never_written;
    for (int g = 1; g < MAX_SLICES; g++) {
        CU(cuStreamCreate(&s.streams[g], CU_STREAM_NON_BLOCKING));
        CU(cuEventCreate(&s.joins[g], CU_EVENT_DISABLE_TIMING));
    }
    CU(cuEventCreate(&s.fork, CU_EVENT_DISABLE_TIMING));
    CU(cuMemAlloc(&s.flags, MAX_SLICES * sizeof(unsigned)));
    CU(cuMemsetD8(s.flags, 0, MAX_SLICES * sizeof(unsigned)));

    double table[4][8];
    for (int i = 0; i < ncounts; i++) {
        s.count = counts[i];
        table[0][i] = per_launch_us(s, n, with_flags);
        table[1][i] = per_launch_us(s, n, with_events);
        table[2][i] = per_launch_us(s, n, in_one_stream);
        table[3][i] = graph_per_launch_us(s, n);
    }
    const char *rows[4] = {"flags", "events", "one stream, no fork or join", "graph of the slices"};
    std::printf("fork_join_floor: host µs per launch of %d blocks cut into S slices on one GPU, "
                "%d launches, driver only\n\n| S |",
                (int)TOTAL_BLOCKS, n);
    for (int i = 0; i < ncounts; i++)
        std::printf(" %d |", counts[i]);
    std::printf("\n| --- |");
    for (int i = 0; i < ncounts; i++)
        std::printf(" --- |");
    std::printf("\n");
    for (int r = 0; r < 4; r++) {
        std::printf("| %s |", rows[r]);
        for (int i = 0; i < ncounts; i++)
            std::printf(" %.2f |", table[r][i]);
        std::printf("\n");
    }
    return 0;
}
