// The kernels that the driver-API tests load: y[i] = a * x[i] + bias, and a
// counter of blocks in a __device__ variable.
__constant__ float scale_bias;
__device__ unsigned scale_blocks;

extern "C" __global__ void scale(float *y, const float *x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + scale_bias;
    if (threadIdx.x == 0)
        atomicAdd(&scale_blocks, 1u);
}
