// One program per coherence rule of mirror/README.md: a table every slice of
// a split kernel reads (so, under MGPU_MIRROR=always, from a replica), then
// the table written one way, then read again: the second read must see the
// write. Run as `mirror_coherence MODE` by tests/gpu-mirror-coherence.sh,
// plainly and under mgpu-run; prints "mirror_coherence: MODE PASS".
// Modes: htod htod_async dtod dtod_async peer peer_async memset memset_async
// memset2d memset2d_async copy2d copy2d_async copy3d kernel_store
// kernel_atomic kernel_unknown graph write_value batch_mem_op free_realloc
// free_async_realloc other_stream nccl_program (the program has NCCL loaded
// before its first read and broadcasts into the table with it: NCCL's
// calls bypass mgpu's hooks, so mgpu must not mirror at all); nccl_late
// (the same, NCCL loaded only after the first, mirrored, read: after mgpu
// loaded NCCL for its own refreshes, the program gets the same library); evict (three
// tables read in turn behind a slow kernel, twice, with room for two
// copies per GPU: each read makes a copy by evicting one whose read may
// still be queued, and must see its own table).
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cu_check.h"

static const unsigned N = 1u << 22; // table entries and gather outputs: 16 MiB each
static const unsigned STRIDE = 7919u; // odd: i * STRIDE mod N visits every entry
static const unsigned THREADS = 256;
static const char *mode = "";

extern "C" __global__ void gather(const unsigned *table, unsigned *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = table[(unsigned)(((unsigned long long)i * STRIDE) % n)] + i;
}

extern "C" __global__ void fill(unsigned *p, unsigned value, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = value + i;
}

extern "C" __global__ void bump(unsigned *p, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&p[i], 1000u);
}

// Stores through a pointer it loads from memory: of unknown origin to mgpu.
extern "C" __global__ void store_via(unsigned *const *where, unsigned value, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned *p = where[0];
    if (i < n)
        p[i] = value + i;
}

extern "C" __global__ void spin(unsigned long long cycles)
{
    unsigned long long start = clock64();
    while (clock64() - start < cycles)
        ;
}

static void launch(const void *kernel, void **args, CUstream s)
{
    CU(cuLaunchKernel(cu_kernel(kernel), (N + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, s, args,
                      NULL));
}

static void gather_into(CUdeviceptr table, CUdeviceptr out, CUstream s)
{
    unsigned n = N;
    void *args[] = {&table, &out, &n};
    launch((const void *)gather, args, s);
}

// out must be what gather makes of `want`.
static void expect(CUdeviceptr out, const std::vector<unsigned> &want, const char *when)
{
    std::vector<unsigned> got(N);
    CU(cuCtxSynchronize());
    CU(cuMemcpyDtoH(got.data(), out, (size_t)N * 4));
    for (unsigned i = 0; i < N; i++) {
        unsigned expected = want[(unsigned)(((unsigned long long)i * STRIDE) % N)] + i;
        if (got[i] != expected) {
            printf("mirror_coherence: %s FAIL: %s, out[%u] is %u, not %u\n", mode, when, i, got[i],
                   expected);
            exit(1);
        }
    }
}

typedef ncclResult_t (*nccl_broadcast_fn)(const void *, void *, size_t, ncclDataType_t, int,
                                          ncclComm_t, cudaStream_t);
static nccl_broadcast_fn nccl_broadcast;
static ncclComm_t nccl_comm;

static bool is(const char *m)
{
    return strcmp(mode, m) == 0;
}

// The program's own NCCL: loaded, a communicator of one rank made.
static bool open_nccl(CUcontext ctx)
{
    void *lib = dlopen("libnccl.so.2", RTLD_NOW);
    auto init_all = lib ? (ncclResult_t(*)(ncclComm_t *, int, const int *))dlsym(
                              lib, "ncclCommInitAll")
                        : nullptr;
    nccl_broadcast = lib ? (nccl_broadcast_fn)dlsym(lib, "ncclBroadcast") : nullptr;
    int device = 0;
    if (init_all == nullptr || nccl_broadcast == nullptr ||
        init_all(&nccl_comm, 1, &device) != ncclSuccess) {
        printf("mirror_coherence: %s FAIL: libnccl.so.2 not usable\n", mode);
        return false;
    }
    CU(cuCtxSetCurrent(ctx));
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mirror_coherence MODE (see the source)\n");
        return 2;
    }
    mode = argv[1];
    cu_check_program = "mirror_coherence";
    cu_check_mode = mode;
    cudaFree(0);
    CUcontext ctx;
    CU(cuCtxGetCurrent(&ctx));
    CUstream s, other;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    size_t bytes = (size_t)N * 4;
    CUdeviceptr table, out, source, where;
    CU(cuMemAlloc(&table, bytes));
    CU(cuMemAlloc(&out, bytes));
    CU(cuMemAlloc(&source, bytes));
    CU(cuMemAlloc(&where, sizeof(CUdeviceptr)));
    unsigned *pinned;
    CU(cuMemAllocHost((void **)&pinned, bytes));

    std::vector<unsigned> before(N), after(N);
    for (unsigned j = 0; j < N; j++) {
        before[j] = 3u * j;
        after[j] = 5u * j + 1;
    }
    CU(cuMemcpyHtoD(table, before.data(), bytes));
    CU(cuMemcpyHtoD(source, after.data(), bytes));
    memcpy(pinned, after.data(), bytes);

    if (is("other_stream")) {
        // The first read on `s` behind a slow kernel makes the replicas; a read
        // on `other`, not ordered after it by the program, must still see the
        // table, not a replica being filled.
        unsigned long long cycles = 200000000ull;
        void *spin_args[] = {&cycles};
        CU(cuLaunchKernel(cu_kernel((const void *)spin), 1, 1, 1, 1, 1, 1, 0, s, spin_args, NULL));
        gather_into(table, out, s);
        gather_into(table, source, other);
        expect(out, before, "read on the first stream");
        expect(source, before, "read on another stream at once");
        printf("mirror_coherence: %s PASS\n", mode);
        return 0;
    }

    if (is("evict")) {
        std::vector<unsigned> third_values(N);
        for (unsigned j = 0; j < N; j++)
            third_values[j] = 7u * j + 2;
        CUdeviceptr third, outs[3] = {out, 0, 0};
        CU(cuMemAlloc(&third, bytes));
        CU(cuMemAlloc(&outs[1], bytes));
        CU(cuMemAlloc(&outs[2], bytes));
        CU(cuMemcpyHtoD(third, third_values.data(), bytes));
        const CUdeviceptr tables[3] = {table, source, third};
        const std::vector<unsigned> *values[3] = {&before, &after, &third_values};
        for (int round = 0; round < 2; round++) {
            unsigned long long cycles = 100000000ull;
            void *spin_args[] = {&cycles};
            CU(cuLaunchKernel(cu_kernel((const void *)spin), 1, 1, 1, 1, 1, 1, 0, s, spin_args, NULL));
            for (int t = 0; t < 3; t++)
                gather_into(tables[t], outs[t], s);
            for (int t = 0; t < 3; t++)
                expect(outs[t], *values[t], round == 0 ? "first reads" : "second reads");
        }
        printf("mirror_coherence: %s PASS\n", mode);
        return 0;
    }

    if (is("nccl_program") && !open_nccl(ctx))
        return 1;
    gather_into(table, out, s);
    expect(out, before, "first read");
    if (is("nccl_late") && !open_nccl(ctx))
        return 1;

    unsigned value = 0;
    if (is("htod")) {
        CU(cuMemcpyHtoD(table, after.data(), bytes));
    } else if (is("htod_async")) {
        CU(cuMemcpyHtoDAsync(table, pinned, bytes, s));
    } else if (is("dtod")) {
        CU(cuMemcpyDtoD(table, source, bytes));
    } else if (is("dtod_async")) {
        CU(cuMemcpyDtoDAsync(table, source, bytes, s));
    } else if (is("peer")) {
        CU(cuMemcpyPeer(table, ctx, source, ctx, bytes));
    } else if (is("peer_async")) {
        CU(cuMemcpyPeerAsync(table, ctx, source, ctx, bytes, s));
    } else if (is("memset") || is("memset_async") || is("memset2d") || is("memset2d_async")) {
        value = 77;
        for (unsigned j = 0; j < N; j++)
            after[j] = value;
        size_t row = bytes / 4;
        if (is("memset"))
            CU(cuMemsetD32(table, value, N));
        else if (is("memset_async"))
            CU(cuMemsetD32Async(table, value, N, s));
        else if (is("memset2d"))
            CU(cuMemsetD2D32(table, row, value, row / 4, 4));
        else
            CU(cuMemsetD2D32Async(table, row, value, row / 4, 4, s));
    } else if (is("copy2d") || is("copy2d_async")) {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = pinned;
        c.srcPitch = bytes / 8;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = table;
        c.dstPitch = bytes / 8;
        c.WidthInBytes = bytes / 8;
        c.Height = 8;
        if (is("copy2d"))
            CU(cuMemcpy2D(&c));
        else
            CU(cuMemcpy2DAsync(&c, s));
    } else if (is("copy3d")) {
        CUDA_MEMCPY3D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = pinned;
        c.srcPitch = bytes / 8;
        c.srcHeight = 4;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = table;
        c.dstPitch = bytes / 8;
        c.dstHeight = 4;
        c.WidthInBytes = bytes / 8;
        c.Height = 4;
        c.Depth = 2;
        CU(cuMemcpy3D(&c));
    } else if (is("kernel_store") || is("kernel_unknown") || is("graph")) {
        value = is("kernel_store") ? 5 : is("kernel_unknown") ? 9 : 11;
        for (unsigned j = 0; j < N; j++)
            after[j] = value + j;
        unsigned n = N;
        if (is("kernel_unknown")) {
            CU(cuMemcpyHtoD(where, &table, sizeof table));
            void *args[] = {&where, &value, &n};
            launch((const void *)store_via, args, s);
        } else if (is("kernel_store")) {
            void *args[] = {&table, &value, &n};
            launch((const void *)fill, args, s);
        } else {
            CUgraph graph;
            CUgraphExec exec;
            CU(cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_RELAXED));
            void *args[] = {&table, &value, &n};
            launch((const void *)fill, args, other);
            CU(cuStreamEndCapture(other, &graph));
            CU(cuGraphInstantiate(&exec, graph, 0));
            CU(cuGraphLaunch(exec, s));
        }
    } else if (is("kernel_atomic")) {
        for (unsigned j = 0; j < N; j++)
            after[j] = before[j] + 1000u;
        unsigned n = N;
        void *args[] = {&table, &n};
        launch((const void *)bump, args, s);
    } else if (is("write_value") || is("batch_mem_op")) {
        after = before;
        const unsigned words[] = {0, 1, N / 2, N - 1};
        for (unsigned w : words) {
            after[w] = 0xabc00000u + w;
            CUdeviceptr at = table + (CUdeviceptr)w * 4;
            if (is("write_value")) {
                CU(cuStreamWriteValue32(s, at, after[w], CU_STREAM_WRITE_VALUE_DEFAULT));
            } else {
                CUstreamBatchMemOpParams op;
                memset(&op, 0, sizeof op);
                op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
                op.writeValue.address = at;
                op.writeValue.value = after[w];
                CU(cuStreamBatchMemOp(s, 1, &op, 0));
            }
        }
    } else if (is("free_realloc") || is("free_async_realloc")) {
        // A new buffer, at the freed one's address where the pool reuses it.
        CU(cuCtxSynchronize());
        if (is("free_realloc")) {
            CU(cuMemFree(table));
            CU(cuMemAlloc(&table, bytes));
            CU(cuMemcpyHtoD(table, after.data(), bytes));
        } else {
            CU(cuMemFreeAsync(table, s));
            CU(cuMemAllocAsync(&table, bytes, s));
            CU(cuMemcpyHtoDAsync(table, pinned, bytes, s));
        }
    } else if (is("nccl_program") || is("nccl_late")) {
        if (nccl_broadcast((const void *)source, (void *)table, bytes, ncclUint8, 0, nccl_comm,
                           s) != ncclSuccess) {
            printf("mirror_coherence: %s FAIL: ncclBroadcast refused\n", mode);
            return 1;
        }
        CU(cuCtxSetCurrent(ctx));
    } else {
        printf("mirror_coherence: unknown mode %s\n", mode);
        return 2;
    }
    gather_into(table, out, s);
    expect(out, after, "read after the write");
    printf("mirror_coherence: %s PASS\n", mode);
    return 0;
}
