// A CUDA runtime program whose kernels use what a rewritten module must keep
// one of: a __device__ counter (read back with cudaMemcpyFromSymbol, reset
// through the address cudaGetSymbolAddress gives), a __constant__ array the
// host rewrites between launches with cudaMemcpyToSymbol and
// cudaMemcpyToSymbolAsync, a non-inlined device function that reads
// blockIdx, and dynamic shared memory above 48 KiB (cudaFuncSetAttribute).
// Before any of that, eight host threads launch a kernel at once, so that
// under mgpu they race to build the module's rewritten modules.
// It checks every result against the host and prints one line per check.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__device__ unsigned block_counter;
__constant__ float coefficients[4];

__device__ __noinline__ unsigned block_number()
{
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

__global__ void weigh(float *out, unsigned width)
{
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y;
    if (x < width)
        out[y * width + x] = coefficients[(x + y) % 4] * (float)block_number();
    if (threadIdx.x == 0)
        atomicAdd(&block_counter, 1u);
}

// Sums its block's slice through a 64 KiB dynamic shared buffer.
__global__ void staged_sum(const float *in, float *out, unsigned per_block)
{
    extern __shared__ float stage[];
    for (unsigned i = threadIdx.x; i < per_block; i += blockDim.x)
        stage[i] = in[blockIdx.x * per_block + i];
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0;
        for (unsigned i = 0; i < per_block; i++)
            s += stage[i];
        out[blockIdx.x] = s;
    }
}

__global__ void stamp(unsigned *out, unsigned value)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] = value + blockIdx.x;
}

static int failures;

static void check(bool ok, const char *what)
{
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
}

#define CUDA(call)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                          \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

static bool weigh_matches(const std::vector<float> &got, const float *coef, unsigned width,
                          unsigned gx, unsigned rows)
{
    for (unsigned y = 0; y < rows; y++)
        for (unsigned x = 0; x < width; x++) {
            unsigned block = x / 128 + gx * y;
            if (got[y * width + x] != coef[(x + y) % 4] * (float)block)
                return false;
        }
    return true;
}

// Each thread launches stamp on its own stream and checks its own buffer.
static bool racing_first_launches()
{
    const unsigned threads = 8, blocks = 64, n = blocks * 256;
    std::vector<int> ok(threads, 0);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; t++)
        pool.emplace_back([&, t] {
            unsigned *d;
            cudaStream_t s;
            std::vector<unsigned> h(n);
            if (cudaStreamCreate(&s) != cudaSuccess ||
                cudaMalloc(&d, n * sizeof(unsigned)) != cudaSuccess)
                return;
            stamp<<<blocks, 256, 0, s>>>(d, 1000 * t);
            if (cudaMemcpyAsync(h.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s) ==
                    cudaSuccess &&
                cudaStreamSynchronize(s) == cudaSuccess) {
                ok[t] = 1;
                for (unsigned i = 0; i < n; i++)
                    ok[t] &= h[i] == 1000 * t + i / 256;
            }
            cudaFree(d);
            cudaStreamDestroy(s);
        });
    for (auto &th : pool)
        th.join();
    for (unsigned t = 0; t < threads; t++)
        if (!ok[t])
            return false;
    return true;
}

int main()
{
    check(racing_first_launches(), "eight threads launching the first kernel at once");

    const unsigned width = 4000, rows = 64, gx = (width + 127) / 128;
    float *out;
    CUDA(cudaMalloc(&out, width * rows * sizeof(float)));
    std::vector<float> got(width * rows);

    float coef[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    CUDA(cudaMemcpyToSymbol(coefficients, coef, sizeof coef));
    weigh<<<dim3(gx, rows), 128>>>(out, width);
    CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    check(weigh_matches(got, coef, width, gx, rows), "constants written before the first launch");

    float coef2[4] = {-1.0f, 0.5f, 7.0f, 9.0f};
    CUDA(cudaMemcpyToSymbol(coefficients, coef2, sizeof coef2));
    weigh<<<dim3(gx, rows), 128>>>(out, width);
    CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    check(weigh_matches(got, coef2, width, gx, rows), "constants rewritten between launches");

    float coef3[4] = {3.0f, 3.5f, -2.0f, 11.0f};
    CUDA(cudaMemcpyToSymbolAsync(coefficients, coef3, sizeof coef3, 0, cudaMemcpyHostToDevice, 0));
    weigh<<<dim3(gx, rows), 128>>>(out, width);
    CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    check(weigh_matches(got, coef3, width, gx, rows), "constants written in stream order");

    unsigned blocks = 0;
    CUDA(cudaMemcpyFromSymbol(&blocks, block_counter, sizeof blocks));
    check(blocks == 3 * gx * rows, "the __device__ counter counted every block of three launches");

    unsigned *counter_address;
    CUDA(cudaGetSymbolAddress((void **)&counter_address, block_counter));
    CUDA(cudaMemset(counter_address, 0, sizeof(unsigned)));
    weigh<<<dim3(gx, rows), 128>>>(out, width);
    CUDA(cudaMemcpy(&blocks, counter_address, sizeof blocks, cudaMemcpyDeviceToHost));
    check(blocks == gx * rows, "the counter's address is the one kernels use");

    const unsigned per_block = 16384, nblocks = 96; // 64 KiB of shared memory per block
    CUDA(cudaFuncSetAttribute(staged_sum, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              per_block * sizeof(float)));
    std::vector<float> in(per_block * nblocks);
    for (size_t i = 0; i < in.size(); i++)
        in[i] = (float)(i % 7);
    float *d_in, *d_sums;
    CUDA(cudaMalloc(&d_in, in.size() * sizeof(float)));
    CUDA(cudaMalloc(&d_sums, nblocks * sizeof(float)));
    CUDA(cudaMemcpy(d_in, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice));
    staged_sum<<<nblocks, 256, per_block * sizeof(float)>>>(d_in, d_sums, per_block);
    CUDA(cudaGetLastError());
    std::vector<float> sums(nblocks);
    CUDA(cudaMemcpy(sums.data(), d_sums, nblocks * sizeof(float), cudaMemcpyDeviceToHost));
    bool sums_ok = true;
    for (unsigned b = 0; b < nblocks; b++) {
        float s = 0;
        for (unsigned i = 0; i < per_block; i++)
            s += in[b * per_block + i];
        sums_ok &= sums[b] == s;
    }
    check(sums_ok, "64 KiB of dynamic shared memory, allowed by cudaFuncSetAttribute");

    CUDA(cudaFree(out));
    CUDA(cudaFree(d_in));
    CUDA(cudaFree(d_sums));
    std::printf("%s\n", failures ? "module_state: FAIL" : "module_state: PASS");
    return failures ? 1 : 0;
}
