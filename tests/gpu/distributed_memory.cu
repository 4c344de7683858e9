// Device memory as a CUDA runtime program sees it, to run plainly and under
// mgpu-run, where every allocation on device 0 has one address on all GPUs and
// its 2 MiB granules are spread over them (mirror/). Under mgpu the results
// must be those of a plain run: the same data, pointer attributes and errors.
// One mode per run; each prints "distributed_memory MODE: PASS", or a
// "FAIL: ..." line and exits 1:
//   write-read          a kernel on device 0 writes 64 MiB; every device reads
//                       it through the same pointer and checksums it
//   pointer-attrs       every CUpointer_attribute, cuPointerGetAttributes,
//                       cuMemGetAddressRange and cudaPointerGetAttributes for
//                       several allocations, normalised so that runs diff
//   pitched-2d          cudaMallocPitch, cudaMemcpy2D both ways and between
//                       two pitched allocations, a kernel indexing by pitch
//   oversubscribe BYTES one buffer larger than one GPU, written and checked;
//                       exits 2 when it cannot be allocated
//   many-small          100000 buffers of 1..4096 bytes live at once
//   errors              the error codes of bad frees and impossible requests
//   copies              cudaMemcpy/cudaMemset of a 200 MiB buffer: pageable,
//                       pinned, async in stream order, unaligned ranges,
//                       device to device, cudaMemcpyDefault
//   migrate             (under mgpu-run with two GPUs or more) mgpu_memory_owner and
//                       mgpu_memory_migrate: pages move, data and address stay
// The data patterns never include zero words, so a copy that did not happen
// cannot pass for one that did.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

static const char *mode_name = "?";

[[noreturn]] static void fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    std::printf("FAIL: distributed_memory %s: ", mode_name);
    std::vprintf(format, args);
    std::printf("\n");
    va_end(args);
    std::fflush(stdout);
    std::exit(1);
}

static const char *cu_result_name(CUresult r)
{
    static char unknown[32];
    const char *name = nullptr;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) {
        std::snprintf(unknown, sizeof unknown, "CUresult(%d)", (int)r);
        return unknown;
    }
    return name;
}

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            fail("line %d: %s: %s", __LINE__, #call, cudaGetErrorName(e_));                        \
    } while (0)

#define CU_CHECK(call)                                                                             \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS)                                                                    \
            fail("line %d: %s: %s", __LINE__, #call, cu_result_name(r_));                          \
    } while (0)

static const size_t KiB = 1024, MiB = 1024 * KiB;
static const int block_size = 256;

// Word i of the pattern with this seed: a hash of i, never zero.
__host__ __device__ inline uint32_t pattern_word(uint64_t i, uint32_t seed)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 32 | seed);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (uint32_t)(x >> 32) | 1u;
}

// The pattern as bytes: byte i is byte i % 4 of word i / 4.
static void fill_pattern(uint8_t *bytes, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i += 4) {
        uint32_t w = pattern_word(i / 4, seed);
        std::memcpy(bytes + i, &w, std::min<size_t>(4, n - i));
    }
}

// A block count for a grid-stride kernel over n items on the current device.
static unsigned grid_for(size_t n)
{
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    size_t blocks = (n + block_size - 1) / block_size;
    return (unsigned)std::max<size_t>(1, std::min<size_t>(blocks, (size_t)sms * 8));
}

__global__ void fill_words(uint32_t *words, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        words[i] = pattern_word(i, seed);
}

// Per block: the sum of word[i] * (i % 255 + 1) and the number of words that
// differ from the pattern, stored (no atomics) at partials[2 * block].
__global__ void checksum_words(const uint32_t *words, size_t n, uint32_t seed,
                               unsigned long long *partials)
{
    __shared__ unsigned long long sums[block_size], mismatches[block_size];
    unsigned long long sum = 0, bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t w = words[i];
        sum += (unsigned long long)w * (i % 255 + 1);
        bad += w != pattern_word(i, seed);
    }
    sums[threadIdx.x] = sum;
    mismatches[threadIdx.x] = bad;
    __syncthreads();
    for (int stride = block_size / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            sums[threadIdx.x] += sums[threadIdx.x + stride];
            mismatches[threadIdx.x] += mismatches[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[2 * blockIdx.x] = sums[0];
        partials[2 * blockIdx.x + 1] = mismatches[0];
    }
}

__global__ void count_mismatches(const uint32_t *words, size_t n, uint32_t seed,
                                 unsigned long long *counter)
{
    unsigned long long bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        bad += words[i] != pattern_word(i, seed);
    if (bad)
        atomicAdd(counter, bad);
}

__global__ void increment_words(uint32_t *words, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        words[i] += 1;
}

// Adds row * 7 + col to every element of a rows x cols matrix of words whose
// rows are pitch bytes apart.
__global__ void add_position(char *matrix, size_t pitch, int cols, int rows)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < cols && row < rows) {
        uint32_t *line = (uint32_t *)(matrix + (size_t)row * pitch);
        line[col] += (uint32_t)(row * 7 + col);
    }
}

// The host's copy of what checksum_words computes over the whole pattern.
static unsigned long long host_checksum(size_t n, uint32_t seed)
{
    unsigned long long sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (unsigned long long)pattern_word(i, seed) * (i % 255 + 1);
    return sum;
}

// --- write-read ----------------------------------------------------------------

static int mode_write_read()
{
    const size_t bytes = 64 * MiB, words = bytes / 4;
    const uint32_t seed = 0x5eed0001;
    const unsigned blocks = 1024;
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    CUDA_CHECK(cudaSetDevice(0));
    uint32_t *buffer;
    unsigned long long *partials; // 2 per block per device, on device 0
    CUDA_CHECK(cudaMalloc(&buffer, bytes));
    const size_t partial_bytes = (size_t)devices * blocks * 2 * sizeof(unsigned long long);
    CUDA_CHECK(cudaMalloc(&partials, partial_bytes));
    CUDA_CHECK(cudaMemset(partials, 0xff, partial_bytes));
    fill_words<<<grid_for(words), block_size>>>(buffer, words, seed);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    // Asked from the last device first (the process's first pointer query),
    // the buffer belongs to device 0 wherever it is asked from.
    for (int d = devices - 1; d >= 0; d--) {
        CUDA_CHECK(cudaSetDevice(d));
        int ordinal = -1;
        CUresult r = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                           (CUdeviceptr)buffer);
        if (r != CUDA_SUCCESS || ordinal != 0)
            fail("asked on device %d, the buffer's device ordinal is %d (%s), not 0", d,
                 ordinal, cu_result_name(r));
    }
    CUDA_CHECK(cudaSetDevice(0));

    std::vector<int> checked;
    for (int d = 0; d < devices; d++) {
        if (d != 0) {
            int can_access = 0;
            CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access, d, 0));
            if (!can_access) {
                std::printf("device %d: cannot access device 0's memory, not checked\n", d);
                continue;
            }
            CUDA_CHECK(cudaSetDevice(d));
            cudaError_t e = cudaDeviceEnablePeerAccess(0, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled)
                cudaGetLastError();
            else if (e != cudaSuccess)
                fail("cudaDeviceEnablePeerAccess(0) on device %d: %s", d, cudaGetErrorName(e));
        }
        checksum_words<<<blocks, block_size>>>(buffer, words, seed,
                                               partials + (size_t)d * blocks * 2);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        checked.push_back(d);
    }
    CUDA_CHECK(cudaSetDevice(0));
    std::vector<unsigned long long> host_partials((size_t)devices * blocks * 2);
    CUDA_CHECK(cudaMemcpy(host_partials.data(), partials, partial_bytes, cudaMemcpyDeviceToHost));
    const unsigned long long expected = host_checksum(words, seed);
    for (int d : checked) {
        unsigned long long sum = 0, mismatches = 0;
        for (unsigned b = 0; b < blocks; b++) {
            sum += host_partials[((size_t)d * blocks + b) * 2];
            mismatches += host_partials[((size_t)d * blocks + b) * 2 + 1];
        }
        if (sum != expected || mismatches != 0)
            fail("device %d read checksum %#llx (expected %#llx), %llu words differ", d, sum,
                 expected, mismatches);
        std::printf("device %d: checksum OK\n", d);
    }
    CUDA_CHECK(cudaFree(partials));
    CUDA_CHECK(cudaFree(buffer));
    return 0;
}

// --- pointer-attrs ---------------------------------------------------------------

enum ValueKind { CONTEXT, NUMBER, ORDINAL, POINTER, ID, POOL, RESULT_ONLY };

struct Attribute {
    CUpointer_attribute attribute;
    const char *name;
    ValueKind kind;
};

// Every attribute of CUDA 13's cuda.h, in the order of the enum (1..21).
static const Attribute all_attributes[] = {
    {CU_POINTER_ATTRIBUTE_CONTEXT, "CONTEXT", CONTEXT},
    {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "MEMORY_TYPE", NUMBER},
    {CU_POINTER_ATTRIBUTE_DEVICE_POINTER, "DEVICE_POINTER", POINTER},
    {CU_POINTER_ATTRIBUTE_HOST_POINTER, "HOST_POINTER", POINTER},
    {CU_POINTER_ATTRIBUTE_P2P_TOKENS, "P2P_TOKENS", RESULT_ONLY},
    {CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, "SYNC_MEMOPS", NUMBER},
    {CU_POINTER_ATTRIBUTE_BUFFER_ID, "BUFFER_ID", ID},
    {CU_POINTER_ATTRIBUTE_IS_MANAGED, "IS_MANAGED", NUMBER},
    {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "DEVICE_ORDINAL", ORDINAL},
    {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, "IS_LEGACY_CUDA_IPC_CAPABLE", NUMBER},
    {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "RANGE_START_ADDR", POINTER},
    {CU_POINTER_ATTRIBUTE_RANGE_SIZE, "RANGE_SIZE", NUMBER},
    {CU_POINTER_ATTRIBUTE_MAPPED, "MAPPED", NUMBER},
    {CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, "ALLOWED_HANDLE_TYPES", NUMBER},
    {CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, "IS_GPU_DIRECT_RDMA_CAPABLE", NUMBER},
    {CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, "ACCESS_FLAGS", NUMBER},
    {CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, "MEMPOOL_HANDLE", POOL},
    {CU_POINTER_ATTRIBUTE_MAPPING_SIZE, "MAPPING_SIZE", NUMBER},
    {CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, "MAPPING_BASE_ADDR", POINTER},
    {CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, "MEMORY_BLOCK_ID", ID},
#if CUDA_VERSION >= 12080
    {CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, "IS_HW_DECOMPRESS_CAPABLE", NUMBER},
#endif
};
static const int attribute_count = sizeof all_attributes / sizeof all_attributes[0];

// Whether cuda.h lists the attribute among those cuPointerGetAttributes takes.
static bool documented_for_get_attributes(CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return false;
    default:
        return true;
    }
}

// Room for any attribute's value; zeroed before each query, so that a value
// narrower than 8 bytes reads correctly as `number`.
union AttributeValue {
    unsigned char bytes[64];
    CUcontext context;
    CUdeviceptr pointer;
    unsigned long long number;
    int ordinal;
    CUmemoryPool pool;
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tokens;
};

struct TestAllocation {
    std::string name;
    CUdeviceptr base;
    size_t size;
    bool is_device;
};

// What values are compared against to print them the same in every run.
struct Reference {
    CUdeviceptr base;
    CUcontext current;
    CUmemoryPool default_pool;
};

static std::string relative_address(unsigned long long address, const Reference &ref)
{
    if (address == 0)
        return "null";
    char text[48];
    if (address >= ref.base)
        std::snprintf(text, sizeof text, "base+%llu", address - ref.base);
    else
        std::snprintf(text, sizeof text, "base-%llu", ref.base - address);
    return text;
}

static std::string describe_value(ValueKind kind, const AttributeValue &v, const Reference &ref)
{
    char text[48];
    switch (kind) {
    case CONTEXT:
        return v.context == nullptr ? "null" : v.context == ref.current ? "current" : "other";
    case NUMBER:
        std::snprintf(text, sizeof text, "%llu", v.number);
        return text;
    case ORDINAL:
        std::snprintf(text, sizeof text, "%d", v.ordinal);
        return text;
    case POINTER:
        return relative_address(v.pointer, ref);
    case ID:
        return v.number != 0 ? "id" : "0";
    case POOL:
        return v.pool == nullptr ? "null" : v.pool == ref.default_pool ? "default-pool" : "other";
    case RESULT_ONLY:
        return "";
    }
    return "?";
}

struct QueriedIds {
    unsigned long long buffer_id, block_id;
};

// Prints every way of asking about one address of one allocation.
static QueriedIds query_address(const TestAllocation &a, const char *where, CUdeviceptr address,
                                const Reference &ref)
{
    QueriedIds ids = {0, 0};
    for (const Attribute &attr : all_attributes) {
        AttributeValue v;
        std::memset(&v, 0, sizeof v);
        CUresult r = cuPointerGetAttribute(&v, attr.attribute, address);
        std::string value = r == CUDA_SUCCESS ? describe_value(attr.kind, v, ref) : "";
        std::printf("%s %s %s: %s%s%s\n", a.name.c_str(), where, attr.name, cu_result_name(r),
                    value.empty() ? "" : " ", value.c_str());
        if (r == CUDA_SUCCESS && attr.attribute == CU_POINTER_ATTRIBUTE_BUFFER_ID)
            ids.buffer_id = v.number;
        if (r == CUDA_SUCCESS && attr.attribute == CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID)
            ids.block_id = v.number;
    }

    // cuPointerGetAttributes: once with the attributes it documents, once
    // with all of them.
    for (int all = 0; all <= 1; all++) {
        std::vector<CUpointer_attribute> list;
        std::vector<const Attribute *> asked;
        for (const Attribute &attr : all_attributes)
            if (all || documented_for_get_attributes(attr.attribute)) {
                list.push_back(attr.attribute);
                asked.push_back(&attr);
            }
        std::vector<AttributeValue> values(list.size());
        std::vector<void *> data(list.size());
        for (size_t i = 0; i < list.size(); i++) {
            std::memset(&values[i], 0, sizeof values[i]);
            data[i] = &values[i];
        }
        const char *label = all ? "getattributes(all)" : "getattributes(documented)";
        CUresult r =
            cuPointerGetAttributes((unsigned)list.size(), list.data(), data.data(), address);
        std::printf("%s %s %s: %s\n", a.name.c_str(), where, label, cu_result_name(r));
        if (r != CUDA_SUCCESS)
            continue;
        for (size_t i = 0; i < list.size(); i++) {
            std::string value = describe_value(asked[i]->kind, values[i], ref);
            if (!value.empty())
                std::printf("%s %s %s %s: %s\n", a.name.c_str(), where, label, asked[i]->name,
                            value.c_str());
        }
    }

    CUdeviceptr range_base = 0;
    size_t range_size = 0;
    CUresult r = cuMemGetAddressRange(&range_base, &range_size, address);
    if (r == CUDA_SUCCESS)
        std::printf("%s %s cuMemGetAddressRange: %s %s size %zu\n", a.name.c_str(), where,
                    cu_result_name(r), relative_address(range_base, ref).c_str(), range_size);
    else
        std::printf("%s %s cuMemGetAddressRange: %s\n", a.name.c_str(), where, cu_result_name(r));

    cudaPointerAttributes pa;
    std::memset(&pa, 0, sizeof pa);
    cudaError_t e = cudaPointerGetAttributes(&pa, (const void *)address);
    if (e == cudaSuccess)
        std::printf("%s %s cudaPointerGetAttributes: %s type %d device %d devicePointer %s "
                    "hostPointer %s\n",
                    a.name.c_str(), where, cudaGetErrorName(e), (int)pa.type, pa.device,
                    relative_address((uintptr_t)pa.devicePointer, ref).c_str(),
                    relative_address((uintptr_t)pa.hostPointer, ref).c_str());
    else
        std::printf("%s %s cudaPointerGetAttributes: %s\n", a.name.c_str(), where,
                    cudaGetErrorName(e));
    cudaGetLastError();
    return ids;
}

static int mode_pointer_attrs()
{
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(nullptr)); // the primary context, current
    CUcontext current = nullptr;
    CU_CHECK(cuCtxGetCurrent(&current));
    CUdevice device0;
    CU_CHECK(cuDeviceGet(&device0, 0));
    CUmemoryPool driver_pool = nullptr;
    cudaMemPool_t runtime_pool = nullptr;
    CU_CHECK(cuDeviceGetDefaultMemPool(&driver_pool, device0));
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&runtime_pool, 0));
    std::printf("attributes queried: %d (CUDA_VERSION %d)\n", attribute_count, CUDA_VERSION);
    std::printf("default pools of the driver and the runtime agree: %s\n",
                (CUmemoryPool)runtime_pool == driver_pool ? "yes" : "no");

    std::vector<TestAllocation> allocations;
    auto add_cuda_malloc = [&](const char *name, size_t size) {
        void *p;
        CUDA_CHECK(cudaMalloc(&p, size));
        allocations.push_back({name, (CUdeviceptr)p, size, true});
    };
    add_cuda_malloc("cudaMalloc(1000)", 1000);
    add_cuda_malloc("cudaMalloc(3MiB)", 3 * MiB);
    add_cuda_malloc("cudaMalloc(100MiB)", 100 * MiB);
    void *pitched;
    size_t pitch = 0;
    CUDA_CHECK(cudaMallocPitch(&pitched, &pitch, 3000, 1000));
    std::printf("cudaMallocPitch(3000x1000) pitch %zu\n", pitch);
    allocations.push_back({"cudaMallocPitch(3000x1000)", (CUdeviceptr)pitched, pitch * 1000, true});
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *from_pool;
    CUDA_CHECK(cudaMallocAsync(&from_pool, 5 * MiB, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    allocations.push_back({"cudaMallocAsync(5MiB)", (CUdeviceptr)from_pool, 5 * MiB, true});
    void *pinned;
    CUDA_CHECK(cudaMallocHost(&pinned, 64 * KiB));
    allocations.push_back({"cudaMallocHost(64KiB)", (CUdeviceptr)pinned, 64 * KiB, false});
    void *pageable = std::malloc(64 * KiB);
    if (pageable == nullptr)
        fail("malloc(64 KiB)");
    allocations.push_back({"malloc(64KiB)", (CUdeviceptr)pageable, 64 * KiB, false});

    std::vector<unsigned long long> buffer_ids, block_ids;
    for (const TestAllocation &a : allocations) {
        Reference ref = {a.base, current, driver_pool};
        CUdeviceptr interior = a.base + ((a.size / 2) & ~(size_t)255);
        QueriedIds at_start = query_address(a, "start", a.base, ref);
        QueriedIds at_interior = query_address(a, "interior", interior, ref);
        std::printf("%s buffer id same at start and interior: %s\n", a.name.c_str(),
                    at_start.buffer_id == at_interior.buffer_id ? "yes" : "no");
        std::printf("%s memory block id same at start and interior: %s\n", a.name.c_str(),
                    at_start.block_id == at_interior.block_id ? "yes" : "no");
        if (at_start.buffer_id != 0)
            buffer_ids.push_back(at_start.buffer_id);
        if (at_start.block_id != 0)
            block_ids.push_back(at_start.block_id);
    }
    auto distinct = [](std::vector<unsigned long long> ids) {
        std::sort(ids.begin(), ids.end());
        return std::adjacent_find(ids.begin(), ids.end()) == ids.end() ? "yes" : "no";
    };
    std::printf("buffer ids: %zu nonzero, ids distinct: %s\n", buffer_ids.size(),
                distinct(buffer_ids));
    std::printf("memory block ids: %zu nonzero, ids distinct: %s\n", block_ids.size(),
                distinct(block_ids));

    for (const TestAllocation &a : allocations) {
        if (a.base == (CUdeviceptr)from_pool)
            CUDA_CHECK(cudaFreeAsync(from_pool, stream));
        else if (a.base == (CUdeviceptr)pinned)
            CUDA_CHECK(cudaFreeHost(pinned));
        else if (a.base == (CUdeviceptr)pageable)
            std::free(pageable);
        else
            CUDA_CHECK(cudaFree((void *)a.base));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaStreamDestroy(stream));
    return 0;
}

// --- pitched-2d --------------------------------------------------------------------

static int mode_pitched_2d()
{
    const int cols = 3000, rows = 2500;
    const size_t width = cols * sizeof(uint32_t);
    const size_t host_pitch = width + 136; // differs from any device pitch
    const uint32_t seed = 0x2d2d0002;
    std::vector<uint32_t> host(host_pitch / 4 * rows), back(host_pitch / 4 * rows);
    auto host_at = [&](std::vector<uint32_t> &m, int row, int col) -> uint32_t & {
        return m[(size_t)row * (host_pitch / 4) + col];
    };
    for (int row = 0; row < rows; row++)
        for (int col = 0; col < cols; col++)
            host_at(host, row, col) = pattern_word((uint64_t)row * cols + col, seed);

    char *matrix;
    size_t pitch;
    CUDA_CHECK(cudaMallocPitch((void **)&matrix, &pitch, width, rows));
    std::printf("pitched-2d: %d x %d words, pitch %zu bytes, %zu bytes in all\n", rows, cols, pitch,
                pitch * rows);
    CUDA_CHECK(
        cudaMemcpy2D(matrix, pitch, host.data(), host_pitch, width, rows, cudaMemcpyHostToDevice));
    dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    add_position<<<grid, block>>>(matrix, pitch, cols, rows);
    CUDA_CHECK(cudaGetLastError());
    std::fill(back.begin(), back.end(), 0xdeadbeefu);
    CUDA_CHECK(
        cudaMemcpy2D(back.data(), host_pitch, matrix, pitch, width, rows, cudaMemcpyDeviceToHost));
    for (int row = 0; row < rows; row++)
        for (int col = 0; col < cols; col++) {
            uint32_t want = host_at(host, row, col) + (uint32_t)(row * 7 + col);
            if (host_at(back, row, col) != want)
                fail("element (%d, %d) is %#x after the kernel, expected %#x", row, col,
                     host_at(back, row, col), want);
        }
    std::printf("pitched-2d: host to device, kernel, device to host: OK\n");

    // Device to device into a wider pitched allocation, at column 50.
    const int wide_cols = cols + 100, column_offset = 50;
    char *wide;
    size_t wide_pitch;
    CUDA_CHECK(cudaMallocPitch((void **)&wide, &wide_pitch, wide_cols * sizeof(uint32_t), rows));
    CUDA_CHECK(cudaMemcpy2D(wide + column_offset * sizeof(uint32_t), wide_pitch, matrix, pitch,
                            width, rows, cudaMemcpyDeviceToDevice));
    std::vector<uint32_t> wide_back(wide_pitch / 4 * rows, 0xdeadbeefu);
    CUDA_CHECK(cudaMemcpy2D(wide_back.data(), wide_pitch, wide, wide_pitch, width + 100 * 4, rows,
                            cudaMemcpyDeviceToHost));
    for (int row = 0; row < rows; row += 7)
        for (int col = 0; col < cols; col++) {
            uint32_t want = host_at(host, row, col) + (uint32_t)(row * 7 + col);
            uint32_t got = wide_back[(size_t)row * (wide_pitch / 4) + column_offset + col];
            if (got != want)
                fail("device-to-device copy: element (%d, %d) is %#x, expected %#x", row, col, got,
                     want);
        }
    std::printf("pitched-2d: device to device between pitches %zu and %zu: OK (every 7th row)\n",
                pitch, wide_pitch);
    CUDA_CHECK(cudaFree(wide));
    CUDA_CHECK(cudaFree(matrix));
    return 0;
}

// --- oversubscribe ---------------------------------------------------------------

static int mode_oversubscribe(const char *bytes_text)
{
    char *end = nullptr;
    unsigned long long bytes = bytes_text ? std::strtoull(bytes_text, &end, 10) : 0;
    if (bytes_text == nullptr || *end != '\0' || bytes < 4) {
        std::printf("usage: distributed_memory oversubscribe BYTES\n");
        return 1;
    }
    const uint32_t seed = 0x0b5e0003;
    CUDA_CHECK(cudaSetDevice(0));
    uint32_t *buffer = nullptr;
    cudaError_t e = cudaMalloc(&buffer, bytes);
    if (e != cudaSuccess) {
        std::printf("oversubscribe: cannot allocate (%s)\n", cudaGetErrorName(e));
        return 2;
    }
    const size_t words = bytes / 4;
    unsigned long long *counter;
    CUDA_CHECK(cudaMalloc(&counter, sizeof *counter));
    CUDA_CHECK(cudaMemset(counter, 0, sizeof *counter));
    fill_words<<<grid_for(words), block_size>>>(buffer, words, seed);
    CUDA_CHECK(cudaGetLastError());
    count_mismatches<<<grid_for(words), block_size>>>(buffer, words, seed, counter);
    CUDA_CHECK(cudaGetLastError());
    unsigned long long mismatches = ~0ull;
    CUDA_CHECK(cudaMemcpy(&mismatches, counter, sizeof mismatches, cudaMemcpyDeviceToHost));
    if (mismatches != 0)
        fail("%llu of %zu words differ from what the kernel wrote", mismatches, words);

    // Three 64 MiB slices (start, middle, end) on the host.
    const size_t slice_words = std::min<size_t>(words, 64 * MiB / 4);
    std::vector<uint32_t> slice(slice_words);
    const size_t starts[3] = {0, (words - slice_words) / 2, words - slice_words};
    for (size_t first : starts) {
        std::fill(slice.begin(), slice.end(), 0u);
        CUDA_CHECK(
            cudaMemcpy(slice.data(), buffer + first, slice_words * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < slice_words; i++)
            if (slice[i] != pattern_word(first + i, seed))
                fail("word %zu copied to the host is %#x, expected %#x", first + i, slice[i],
                     pattern_word(first + i, seed));
    }
    std::printf("oversubscribe: %llu bytes, mismatches 0\n", bytes);
    CUDA_CHECK(cudaFree(counter));
    CUDA_CHECK(cudaFree(buffer));
    return 0;
}

// --- many-small --------------------------------------------------------------------

static double milliseconds_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

static int mode_many_small()
{
    const int count = 100000;
    std::vector<size_t> sizes(count);
    uint32_t state = 12345;
    for (size_t &size : sizes) {
        state = state * 1664525u + 1013904223u;
        size = 1 + (state >> 8) % 4096;
    }
    auto fill_byte = [](int i) { return (unsigned char)((i & 0xff) | 1); };
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(nullptr));
    size_t free_before, free_after, total;
    CUDA_CHECK(cudaMemGetInfo(&free_before, &total));

    std::vector<char *> buffers(count);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; i++)
        CUDA_CHECK(cudaMalloc(&buffers[i], sizes[i]));
    double alloc_ms = milliseconds_since(start);
    CUDA_CHECK(cudaMemGetInfo(&free_after, &total));

    std::vector<std::pair<uintptr_t, size_t>> ranges(count);
    for (int i = 0; i < count; i++)
        ranges[i] = {(uintptr_t)buffers[i], sizes[i]};
    std::sort(ranges.begin(), ranges.end());
    for (int i = 1; i < count; i++)
        if (ranges[i - 1].first + ranges[i - 1].second > ranges[i].first)
            fail("buffers at %#zx (%zu bytes) and %#zx overlap", (size_t)ranges[i - 1].first,
                 ranges[i - 1].second, (size_t)ranges[i].first);

    for (int i = 0; i < count; i++)
        CUDA_CHECK(cudaMemset(buffers[i], fill_byte(i), sizes[i]));
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<unsigned char> back(4096);
    int checked = 0;
    for (int i = 0; i < count; i += 97, checked++) {
        std::fill(back.begin(), back.end(), 0);
        CUDA_CHECK(cudaMemcpy(back.data(), buffers[i], sizes[i], cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < sizes[i]; k++)
            if (back[k] != fill_byte(i))
                fail("buffer %d (%zu bytes): byte %zu is %#x, expected %#x", i, sizes[i], k,
                     back[k], fill_byte(i));
    }

    start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; i++)
        CUDA_CHECK(cudaFree(buffers[i]));
    double free_ms = milliseconds_since(start);
    long long dropped = ((long long)free_before - (long long)free_after) / (long long)MiB;
    std::printf("many-small: %d buffers, none overlap, %d checked\n", count, checked);
    std::printf("many-small: free memory dropped by %lld MiB\n", dropped);
    std::printf("many-small: allocations %.1f ms, frees %.1f ms\n", alloc_ms, free_ms);
    return 0;
}

// --- errors ------------------------------------------------------------------------

// Prints a runtime call's error and what cudaGetLastError then says (which
// also clears it).
static void print_runtime_error(const char *what, cudaError_t e)
{
    cudaError_t last = cudaGetLastError();
    std::printf("%s: %s (then cudaGetLastError: %s)\n", what, cudaGetErrorName(e),
                cudaGetErrorName(last));
}

static void print_driver_error(const char *what, CUresult r)
{
    cudaError_t last = cudaGetLastError();
    std::printf("%s: %s (then cudaGetLastError: %s)\n", what, cu_result_name(r),
                cudaGetErrorName(last));
}

static const char *pointer_state(void *p, void *sentinel)
{
    return p == nullptr ? "null" : p == sentinel ? "untouched" : "set";
}

static int mode_errors()
{
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(nullptr));
    void *const sentinel = (void *)0x5e5e000;

    print_runtime_error("cudaFree(never allocated)", cudaFree((void *)0x1234500));

    void *twice = nullptr;
    CUDA_CHECK(cudaMalloc(&twice, 4096));
    print_runtime_error("cudaFree(4 KiB buffer)", cudaFree(twice));
    print_runtime_error("cudaFree(the same buffer again)", cudaFree(twice));

    void *huge = sentinel;
    cudaError_t e = cudaMalloc(&huge, (size_t)1 << 50);
    print_runtime_error("cudaMalloc(1 PiB)", e);
    std::printf("cudaMalloc(1 PiB) pointer: %s\n", pointer_state(huge, sentinel));
    if (e == cudaSuccess)
        cudaFree(huge);

    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    huge = sentinel;
    e = cudaMallocAsync(&huge, (size_t)1 << 50, stream);
    print_runtime_error("cudaMallocAsync(1 PiB)", e);
    if (e == cudaSuccess)
        cudaFreeAsync(huge, stream);
    print_runtime_error("cudaStreamSynchronize after it", cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaStreamDestroy(stream));

    print_runtime_error("cudaFree(nullptr)", cudaFree(nullptr));

    void *empty = sentinel;
    e = cudaMalloc(&empty, 0);
    print_runtime_error("cudaMalloc(0)", e);
    std::printf("cudaMalloc(0) pointer: %s\n", pointer_state(empty, sentinel));
    if (e == cudaSuccess && empty != nullptr && empty != sentinel)
        cudaFree(empty);
    CUdeviceptr driver_empty = 0;
    print_driver_error("cuMemAlloc(0)", cuMemAlloc(&driver_empty, 0));
    print_driver_error("cuMemFree(never allocated)", cuMemFree((CUdeviceptr)0x1234500));

    char *large;
    CUDA_CHECK(cudaMalloc(&large, 4 * MiB));
    print_driver_error("cuMemFree(4 MiB buffer + 1 MiB)", cuMemFree((CUdeviceptr)(large + MiB)));
    print_runtime_error("cudaFree(4 MiB buffer) after that", cudaFree(large));
    char *small;
    CUDA_CHECK(cudaMalloc(&small, 1000));
    print_driver_error("cuMemFree(1000 B buffer + 256)", cuMemFree((CUdeviceptr)(small + 256)));
    print_runtime_error("cudaFree(1000 B buffer) after that", cudaFree(small));

    size_t free_bytes = 0, total_bytes = 0;
    e = cudaMemGetInfo(&free_bytes, &total_bytes);
    print_runtime_error("cudaMemGetInfo", e);
    std::printf("cudaMemGetInfo: free <= total: %s, total > 0: %s\n",
                free_bytes <= total_bytes ? "yes" : "no", total_bytes > 0 ? "yes" : "no");

    // The context still works.
    const size_t size = MiB + 1;
    char *after;
    CUDA_CHECK(cudaMalloc(&after, size));
    CUDA_CHECK(cudaMemset(after, 0x3c, size));
    std::vector<unsigned char> back(size, 0);
    CUDA_CHECK(cudaMemcpy(back.data(), after, size, cudaMemcpyDeviceToHost));
    bool usable = std::all_of(back.begin(), back.end(), [](unsigned char c) { return c == 0x3c; });
    CUDA_CHECK(cudaFree(after));
    std::printf("memory usable after the errors: %s\n", usable ? "yes" : "no");
    if (!usable)
        fail("a 1 MiB + 1 buffer allocated after the errors does not hold its memset");
    return 0;
}

// --- copies ------------------------------------------------------------------------

static void expect_same_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t n)
{
    if (std::memcmp(got, want, n) != 0) {
        size_t i = 0;
        while (got[i] == want[i])
            i++;
        size_t differing = 0;
        for (size_t k = i; k < n; k++)
            differing += got[k] != want[k];
        fail("%s: byte %zu of %zu is %#x, expected %#x (%zu bytes differ)", what, i, n, got[i],
             want[i], differing);
    }
    std::printf("copies: %s: OK\n", what);
}

struct HostBuffers {
    std::vector<uint8_t *> pageable;
    ~HostBuffers()
    {
        for (uint8_t *p : pageable)
            std::free(p);
    }
    uint8_t *make(size_t n)
    {
        uint8_t *p = (uint8_t *)std::malloc(n);
        if (p == nullptr)
            fail("cannot allocate %zu bytes of host memory", n);
        pageable.push_back(p);
        return p;
    }
};

static const uint8_t poison = 0xee;

static int mode_copies()
{
    const size_t n = 200 * MiB + 4 * KiB + 12, words = n / 4;
    CUDA_CHECK(cudaSetDevice(0));
    HostBuffers host;
    uint8_t *source = host.make(n), *back = host.make(n), *expected = host.make(n);
    uint8_t *window = host.make(n), *other_expected = host.make(n);
    fill_pattern(source, n, 1);
    uint8_t *pinned_source, *pinned_back;
    CUDA_CHECK(cudaMallocHost(&pinned_source, n));
    CUDA_CHECK(cudaMallocHost(&pinned_back, n));
    fill_pattern(pinned_source, n, 2);
    uint8_t *a, *b;
    CUDA_CHECK(cudaMalloc(&a, n));
    CUDA_CHECK(cudaMalloc(&b, n));

    // Whole buffer, pageable and pinned.
    CUDA_CHECK(cudaMemcpy(a, source, n, cudaMemcpyHostToDevice));
    std::memset(back, poison, n);
    CUDA_CHECK(cudaMemcpy(back, a, n, cudaMemcpyDeviceToHost));
    expect_same_bytes("pageable host to device and back", back, source, n);
    CUDA_CHECK(cudaMemcpy(a, pinned_source, n, cudaMemcpyHostToDevice));
    std::memset(pinned_back, poison, n);
    CUDA_CHECK(cudaMemcpy(pinned_back, a, n, cudaMemcpyDeviceToHost));
    expect_same_bytes("pinned host to device and back", pinned_back, pinned_source, n);

    // Stream order: copy in, increment every word, copy out, one stream.
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMemcpyAsync(a, source, n, cudaMemcpyHostToDevice, stream));
    increment_words<<<grid_for(words), block_size, 0, stream>>>((uint32_t *)a, words);
    CUDA_CHECK(cudaGetLastError());
    std::memset(pinned_back, poison, n);
    CUDA_CHECK(cudaMemcpyAsync(pinned_back, a, n, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t i = 0; i < words; i++) {
        uint32_t w = pattern_word(i, 1) + 1;
        std::memcpy(expected + 4 * i, &w, 4);
    }
    expect_same_bytes("async copy in, kernel, async copy out on one stream", pinned_back, expected,
                      n);

    // A pageable source may be overwritten as soon as cudaMemcpyAsync returns,
    // even while the stream still has a kernel to run before the copy.
    fill_pattern(back, n, 5);
    std::memcpy(expected, back, n);
    increment_words<<<grid_for(words), block_size, 0, stream>>>((uint32_t *)a, words);
    CUDA_CHECK(cudaMemcpyAsync(b, back, n, cudaMemcpyHostToDevice, stream));
    std::memset(back, poison, n);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memset(pinned_back, poison, n);
    CUDA_CHECK(cudaMemcpy(pinned_back, b, n, cudaMemcpyDeviceToHost));
    expect_same_bytes("pageable source overwritten right after cudaMemcpyAsync", pinned_back,
                      expected, n);

    // Unaligned ranges: pageable in, pinned in from an unaligned source
    // offset, then the whole buffer out and the window out into pinned memory.
    CUDA_CHECK(cudaMemcpy(a, source, n, cudaMemcpyHostToDevice));
    std::memcpy(expected, source, n);
    const size_t window_offset = 3 * MiB + 17, window_length = 150 * MiB + 5;
    fill_pattern(window, window_length, 3);
    CUDA_CHECK(cudaMemcpy(a + window_offset, window, window_length, cudaMemcpyHostToDevice));
    std::memcpy(expected + window_offset, window, window_length);
    const size_t pinned_offset = 77 * MiB + 1, pinned_length = 33 * MiB + 333;
    CUDA_CHECK(
        cudaMemcpy(a + pinned_offset, pinned_source + 5, pinned_length, cudaMemcpyHostToDevice));
    std::memcpy(expected + pinned_offset, pinned_source + 5, pinned_length);
    std::memset(back, poison, n);
    CUDA_CHECK(cudaMemcpy(back, a, n, cudaMemcpyDeviceToHost));
    expect_same_bytes("unaligned host-to-device ranges (3 MiB + 17, 150 MiB + 5 bytes; "
                      "77 MiB + 1, 33 MiB + 333 bytes)",
                      back, expected, n);
    std::memset(pinned_back, poison, n);
    CUDA_CHECK(
        cudaMemcpy(pinned_back + 3, a + window_offset, window_length, cudaMemcpyDeviceToHost));
    expect_same_bytes("unaligned device-to-host range (3 MiB + 17, 150 MiB + 5 bytes)",
                      pinned_back + 3, expected + window_offset, window_length);
    if (pinned_back[0] != poison || pinned_back[3 + window_length] != poison)
        fail("the device-to-host copy wrote outside its range");

    // Memsets over unaligned ranges, synchronous and on a stream.
    const size_t memset_offset = 5 * MiB + 3, memset_length = 100 * MiB + 7;
    CUDA_CHECK(cudaMemset(a + memset_offset, 0xa5, memset_length));
    std::memset(expected + memset_offset, 0xa5, memset_length);
    const size_t async_offset = 170 * MiB + 1001, async_length = 20 * MiB + 2;
    CUDA_CHECK(cudaMemsetAsync(a + async_offset, 0x3c, async_length, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memset(expected + async_offset, 0x3c, async_length);
    std::memset(back, poison, n);
    CUDA_CHECK(cudaMemcpy(back, a, n, cudaMemcpyDeviceToHost));
    const size_t edge = 4 * KiB;
    expect_same_bytes("4 KiB around the start of the memset", back + memset_offset - edge,
                      expected + memset_offset - edge, 2 * edge);
    expect_same_bytes("4 KiB around the end of the memset",
                      back + memset_offset + memset_length - edge,
                      expected + memset_offset + memset_length - edge, 2 * edge);
    expect_same_bytes("cudaMemset (5 MiB + 3, 100 MiB + 7 bytes) and cudaMemsetAsync "
                      "(170 MiB + 1001, 20 MiB + 2 bytes), whole buffer",
                      back, expected, n);

    // Device to device, at different unaligned offsets, sync and async.
    fill_pattern(other_expected, n, 4);
    CUDA_CHECK(cudaMemcpy(b, other_expected, n, cudaMemcpyHostToDevice));
    const size_t from = MiB + 5, to = 7 * MiB + 9, length = 120 * MiB + 3;
    CUDA_CHECK(cudaMemcpy(b + to, a + from, length, cudaMemcpyDeviceToDevice));
    std::memcpy(other_expected + to, expected + from, length);
    const size_t async_from = 150 * MiB + 77, async_to = 160 * MiB + 1, async_copy = 30 * MiB + 1;
    CUDA_CHECK(cudaMemcpyAsync(b + async_to, a + async_from, async_copy, cudaMemcpyDeviceToDevice,
                               stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memcpy(other_expected + async_to, expected + async_from, async_copy);
    std::memset(back, poison, n);
    CUDA_CHECK(cudaMemcpy(back, b, n, cudaMemcpyDeviceToHost));
    expect_same_bytes("device to device (1 MiB + 5 to 7 MiB + 9, 120 MiB + 3 bytes; async "
                      "150 MiB + 77 to 160 MiB + 1, 30 MiB + 1 bytes)",
                      back, other_expected, n);

    // cudaMemcpyDefault, which infers the direction from the pointers.
    CUDA_CHECK(cudaMemcpy(a, pinned_source, n, cudaMemcpyDefault));
    std::memset(back, poison, n);
    CUDA_CHECK(cudaMemcpy(back, a, n, cudaMemcpyDefault));
    expect_same_bytes("cudaMemcpyDefault pinned in, pageable out", back, pinned_source, n);
    CUDA_CHECK(cudaMemcpy(a, source, n, cudaMemcpyDefault));
    CUDA_CHECK(cudaMemcpy(b, a, n, cudaMemcpyDefault));
    std::memset(pinned_back, poison, n);
    CUDA_CHECK(cudaMemcpy(pinned_back, b, n, cudaMemcpyDefault));
    expect_same_bytes("cudaMemcpyDefault pageable in, device to device, pinned out", pinned_back,
                      source, n);

    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFreeHost(pinned_back));
    CUDA_CHECK(cudaFreeHost(pinned_source));
    return 0;
}

// --- migrate ------------------------------------------------------------------------

static void expect_pattern(const uint32_t *words, size_t n, uint32_t seed, const char *when)
{
    unsigned long long *counter;
    CUDA_CHECK(cudaMalloc(&counter, sizeof *counter));
    CUDA_CHECK(cudaMemset(counter, 0, sizeof *counter));
    count_mismatches<<<grid_for(n), block_size>>>(words, n, seed, counter);
    CUDA_CHECK(cudaGetLastError());
    unsigned long long mismatches = ~0ull;
    CUDA_CHECK(cudaMemcpy(&mismatches, counter, sizeof mismatches, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(counter));
    if (mismatches != 0)
        fail("%s: %llu of %zu words differ from the pattern", when, mismatches, n);
}

static int mode_migrate()
{
    typedef int (*owner_fn)(const void *);
    typedef int (*migrate_fn)(const void *, size_t, int);
    owner_fn owner = (owner_fn)dlsym(RTLD_DEFAULT, "mgpu_memory_owner");
    migrate_fn migrate = (migrate_fn)dlsym(RTLD_DEFAULT, "mgpu_memory_migrate");
    if (owner == nullptr || migrate == nullptr)
        fail("mgpu_memory_owner/mgpu_memory_migrate not found: not running under mgpu-run");
    const uint32_t seed = 0x0b5e0007;
    const size_t bytes = 64 * MiB, words = bytes / 4;
    uint32_t *buffer;
    CUDA_CHECK(cudaMalloc(&buffer, bytes));
    fill_words<<<grid_for(words), block_size>>>(buffer, words, seed);
    CUDA_CHECK(cudaGetLastError());
    const char *base = (const char *)buffer;
    // The distributed placement: GPU 0's part first, the last GPU's last.
    const int last = owner(base + bytes - 1);
    if (owner(base) != 0 || last < 1)
        fail("before: first byte on GPU %d, last on GPU %d; expected 0 and another", owner(base),
             last);
    size_t last_part = 0;
    while (last_part < bytes && owner(base + last_part) != last)
        last_part += 2 * MiB;

    // An unaligned stretch of the last GPU's part moves to GPU 0: its
    // pages, no more.
    const size_t from = last_part + 2 * MiB + 123, length = 3 * MiB;
    int r = migrate(base + from, length, 0);
    if (r != 0)
        fail("mgpu_memory_migrate of [%zu, +3 MiB) to GPU 0 returned %d", from, r);
    if (owner(base + from) != 0 || owner(base + from + length - 1) != 0 ||
        owner(base + last_part) != last || owner(base + bytes - 1) != last || owner(base) != 0)
        fail("after moving 3 MiB to GPU 0: owners %d %d %d %d", owner(base + last_part),
             owner(base + from), owner(base + from + length - 1), owner(base + bytes - 1));
    expect_pattern(buffer, words, seed, "after moving 3 MiB to GPU 0");

    // Everything to the last GPU, then a kernel writes anew through the
    // same address.
    if ((r = migrate(base, bytes, last)) != 0)
        fail("mgpu_memory_migrate of the whole buffer to GPU %d returned %d", last, r);
    for (size_t off = 0; off < bytes; off += 2 * MiB)
        if (owner(base + off) != last)
            fail("after moving all to GPU %d, byte %zu is on GPU %d", last, off, owner(base + off));
    expect_pattern(buffer, words, seed, "after moving everything to the last GPU");
    fill_words<<<grid_for(words), block_size>>>(buffer, words, seed + 1);
    CUDA_CHECK(cudaGetLastError());
    expect_pattern(buffer, words, seed + 1, "written again after the moves");

    // Bad requests are refused and change nothing.
    int host_word = 0;
    if (migrate(base, bytes, last + 1) == 0 || migrate(&host_word, 4, 0) == 0 ||
        migrate(base, bytes + 4 * MiB, 0) == 0)
        fail("a migration to GPU %d, of host memory or past the end was accepted", last + 1);
    if (owner(&host_word) != -1)
        fail("host memory has owner %d, not -1", owner(&host_word));
    expect_pattern(buffer, words, seed + 1, "after refused migrations");
    std::printf("migrate: owners and data as expected\n");
    CUDA_CHECK(cudaFree(buffer));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::printf("usage: distributed_memory write-read | pointer-attrs | pitched-2d | "
                    "oversubscribe BYTES | many-small | errors | copies | migrate\n");
        return 1;
    }
    mode_name = argv[1];
    const std::string mode = argv[1];
    int status;
    if (mode == "write-read")
        status = mode_write_read();
    else if (mode == "pointer-attrs")
        status = mode_pointer_attrs();
    else if (mode == "pitched-2d")
        status = mode_pitched_2d();
    else if (mode == "oversubscribe")
        status = mode_oversubscribe(argc > 2 ? argv[2] : nullptr);
    else if (mode == "many-small")
        status = mode_many_small();
    else if (mode == "errors")
        status = mode_errors();
    else if (mode == "copies")
        status = mode_copies();
    else if (mode == "migrate")
        status = mode_migrate();
    else {
        std::printf("distributed_memory: unknown mode '%s'\n", argv[1]);
        return 1;
    }
    if (status == 0)
        std::printf("distributed_memory %s: PASS\n", argv[1]);
    return status;
}
