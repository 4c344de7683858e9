/* A driver-API program (linked with -lcuda) that loads scale.cu's kernel in
 * every form mgpu must capture, and checks each result:
 *   1. PTX text with cuModuleLoadData, launched with a parameter array and
 *      with an `extra` buffer; its __device__ block counter read and reset
 *      through cuModuleGetGlobal; its __constant__ bias written twice
 *      through an address looked up once;
 *   2. the cubin cuLinkComplete made from the PTX;
 *   3. a cubin (machine code only) from a file, with cuModuleLoad;
 *   4. a fatbin (cubin and PTX) whose PTX entry is corrupt: the driver
 *      loads the cubin, mgpu must not crash and runs it as loaded;
 *   5. garbage, which the driver refuses with its own error.
 * Under mgpu-run the report says which of these got per-GPU rewritten modules.
 *   module_loads scale.ptx scale.cubin scale.fatbin */
#include "ptx/fatbin.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_check.h"

#define N 10000u
#define BLOCK 256u
#define BLOCKS ((N + BLOCK - 1) / BLOCK)

static int failures;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
}

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        printf("FAIL: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
        printf("FAIL: cannot read %s\n", path);
        exit(1);
    }
    data[n] = '\0';
    fclose(f);
    *size = (size_t)n;
    return data;
}

static CUdeviceptr x_dev, y_dev;
static float x_host[N], y_host[N];

/* Runs scale(y, x, a, N) from `module` and checks y = a x + bias. */
static void run_scale(CUmodule module, float a, float bias, int use_extra, const char *what)
{
    CUfunction fn;
    CU(cuModuleGetFunction(&fn, module, "scale"));
    unsigned n = N;
    if (use_extra) {
        struct {
            CUdeviceptr y, x;
            float a;
            unsigned n;
        } buffer = {y_dev, x_dev, a, n};
        size_t size = sizeof buffer;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                         &size, CU_LAUNCH_PARAM_END};
        CU(cuLaunchKernel(fn, BLOCKS, 1, 1, BLOCK, 1, 1, 0, NULL, NULL, extra));
    } else {
        void *params[] = {&y_dev, &x_dev, &a, &n};
        CU(cuLaunchKernel(fn, BLOCKS, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL));
    }
    CU(cuMemcpyDtoH(y_host, y_dev, sizeof y_host));
    int ok = 1;
    for (unsigned i = 0; i < N; i++)
        ok &= y_host[i] == a * x_host[i] + bias;
    check(ok, what);
}

static int find_ptx(const struct mgpu_fatbin_entry *e, void *ctx)
{
    if (e->kind == MGPU_CODE_PTX) {
        *(struct mgpu_fatbin_entry *)ctx = *e;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        printf("usage: module_loads scale.ptx scale.cubin scale.fatbin\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    for (unsigned i = 0; i < N; i++)
        x_host[i] = (float)(i % 1000) * 0.25f;
    CU(cuMemAlloc(&x_dev, sizeof x_host));
    CU(cuMemAlloc(&y_dev, sizeof y_host));
    CU(cuMemcpyHtoD(x_dev, x_host, sizeof x_host));

    /* 1. PTX text. */
    size_t ptx_size;
    char *ptx = read_file(argv[1], &ptx_size);
    CUmodule from_ptx;
    CU(cuModuleLoadData(&from_ptx, ptx));
    run_scale(from_ptx, 3.0f, 0.0f, 0, "PTX module, parameter array");
    run_scale(from_ptx, -2.0f, 0.0f, 1, "PTX module, extra buffer");
    CUdeviceptr bias_at, blocks_at;
    size_t bytes;
    CU(cuModuleGetGlobal(&bias_at, &bytes, from_ptx, "scale_bias"));
    CU(cuModuleGetGlobal(&blocks_at, &bytes, from_ptx, "scale_blocks"));
    unsigned blocks = 0;
    CU(cuMemcpyDtoH(&blocks, blocks_at, sizeof blocks));
    check(blocks == 2 * BLOCKS, "the __device__ counter counted both launches");
    CU(cuMemsetD32(blocks_at, 0, 1));
    float bias = 1.5f;
    CU(cuMemcpyHtoD(bias_at, &bias, sizeof bias));
    run_scale(from_ptx, 2.0f, 1.5f, 0, "__constant__ written through its address");
    bias = -4.0f;
    CU(cuMemcpyHtoD(bias_at, &bias, sizeof bias));
    run_scale(from_ptx, 2.0f, -4.0f, 0, "__constant__ written again through the same address");
    CU(cuMemcpyDtoH(&blocks, blocks_at, sizeof blocks));
    check(blocks == 2 * BLOCKS, "the counter reset through its address counts on");
    CU(cuModuleUnload(from_ptx));

    /* 2. The output of a link of the PTX. */
    CUlinkState link;
    void *cubin;
    size_t cubin_size;
    CU(cuLinkCreate(0, NULL, NULL, &link));
    CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, ptx_size + 1, "scale.ptx", 0, NULL, NULL));
    CU(cuLinkComplete(link, &cubin, &cubin_size));
    CUmodule linked;
    CU(cuModuleLoadData(&linked, cubin));
    CU(cuLinkDestroy(link));
    run_scale(linked, 5.0f, 0.0f, 0, "module linked with cuLink*");
    CU(cuModuleUnload(linked));

    /* 3. Machine code only, from a file. */
    CUmodule sass;
    CU(cuModuleLoad(&sass, argv[2]));
    run_scale(sass, 7.0f, 0.0f, 0, "cubin without PTX");
    CU(cuModuleUnload(sass));

    /* 4. A fatbin whose PTX entry is garbage; its cubin is fine. */
    size_t fatbin_size;
    char *fatbin = read_file(argv[3], &fatbin_size);
    struct mgpu_fatbin_entry entry = {0};
    char err[256];
    if (mgpu_fatbin_walk(fatbin, fatbin_size, find_ptx, &entry, err, sizeof err) < 0 ||
        entry.payload == NULL) {
        printf("FAIL: %s has no PTX entry (%s)\n", argv[3], err);
        return 1;
    }
    memset((char *)entry.payload + entry.payload_size / 4, 0x5a, entry.payload_size / 2);
    CUmodule damaged;
    CU(cuModuleLoadData(&damaged, fatbin));
    run_scale(damaged, 9.0f, 0.0f, 0, "fatbin with a corrupt PTX entry");
    CU(cuModuleUnload(damaged));

    /* 5. Garbage: the driver's own error. */
    static const char garbage[] = "\x50\xed\x55\xba garbage that is no image";
    CUmodule none;
    CUresult r = cuModuleLoadData(&none, garbage);
    check(r != CUDA_SUCCESS, "garbage is refused by the driver");

    CU(cuMemFree(x_dev));
    CU(cuMemFree(y_dev));
    free(ptx);
    free(fatbin);
    CU(cuDevicePrimaryCtxRelease(dev));
    printf("%s\n", failures ? "module_loads: FAIL" : "module_loads: PASS");
    return failures != 0;
}
