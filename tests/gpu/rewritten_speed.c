/* A rewritten module runs as fast as the program's own module. tiled_matmul.ptx
 * (tests/gpu/tiled_matmul.cu) is loaded on GPU 0 as a program loads PTX
 * (cuModuleLoadData) and as mgpu's rewritten module (gpu_modules.c); both
 * multiply the same two 2048 x 2048 matrices over the whole grid, in
 * interleaved rounds timed with events. The products must be identical and
 * the rewritten module's median time at most 1.08 times the program's: compiled as
 * relocatable code (through cuLink*, as gpu_modules.c once did), the rewritten one
 * took about 1.2 times as long on an H200.
 *   rewritten_speed tiled_matmul.ptx */
#include "direct_driver.h"
#include "modules/gpu_modules.h"

#include <string.h>

#define SIDE 2048
#define ROUNDS 7
#define LAUNCHES_PER_ROUND 3
#define MOST_SLOWER 1.08

/* Milliseconds per launch of `launches` back-to-back launches. */
static float time_launches(CUfunction f, void **args, int launches)
{
    CUevent start, stop;
    CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CU(cuEventRecord(start, NULL));
    for (int i = 0; i < launches; i++)
        CU(cuLaunchKernel(f, SIDE / 32, SIDE / 32, 1, 32, 32, 1, 0, NULL, args, NULL));
    CU(cuEventRecord(stop, NULL));
    CU(cuEventSynchronize(stop));
    float ms;
    CU(cuEventElapsedTime(&ms, start, stop));
    CU(cuEventDestroy(start));
    CU(cuEventDestroy(stop));
    return ms / (float)launches;
}

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: rewritten_speed tiled_matmul.ptx\n");
        return 2;
    }
    char err[512];
    load_driver_or_skip();
    CUdevice dev;
    CUcontext ctx;
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxPushCurrent(ctx));
    size_t ptx_size;
    char *ptx = read_text_file(argv[1], &ptx_size);
    CUmodule program;
    CU(cuModuleLoadData(&program, ptx));
    struct mgpu_gpu_modules rewritten;
    if (mgpu_gpu_modules_load(&rewritten, ptx, ptx_size, program, 1, &ctx, err, sizeof err) != 0) {
        fprintf(stderr, "loading the rewritten module: %s\n", err);
        return 1;
    }
    CUfunction own, rewritten_fn;
    size_t grid_offset;
    unsigned nparams;
    CU(cuModuleGetFunction(&own, program, "tiled_matmul"));
    if (mgpu_gpu_modules_function(&rewritten, 0, "tiled_matmul", &rewritten_fn, &grid_offset,
                                  &nparams, err, sizeof err) != 0 ||
        nparams != 4) {
        fprintf(stderr, "the rewritten module's tiled_matmul: %s\n",
                nparams != 4 ? "not 4 parameters" : err);
        return 1;
    }

    size_t elements = (size_t)SIDE * SIDE, bytes = elements * sizeof(float);
    float *host = malloc(bytes), *own_product = malloc(bytes), *rewritten_product = malloc(bytes);
    for (size_t i = 0; i < elements; i++)
        host[i] = (float)((int)(i * 37 % 17) - 8) / 8.0f;
    CUdeviceptr a, b, c;
    CU(cuMemAlloc(&a, bytes));
    CU(cuMemAlloc(&b, bytes));
    CU(cuMemAlloc(&c, bytes));
    CU(cuMemcpyHtoD(a, host, bytes));
    CU(cuMemcpyHtoD(b, host, bytes));
    int side = SIDE;
    struct mgpu_grid_param whole = {{0, 0, 0}, {SIDE / 32, SIDE / 32, 1}, 0, 0, 0, 0, 0, 0};
    void *args[] = {&a, &b, &c, &side, &whole};

    time_launches(own, args, 1); /* warm-up; also the product to compare */
    CU(cuMemcpyDtoH(own_product, c, bytes));
    time_launches(rewritten_fn, args, 1);
    CU(cuMemcpyDtoH(rewritten_product, c, bytes));
    int same = memcmp(own_product, rewritten_product, bytes) == 0;

    float own_ms[ROUNDS], rewritten_ms[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        if (r % 2 == 0) {
            own_ms[r] = time_launches(own, args, LAUNCHES_PER_ROUND);
            rewritten_ms[r] = time_launches(rewritten_fn, args, LAUNCHES_PER_ROUND);
        } else {
            rewritten_ms[r] = time_launches(rewritten_fn, args, LAUNCHES_PER_ROUND);
            own_ms[r] = time_launches(own, args, LAUNCHES_PER_ROUND);
        }
    }
    qsort(own_ms, ROUNDS, sizeof(float), by_value);
    qsort(rewritten_ms, ROUNDS, sizeof(float), by_value);
    float own_median = own_ms[ROUNDS / 2], rewritten_median = rewritten_ms[ROUNDS / 2];
    double ratio = rewritten_median / own_median;
    printf("tiled_matmul %d x %d, median of %d rounds: program's module %.3f ms, mgpu's rewritten "
           "module "
           "%.3f ms (%.2fx)\n",
           SIDE, SIDE, ROUNDS, own_median, rewritten_median, ratio);
    printf("%s: the products are %s\n", same ? "ok" : "FAIL", same ? "identical" : "different");
    int fast = ratio <= MOST_SLOWER;
    printf("%s: the rewritten module takes %.2fx the program's time (at most %.2fx)\n",
           fast ? "ok" : "FAIL", ratio, MOST_SLOWER);

    mgpu_gpu_modules_unload(&rewritten);
    CU(cuModuleUnload(program));
    CU(cuMemFree(a));
    CU(cuMemFree(b));
    CU(cuMemFree(c));
    free(host);
    free(own_product);
    free(rewritten_product);
    free(ptx);
    return same && fast ? 0 : 1;
}
