// Fixture for the PTX tools' tests: a few kinds of kernels, built by
// `make check` into programs with each --compress-mode, with -rdc, without
// PTX, and as a cubin, a fatbin and PTX text.
__device__ int launches;
__constant__ float coefficients[4];

__device__ __noinline__ int block_of(int i) { return i / (int)blockDim.x + (int)blockIdx.x * 0; }

__global__ void axpy(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] += a * x[i] * coefficients[block_of(i) & 3];
}

template <typename T> __global__ void fill(T *out, T value, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = value;
}
template __global__ void fill<float>(float *, float, int);
template __global__ void fill<int>(int *, int, int);

__global__ void count_launch()
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        atomicAdd(&launches, 1);
}

int main() { return 0; }
