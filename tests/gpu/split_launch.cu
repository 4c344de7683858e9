// Kernels that a split launch must run as one launch would, each checked
// against the host: 1D, 2D and 3D grids whose block counts do not divide
// by the GPU count, kernels that read blockIdx and gridDim, atomics and a
// last-block reduction across all blocks, a __device__ counter, a
// __constant__ table rewritten between launches, dynamic shared memory
// beyond 48 KiB, cudaLaunchKernelEx with attributes, streams, events, host
// functions and device printf. Prints one line per check and, in the
// `fault` modes, provokes an illegal address, which the next synchronising
// call or blocking copy must return; in `grid-stride` mode, times a loop
// of launches the cost model must not leave split. Built with nvcc; run
// plain and under mgpu-run, with the same output expected
// (tests/gpu-split-launch.sh).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

static int failures;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_));       \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

static void report(const char *what, bool ok)
{
    std::printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    if (!ok)
        failures++;
}

__global__ void add(const float *a, const float *b, float *c, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

// Writes each thread's global coordinates, so that any block offset or
// grid size a slice gets wrong shows.
__global__ void coordinates(unsigned *out)
{
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    unsigned w = gridDim.x * blockDim.x, h = gridDim.y * blockDim.y;
    out[(z * h + y) * w + x] = (x + 1) * 1000003u + (y + 1) * 1009u + (z + 1) * 7u +
                               gridDim.x * 31u + gridDim.y * 17u + gridDim.z;
}

__global__ void histogram(const unsigned char *data, size_t n, unsigned *bins)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(&bins[data[i]], 1u);
}

__device__ unsigned blocks_done;
__device__ unsigned long long launches_seen;

// Each block sums its part; the last block to finish adds the partial sums.
__global__ void last_block_sum(const unsigned *data, size_t n, unsigned long long *partial,
                               unsigned long long *total)
{
    __shared__ unsigned long long sum[256];
    __shared__ bool last;
    unsigned long long s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += data[i];
    sum[threadIdx.x] = s;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            sum[threadIdx.x] += sum[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sum[0];
        __threadfence();
        last = atomicInc(&blocks_done, gridDim.x - 1) == gridDim.x - 1; // wraps to 0
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        unsigned long long t = 0;
        for (unsigned b = 0; b < gridDim.x; b++)
            t += ((volatile unsigned long long *)partial)[b];
        *total = t;
        atomicAdd(&launches_seen, 1ull);
    }
}

__constant__ int table[64];

__global__ void from_table(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = table[i % 64] * (i + 1);
}

// Reverses each block's part through dynamic shared memory.
__global__ void reverse_in_shared(const int *in, int *out, int per_block)
{
    extern __shared__ int staged[];
    const int *src = in + (size_t)blockIdx.x * per_block;
    for (int i = threadIdx.x; i < per_block; i += blockDim.x)
        staged[i] = src[i];
    __syncthreads();
    for (int i = threadIdx.x; i < per_block; i += blockDim.x)
        out[(size_t)blockIdx.x * per_block + i] = staged[per_block - 1 - i];
}

__global__ void say_hello(int every)
{
    if (threadIdx.x == 0 && blockIdx.x % every == 0)
        printf("hello from block %d of %d\n", blockIdx.x, gridDim.x);
}

__global__ void poke(unsigned *out, size_t n, unsigned faulting_block)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x == faulting_block && threadIdx.x == 0)
        out[(size_t)1 << 40] = 1; // far outside any allocation
    else if (i < n)
        out[i] = 1;
}

// A grid-wide barrier: the launch cannot be split. Its two buffers are
// three 2 MiB pages each, two of which the distributed placement puts on
// the second GPU under -n 2 when every buffer is spread (MGPU_SPREAD_MIN=1),
// so mgpu runs it whole there (the report says "@1"); under -n 4 no GPU holds
// more than the home one.
__global__ void reverse_after_grid_sync(float *x, float *y, size_t n)
{
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (size_t i = grid.thread_rank(); i < n; i += grid.size())
        x[i] = (float)(i % 100003);
    grid.sync();
    for (size_t i = grid.thread_rank(); i < n; i += grid.size())
        y[i] = x[n - 1 - i] + 1.0f;
}

static void check_cooperative()
{
    size_t n = (size_t)3 << 19; // 6 MiB of floats
    float *x, *y;
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&y, n * 4));
    void *args[] = {&x, &y, &n};
    CHECK(cudaLaunchCooperativeKernel((const void *)reverse_after_grid_sync, dim3(64), dim3(256),
                                      args, 0, nullptr));
    std::vector<float> got(n);
    CHECK(cudaMemcpy(got.data(), y, n * 4, cudaMemcpyDeviceToHost));
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        ok = got[i] == (float)((n - 1 - i) % 100003) + 1.0f;
    report("cooperative launch with a grid-wide barrier", ok);
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
}

static void check_add()
{
    const size_t n = (size_t)64 << 20; // 256 MiB per array: spread over the GPUs
    std::vector<float> a(n), b(n), c(n);
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(i % 1000);
        b[i] = (float)(i % 77) * 0.5f;
    }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * 4));
    CHECK(cudaMalloc(&db, n * 4));
    CHECK(cudaMalloc(&dc, n * 4));
    CHECK(cudaMemcpy(da, a.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n * 4, cudaMemcpyHostToDevice));
    for (int r = 0; r < 3; r++) {
        CHECK(cudaMemset(dc, 0xff, n * 4));
        add<<<(unsigned)((n + 255) / 256), 256>>>(da, db, dc, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(c.data(), dc, n * 4, cudaMemcpyDeviceToHost));
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++)
            ok = c[i] == a[i] + b[i];
        report(r == 0 ? "vector add, 64 Mi elements" : "vector add again", ok);
    }
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
}

static void check_coordinates(dim3 grid, dim3 block, const char *what)
{
    size_t n = (size_t)grid.x * grid.y * grid.z * block.x * block.y * block.z;
    unsigned *d;
    CHECK(cudaMalloc(&d, n * 4));
    CHECK(cudaMemset(d, 0, n * 4));
    coordinates<<<grid, block>>>(d);
    CHECK(cudaGetLastError());
    std::vector<unsigned> got(n);
    CHECK(cudaMemcpy(got.data(), d, n * 4, cudaMemcpyDeviceToHost));
    unsigned w = grid.x * block.x, h = grid.y * block.y, depth = grid.z * block.z;
    bool ok = true;
    for (unsigned z = 0; z < depth && ok; z++)
        for (unsigned y = 0; y < h && ok; y++)
            for (unsigned x = 0; x < w && ok; x++)
                ok = got[((size_t)z * h + y) * w + x] ==
                     (x + 1) * 1000003u + (y + 1) * 1009u + (z + 1) * 7u + grid.x * 31u +
                         grid.y * 17u + grid.z;
    report(what, ok);
    CHECK(cudaFree(d));
}

static void check_atomics_and_reduction()
{
    const size_t n = (size_t)48 << 20;
    std::vector<unsigned char> bytes(n);
    std::vector<unsigned> expect(256, 0);
    for (size_t i = 0; i < n; i++) {
        bytes[i] = (unsigned char)((i * 2654435761u) >> 13);
        expect[bytes[i]]++;
    }
    unsigned char *dbytes;
    unsigned *bins;
    CHECK(cudaMalloc(&dbytes, n));
    CHECK(cudaMalloc(&bins, 256 * 4));
    CHECK(cudaMemcpy(dbytes, bytes.data(), n, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(bins, 0, 256 * 4));
    histogram<<<1000, 256>>>(dbytes, n, bins);
    CHECK(cudaGetLastError());
    std::vector<unsigned> got(256);
    CHECK(cudaMemcpy(got.data(), bins, 256 * 4, cudaMemcpyDeviceToHost));
    report("histogram with global atomics", got == expect);

    const size_t m = (size_t)16 << 20;
    std::vector<unsigned> values(m);
    unsigned long long want = 0;
    for (size_t i = 0; i < m; i++) {
        values[i] = (unsigned)(i % 100003);
        want += values[i];
    }
    unsigned *dvalues;
    unsigned long long *partial, *total;
    const unsigned blocks = 777;
    CHECK(cudaMalloc(&dvalues, m * 4));
    CHECK(cudaMalloc(&partial, blocks * 8));
    CHECK(cudaMalloc(&total, 8));
    CHECK(cudaMemcpy(dvalues, values.data(), m * 4, cudaMemcpyHostToDevice));
    bool ok = true;
    for (int r = 0; r < 4; r++) {
        CHECK(cudaMemset(total, 0, 8));
        last_block_sum<<<blocks, 256>>>(dvalues, m, partial, total);
        CHECK(cudaGetLastError());
        unsigned long long t = 0;
        CHECK(cudaMemcpy(&t, total, 8, cudaMemcpyDeviceToHost));
        ok = ok && t == want;
    }
    unsigned long long seen = 0;
    CHECK(cudaMemcpyFromSymbol(&seen, launches_seen, 8));
    report("last-block reduction, 4 launches", ok);
    report("__device__ counter saw 4 last blocks", seen == 4);
    CHECK(cudaFree(dbytes));
    CHECK(cudaFree(bins));
    CHECK(cudaFree(dvalues));
    CHECK(cudaFree(partial));
    CHECK(cudaFree(total));
}

static void check_constants()
{
    const int n = 1 << 22;
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    std::vector<int> got(n);
    bool ok = true;
    for (int round = 0; round < 3; round++) {
        int t[64];
        for (int i = 0; i < 64; i++)
            t[i] = i * 3 + round * 1000;
        CHECK(cudaMemcpyToSymbol(table, t, sizeof t));
        from_table<<<(n + 255) / 256, 256>>>(d, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < n && ok; i++)
            ok = got[i] == t[i % 64] * (i + 1);
    }
    report("__constant__ table rewritten between launches", ok);
    CHECK(cudaFree(d));
}

static void check_dynamic_shared_and_launch_ex()
{
    const int per_block = 20000; // 80000 bytes of dynamic shared memory
    const int blocks = 300;
    size_t n = (size_t)per_block * blocks;
    std::vector<int> in(n), out(n);
    for (size_t i = 0; i < n; i++)
        in[i] = (int)(i * 7 + 3);
    int *din, *dout;
    CHECK(cudaMalloc(&din, n * 4));
    CHECK(cudaMalloc(&dout, n * 4));
    CHECK(cudaMemcpy(din, in.data(), n * 4, cudaMemcpyHostToDevice));
    size_t shared = per_block * sizeof(int);
    CHECK(cudaFuncSetAttribute(reverse_in_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               (int)shared));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(256);
    config.dynamicSmemBytes = shared;
    config.stream = stream;
    cudaLaunchAttribute attrs[1];
    attrs[0].id = cudaLaunchAttributePriority;
    attrs[0].val.priority = 0;
    config.attrs = attrs;
    config.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&config, reverse_in_shared, (const int *)din, dout, per_block));
    CHECK(cudaMemcpyAsync(out.data(), dout, n * 4, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    bool ok = true;
    for (int b = 0; b < blocks && ok; b++)
        for (int i = 0; i < per_block && ok; i++)
            ok = out[(size_t)b * per_block + i] == in[(size_t)b * per_block + per_block - 1 - i];
    report("80 KB dynamic shared memory through cudaLaunchKernelEx", ok);
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
}

struct host_check {
    const float *host;
    size_t n;
    float want;
    bool ok;
};

static void CUDART_CB look_at_result(void *p)
{
    host_check *h = (host_check *)p;
    h->ok = true;
    for (size_t i = 0; i < h->n && h->ok; i++)
        h->ok = h->host[i] == h->want;
}

__global__ void fill(float *x, size_t n, float v)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = v;
}

// Two streams ordered through an event, a host function after a copy,
// stream queries and elapsed time.
static void check_streams_and_events()
{
    const size_t n = (size_t)32 << 20;
    float *x, *y, *host;
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&y, n * 4));
    CHECK(cudaMallocHost(&host, n * 4));
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithPriority(&s2, cudaStreamNonBlocking, -1));
    cudaEvent_t filled, start, stop;
    CHECK(cudaEventCreate(&filled));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    unsigned blocks = (unsigned)((n + 255) / 256);
    CHECK(cudaEventRecord(start, s1));
    fill<<<blocks, 256, 0, s1>>>(x, n, 3.0f);
    CHECK(cudaEventRecord(filled, s1));
    CHECK(cudaStreamWaitEvent(s2, filled, 0));
    add<<<blocks, 256, 0, s2>>>(x, x, y, n);
    CHECK(cudaMemcpyAsync(host, y, n * 4, cudaMemcpyDeviceToHost, s2));
    host_check h = {host, n, 6.0f, false};
    CHECK(cudaLaunchHostFunc(s2, look_at_result, &h));
    CHECK(cudaEventRecord(stop, s2));
    CHECK(cudaEventSynchronize(stop));
    report("event between streams, then a host function sees the result", h.ok);
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    report("elapsed time between the streams' events", ms > 0);
    report("streams idle after the event", cudaStreamQuery(s1) == cudaSuccess &&
                                               cudaStreamQuery(s2) == cudaSuccess);
    // The legacy default stream waits for the earlier work of blocking streams.
    fill<<<blocks, 256>>>(x, n, 5.0f);
    add<<<blocks, 256>>>(x, x, y, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(host, y, n * 4, cudaMemcpyDeviceToHost));
    h = {host, n, 10.0f, false};
    look_at_result(&h);
    report("legacy default stream in order", h.ok);
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaFreeHost(host));
}

// An illegal address in the grid's last block (the last GPU's slice), in
// the middle of part `part` of `parts` equal parts of the grid (GPU
// `part`'s slice of `parts`), or in its first block (the home GPU's)
// followed by one more launch that queues behind the fault: the
// synchronisation returns the fault and the program ends, on every GPU.
static int fault(bool in_first_block, unsigned part = 0, unsigned parts = 0)
{
    const size_t n = (size_t)1 << 24;
    const unsigned blocks = (unsigned)(n / 256);
    unsigned *d;
    CHECK(cudaMalloc(&d, n * 4));
    unsigned faulting = in_first_block ? 0 : blocks - 1;
    if (parts > 0)
        faulting = blocks / parts * part + blocks / parts / 2;
    poke<<<blocks, 256>>>(d, n, faulting);
    cudaError_t launched = cudaGetLastError();
    if (in_first_block)
        poke<<<blocks, 256>>>(d, n, blocks);
    cudaError_t synced = cudaDeviceSynchronize();
    if (in_first_block)
        launched = cudaSuccess; // the second launch may or may not see the fault yet
    std::printf("launch: %s, synchronize: %s\n", cudaGetErrorName(launched),
                cudaGetErrorName(synced));
    return synced == cudaSuccess ? 1 : 0;
}

// y += x with a grid-stride loop: each block's elements lie all over the
// array, so split over GPUs it reads and writes mostly remote memory.
__global__ void add_strided(const float *x, float *y, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] += x[i];
}

// A loop of grid-stride launches of `blocks` blocks, queued back to back
// as a benchmark loop does: prints the result's checksum on stdout and the
// time per launch on stderr (tests/gpu-split-launch.sh compares it with
// the plain run's: the cost model must not leave such a kernel split).
static int grid_stride(unsigned blocks)
{
    const size_t n = (size_t)1 << 27;
    const int launches = 60;
    std::vector<float> host(n);
    for (size_t i = 0; i < n; i++)
        host[i] = (float)(i % 13 + 1);
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    add_strided<<<blocks, 256>>>(x, y, n); // warm-up
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaEventRecord(start));
    for (int l = 0; l < launches; l++)
        add_strided<<<blocks, 256>>>(x, y, n);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    CHECK(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    unsigned long long wrong = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        wrong += host[i] != (float)((launches + 1) * (i % 13 + 1)); // exact below 2^24
        sum += (unsigned long long)host[i];
    }
    std::printf("grid-stride, %u blocks: %s, sum %llu\n", blocks, wrong ? "FAIL" : "PASS", sum);
    std::fprintf(stderr, "grid-stride ms per launch: %.4f\n", ms / launches);
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    return wrong ? 1 : 0;
}

// An illegal address in the last GPU's slice, then blocking copies of a
// part of the buffer that lies on the home GPU, without a synchronisation:
// the driver returns the fault from the first blocking copy, and from
// every call after it. A 2D copy first, then a plain one.
static int fault_then_copy()
{
    const size_t n = (size_t)1 << 24;
    const unsigned blocks = (unsigned)(n / 256);
    unsigned *d, host[64];
    CHECK(cudaMalloc(&d, n * 4));
    poke<<<blocks, 256>>>(d, n, blocks - 1);
    cudaError_t launched = cudaGetLastError();
    cudaError_t copied_2d =
        cudaMemcpy2D(host, 16, d, 64, 16, 4, cudaMemcpyDeviceToHost);
    cudaError_t copied = cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
    std::printf("launch: %s, 2D copy: %s, copy: %s\n", cudaGetErrorName(launched),
                cudaGetErrorName(copied_2d), cudaGetErrorName(copied));
    return copied_2d == cudaSuccess || copied == cudaSuccess ? 1 : 0;
}

// Blocks that each spin for `cycles` clock cycles, then mark themselves.
__global__ void spin(long long cycles, unsigned *marks)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    if (threadIdx.x == 0)
        marks[blockIdx.x] = 1;
}

__global__ void add_one(unsigned *x, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += 1;
}

// A graph captured in global mode on one stream while a split launch of
// milliseconds runs on another, ten times: mgpu's own threads (the slice
// watch asks the slice streams every millisecond meanwhile) must neither
// fail nor invalidate the capture. Prints "capture: PASS" when every
// capture ended and its graph ran right.
static int capture_during_slices()
{
    const unsigned blocks = 1024, n = 1 << 20;
    unsigned *marks, *x;
    CHECK(cudaMalloc(&marks, blocks * 4));
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMemset(x, 0, n * 4));
    cudaStream_t busy, captured;
    CHECK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&captured, cudaStreamNonBlocking));
    int clock_khz = 0;
    CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    long long cycles = (long long)clock_khz * 5; // 5 ms
    int failed = 0;
    for (int round = 0; round < 10; round++) {
        spin<<<blocks, 256, 0, busy>>>(cycles, marks);
        CHECK(cudaGetLastError());
        cudaGraph_t graph;
        CHECK(cudaStreamBeginCapture(captured, cudaStreamCaptureModeGlobal));
        add_one<<<n / 256, 256, 0, captured>>>(x, n);
        struct timespec pause = {0, 3000000};
        nanosleep(&pause, nullptr);
        cudaError_t ended = cudaStreamEndCapture(captured, &graph);
        if (ended != cudaSuccess) {
            std::printf("capture: round %d: cudaStreamEndCapture: %s\n", round,
                        cudaGetErrorName(ended));
            failed++;
            cudaGetLastError();
            continue;
        }
        cudaGraphExec_t exec;
        CHECK(cudaGraphInstantiate(&exec, graph, 0));
        CHECK(cudaGraphLaunch(exec, captured));
        CHECK(cudaStreamSynchronize(captured));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(graph));
    }
    CHECK(cudaDeviceSynchronize());
    std::vector<unsigned> got(n);
    CHECK(cudaMemcpy(got.data(), x, n * 4, cudaMemcpyDeviceToHost));
    unsigned want = (unsigned)(10 - failed);
    for (unsigned i = 0; i < n && !failed; i++)
        failed += got[i] != want;
    std::printf("%s\n", failed ? "capture: FAIL" : "capture: PASS");
    CHECK(cudaFree(marks));
    CHECK(cudaFree(x));
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    if (std::strcmp(mode, "fault") == 0 || std::strcmp(mode, "fault-home") == 0)
        return fault(std::strcmp(mode, "fault-home") == 0);
    if (std::strcmp(mode, "fault-copy") == 0)
        return fault_then_copy();
    if (std::strcmp(mode, "fault-slice") == 0 && argc > 3) {
        unsigned part = (unsigned)std::strtoul(argv[2], nullptr, 10);
        unsigned parts = (unsigned)std::strtoul(argv[3], nullptr, 10);
        if (parts > 0 && part < parts)
            return fault(false, part, parts);
    }
    if (std::strcmp(mode, "grid-stride") == 0 && argc > 2)
        return grid_stride((unsigned)std::strtoul(argv[2], nullptr, 10));
    if (std::strcmp(mode, "capture") == 0)
        return capture_during_slices();
    if (std::strcmp(mode, "printf") == 0) {
        say_hello<<<64, 32>>>(8);
        CHECK(cudaDeviceSynchronize());
        std::printf("printf: synchronised\n");
        return 0;
    }
    if (std::strcmp(mode, "all") != 0) {
        std::fprintf(stderr, "usage: split_launch [all|printf|capture|fault|fault-home|fault-copy|fault-slice PART PARTS|grid-stride BLOCKS]\n");
        return 2;
    }
    check_add();
    check_coordinates(dim3(1001), dim3(128), "1D grid of 1001 blocks");
    check_coordinates(dim3(37, 203), dim3(16, 8), "2D grid 37x203");
    check_coordinates(dim3(9, 11, 13), dim3(8, 4, 2), "3D grid 9x11x13");
    check_coordinates(dim3(5000, 1), dim3(64), "5000x1 grid");
    check_coordinates(dim3(3), dim3(32), "3 blocks");
    check_atomics_and_reduction();
    check_constants();
    check_dynamic_shared_and_launch_ex();
    check_streams_and_events();
    check_cooperative();
    std::printf("%s\n", failures ? "split_launch: FAIL" : "split_launch: PASS");
    return failures ? 1 : 0;
}
