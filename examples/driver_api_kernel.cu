// driver_api_kernel: the kernel that examples/driver_api.c runs through the
// driver API. The build turns it into PTX text (nvcc -ptx) and embeds that in
// the program as a string, which the program hands to cuModuleLoadData.
// extern "C" keeps the name unmangled for cuModuleGetFunction; the parameter
// order gives a packed layout without padding, for the `extra` launch form.

// z = a*x + b*y, one element per thread.
extern "C" __global__ void axpby(const float *x, const float *y, float *z, unsigned long long n,
                                 float a, float b)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        z[i] = __fmaf_rn(a, x[i], __fmul_rn(b, y[i]));
}
