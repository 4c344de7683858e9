// The kernel that the driver-API tests load as PTX: y[i] = a * x[i].
extern "C" __global__ void scale(float *y, const float *x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i];
}
