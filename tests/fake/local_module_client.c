/* A program that loads a library the way Python loads an extension
 * module: dlopen(PATH, RTLD_NOW | RTLD_LOCAL), then calls its
 * module_gemms() (tests/fake/local_blas_module.c). Built twice: plain,
 * and with -DOWN_CUBLAS linked with a second cuBLAS of its own (a second
 * build of the fake), whose GEMM it runs before and after the module's,
 * so that a call handed to the wrong cuBLAS, or a handle given to the
 * wrong library, shows. Exits with the number of wrong cases. */
#include <dlfcn.h>
#include <stdio.h>

#ifdef OWN_CUBLAS
#include <cublas_v2.h>
#include <cuda.h>

/* A 4x4 identity times B with the program's own cuBLAS; 0 when right. */
static int own_gemm(void)
{
    CUdevice dev;
    CUcontext ctx;
    cublasHandle_t h;
    float a[16] = {0}, b[16], c[16] = {0}, one = 1, zero = 0;
    for (int i = 0; i < 16; i++)
        b[i] = (float)i;
    for (int i = 0; i < 4; i++)
        a[i * 5] = 1;
    CUdeviceptr da, db, dc;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemAlloc(&da, sizeof a) != CUDA_SUCCESS ||
        cuMemAlloc(&db, sizeof b) != CUDA_SUCCESS || cuMemAlloc(&dc, sizeof c) != CUDA_SUCCESS ||
        cuMemcpyHtoD(da, a, sizeof a) != CUDA_SUCCESS ||
        cuMemcpyHtoD(db, b, sizeof b) != CUDA_SUCCESS ||
        cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        printf("client: set-up failed\n");
        return 1;
    }
    cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (float *)da, 4,
                                    (float *)db, 4, &zero, (float *)dc, 4);
    int wrong = st != CUBLAS_STATUS_SUCCESS || cuMemcpyDtoH(c, dc, sizeof c) != CUDA_SUCCESS;
    for (int i = 0; i < 16 && !wrong; i++)
        wrong = c[i] != b[i];
    printf("client: its own cuBLAS's Sgemm %s (status %d)\n", wrong ? "WRONG" : "correct", (int)st);
    cublasDestroy(h);
    cuMemFree(da);
    cuMemFree(db);
    cuMemFree(dc);
    return wrong;
}
#else
static int own_gemm(void)
{
    return 0;
}
#endif

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODULE.so\n", argv[0]);
        return 2;
    }
    int wrong = own_gemm();
    void *module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (module == NULL) {
        fprintf(stderr, "client: %s\n", dlerror());
        return 2;
    }
    int (*gemms)(void) = (int (*)(void))dlsym(module, "module_gemms");
    if (gemms == NULL) {
        fprintf(stderr, "client: %s\n", dlerror());
        return 2;
    }
    wrong += gemms();
    wrong += own_gemm();
    return wrong;
}
