/* driver_api: a program written against the CUDA driver API alone, in C and
 * linked with -lcuda, as many libraries and older codes are: cuInit, the
 * device's primary context, a module loaded from PTX text embedded in the
 * program (made at build time from driver_api_kernel.cu), device memory,
 * and z = a*x + b*y launched both ways cuLaunchKernel takes parameters:
 * once (the untimed warm-up) packed into one buffer through `extra`
 * (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE), then in the timed loops as the
 * array of pointers to each parameter. Each form uses other coefficients and
 * its result is checked exactly (small whole numbers and quarters: every
 * float result is exact). */
#include <cuda.h>
#include <stddef.h>
#include "example_common.h"
#include "examples/driver_api_kernel_ptx.h" /* axpby_ptx: the PTX text */

static const struct example_defaults defaults = {
    "driver_api", "elements per array", 1ull << 28, 1ull << 20, 20, 5, 5, 3,
};

/* The kernel's parameters as the `extra` form passes them: each at its
 * natural alignment, in order, as the PTX declares them. */
struct axpby_params {
    CUdeviceptr x, y, z;
    unsigned long long n;
    float a, b;
};
_Static_assert(offsetof(struct axpby_params, n) == 24 && offsetof(struct axpby_params, a) == 32 &&
                   offsetof(struct axpby_params, b) == 36 && sizeof(struct axpby_params) == 40,
               "axpby_params must match the kernel's parameter layout");

#define TRY(call)                                                                                  \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *name_ = NULL;                                                              \
            cuGetErrorName(r_, &name_);                                                            \
            fprintf(stderr, "driver_api:%d: %s failed: %s\n", __LINE__, #call,                     \
                    name_ ? name_ : "unknown error");                                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static float initial_x(size_t i)
{
    return (float)(i % 1000) * 0.25f;
}
static float initial_y(size_t i)
{
    return (float)(i % 37) + 1.0f;
}

/* Counts the elements of z that are not a*x + b*y; reports the first. */
static size_t count_wrong(const float *z, size_t n, float a, float b, const char *form)
{
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        float expected = a * initial_x(i) + b * initial_y(i);
        if (z[i] != expected && wrong++ == 0)
            fprintf(stderr, "driver_api: %s launch: element %zu is %g, expected %g\n", form, i,
                    (double)z[i], (double)expected);
    }
    return wrong;
}

int main(int argc, char **argv)
{
    struct example_options options = example_parse_options(argc, argv, &defaults);
    size_t n = options.size;
    const unsigned threads = 256;
    if (n > (size_t)0x7fffffff * threads)
        example_bad_size(&defaults, "too many elements for one block per 256");
    unsigned blocks = (unsigned)((n + threads - 1) / threads);
    size_t bytes = n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    float *ms_per_launch = malloc((size_t)options.repeats * sizeof(float));
    if (!x || !y || !z || !ms_per_launch) {
        fprintf(stderr, "driver_api: out of host memory for %zu elements\n", n);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        x[i] = initial_x(i);
        y[i] = initial_y(i);
    }

    CUdevice device;
    CUcontext context;
    CUmodule module;
    CUfunction axpby;
    CUstream stream;
    TRY(cuInit(0));
    TRY(cuDeviceGet(&device, 0));
    TRY(cuDevicePrimaryCtxRetain(&context, device));
    TRY(cuCtxSetCurrent(context));
    TRY(cuModuleLoadData(&module, axpby_ptx));
    TRY(cuModuleGetFunction(&axpby, module, "axpby"));
    TRY(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
    CUdeviceptr dx, dy, dz;
    TRY(cuMemAlloc(&dx, bytes));
    TRY(cuMemAlloc(&dy, bytes));
    TRY(cuMemAlloc(&dz, bytes));
    TRY(cuMemcpyHtoD(dx, x, bytes));
    TRY(cuMemcpyHtoD(dy, y, bytes));

    /* The warm-up: parameters packed into one buffer, passed through extra. */
    const float packed_a = 2.0f, packed_b = 3.0f;
    struct axpby_params packed = {dx, dy, dz, n, packed_a, packed_b};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &packed_size, CU_LAUNCH_PARAM_END};
    TRY(cuLaunchKernel(axpby, blocks, 1, 1, threads, 1, 1, 0, stream, NULL, extra));
    TRY(cuCtxSynchronize());
    TRY(cuMemcpyDtoH(z, dz, bytes));
    size_t wrong = count_wrong(z, n, packed_a, packed_b, "extra");

    /* The timed loops: an array of pointers to each parameter. */
    unsigned long long count = n;
    float a = -1.0f, b = 4.0f;
    void *params[] = {&dx, &dy, &dz, &count, &a, &b};
    CUevent start, stop;
    TRY(cuEventCreate(&start, CU_EVENT_DEFAULT));
    TRY(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    for (int r = 0; r < options.repeats; r++) {
        TRY(cuEventRecord(start, stream));
        for (int i = 0; i < options.iterations; i++)
            TRY(cuLaunchKernel(axpby, blocks, 1, 1, threads, 1, 1, 0, stream, params, NULL));
        TRY(cuEventRecord(stop, stream));
        TRY(cuEventSynchronize(stop));
        float ms = 0;
        TRY(cuEventElapsedTime(&ms, start, stop));
        ms_per_launch[r] = ms / (float)options.iterations;
    }
    TRY(cuCtxSynchronize());
    TRY(cuMemcpyDtoH(z, dz, bytes));
    wrong += count_wrong(z, n, a, b, "params");

    if (wrong) {
        fprintf(stderr, "driver_api: %zu wrong elements in all\n", wrong);
        printf("driver_api: %zu elements, launched through extra and through params: FAIL\n", n);
        return 1;
    }
    printf("driver_api: %zu elements, launched through extra and through params: PASS checksum "
           "0x%016llx\n",
           n, (unsigned long long)example_checksum(z, bytes, EXAMPLE_CHECKSUM_START));
    example_print_time(&defaults, &options, example_median(ms_per_launch, options.repeats));

    TRY(cuEventDestroy(start));
    TRY(cuEventDestroy(stop));
    TRY(cuMemFree(dx));
    TRY(cuMemFree(dy));
    TRY(cuMemFree(dz));
    TRY(cuStreamDestroy(stream));
    TRY(cuModuleUnload(module));
    TRY(cuDevicePrimaryCtxRelease(device));
    free(x);
    free(y);
    free(z);
    free(ms_per_launch);
    return 0;
}
