// Fixtures for the PTX rewriter and the kernel analysis: one kernel per case
// the rewriter must handle. Each kernel's expected verdict from `mgpu-ptx list`
// is in split_kernels.expected.
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__device__ unsigned int launch_counter;
__constant__ float coefficients[16];

extern "C" __global__ void grid_1d(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

extern "C" __global__ void grid_2d(float *out, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height)
        out[y * width + x] = x + 1000.0f * y + gridDim.x;
}

extern "C" __global__ void grid_3d(int *out, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz)
        out[(z * ny + y) * nx + x] = x + 100 * y + 10000 * z + gridDim.z;
}

extern "C" __global__ void grid_stride_saxpy(float a, const float *x, float *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void shared_reverse(const int *in, int *out)
{
    __shared__ int tile[256];
    int base = blockIdx.x * 256;
    tile[threadIdx.x] = in[base + threadIdx.x];
    __syncthreads();
    out[base + threadIdx.x] = tile[255 - threadIdx.x];
}

extern "C" __global__ void histogram_unused_result(const unsigned char *data, unsigned int *bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[data[i]], 1u);
}

extern "C" __global__ void min_max_reductions(const int *values, int *lowest, int *highest, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMin(lowest, values[i]);
        atomicMax(highest, values[i]);
    }
}

__device__ __noinline__ void add_to(float *sum, float v)
{
    atomicAdd(sum, v);
}

extern "C" __global__ void float_sum_via_function(const float *values, float *sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        add_to(sum, values[i]);
}

extern "C" __global__ void two_operations(unsigned long long *counter)
{
    atomicAdd(counter, 1ull);
    atomicMax(counter, 5ull);
}

extern "C" __global__ void ticket_used_result(unsigned int *ticket, unsigned int *order)
{
    if (threadIdx.x == 0)
        order[blockIdx.x] = atomicAdd(ticket, 1u);
}

extern "C" __global__ void last_block_sum(const float *in, float *partial, unsigned int *done, float *total, int blocks)
{
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = in[blockIdx.x];
        __threadfence();
        unsigned int finished = atomicAdd(done, 1u);
        if (finished == blocks - 1) {
            float s = 0;
            for (int b = 0; b < blocks; b++)
                s += partial[b];
            *total = s;
            *done = 0;
        }
    }
}

__device__ __noinline__ int global_block_index()
{
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

extern "C" __global__ void block_ids_via_function(int *out)
{
    if (threadIdx.x == 0)
        out[global_block_index()] = global_block_index() + 1;
}

template <typename T> __global__ void scale_template(T *data, T factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] *= factor;
}
template __global__ void scale_template<float>(float *, float, int);
template __global__ void scale_template<double>(double *, double, int);

extern "C" __global__ void hello_printf(int tag)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        printf("block %d of %d says %d\n", blockIdx.x, gridDim.x, tag);
}

extern "C" __global__ void texture_read(cudaTextureObject_t tex, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex1Dfetch<float>(tex, i);
}

extern "C" __global__ void inline_asm_lane(unsigned int *out)
{
    unsigned int lane, block;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%ctaid.x;" : "=r"(block));
    out[block * blockDim.x + threadIdx.x] = lane;
}

extern "C" __global__ void cooperative_sync(int *data, int n)
{
    cg::grid_group grid = cg::this_grid();
    int i = grid.thread_rank();
    if (i < n)
        data[i] = i;
    grid.sync();
    if (i < n)
        data[i] += data[(i + 1) % n];
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_kernel(int *out)
{
    cg::cluster_group cluster = cg::this_cluster();
    out[blockIdx.x] = cluster.block_rank();
    cluster.sync();
}

extern "C" __global__ void count_launches(int *out)
{
    if (threadIdx.x == 0) {
        atomicAdd(&launch_counter, 1u);
        out[blockIdx.x] = blockIdx.x;
    }
}

extern "C" __global__ void apply_coefficients(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * coefficients[i % 16];
}

extern "C" __global__ void pointer_chase(float **table, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        table[i][0] = 1.0f;
}
