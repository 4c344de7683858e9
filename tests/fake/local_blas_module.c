/* A library in the shape of a framework's extension module (PyTorch's
 * libtorch_cuda.so, numpy's and SciPy's BLAS users): loaded by its
 * program with dlopen(RTLD_LOCAL), its BLAS in its own scope through its
 * run path, where the global scope does not see it. Built twice:
 * with -DMODULE_CUBLAS against the fake cuBLAS, computing GEMMs on device
 * memory of its own handle; with -DMODULE_CPU_BLAS against the CPU BLAS.
 * module_gemms() runs a few GEMMs, large and small, checks every element
 * of each C against the reference, prints one line and returns the number
 * of wrong cases. tests/fake-local-blas.sh runs it under mgpu-run, whose
 * interposers must reach this library's BLAS, not fail or skip the call. */
#include "../blas/gemm_reference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int module_gemms(void);

/* m x n x k, column-major, no transposes; C checked after. */
struct shape {
    int m, n, k;
};
static const struct shape shapes[] = {{96, 64, 40}, {8, 8, 8}, {33, 70, 17}};
#define SHAPES (int)(sizeof shapes / sizeof shapes[0])

static int compare(const char *what, const struct shape *s, const double *got, const double *want)
{
    for (long long i = 0; i < (long long)s->m * s->n; i++)
        if (got[i] != want[i] && (got[i] - want[i] > 1e-9 || want[i] - got[i] > 1e-9)) {
            printf("module: %s %dx%dx%d: C[%lld] is %g, not %g\n", what, s->m, s->n, s->k, i,
                   got[i], want[i]);
            return 1;
        }
    return 0;
}

/* A, B, C (beta 0.5) and the reference result, in host memory. */
static void operands(const struct shape *s, double **a, double **b, double **c, double **want)
{
    *a = malloc(sizeof(double) * (size_t)s->m * (size_t)s->k);
    *b = malloc(sizeof(double) * (size_t)s->k * (size_t)s->n);
    *c = malloc(sizeof(double) * (size_t)s->m * (size_t)s->n);
    *want = malloc(sizeof(double) * (size_t)s->m * (size_t)s->n);
    if (!*a || !*b || !*c || !*want) {
        printf("module: out of memory\n");
        exit(1);
    }
    reference_fill(ELEM_R64, *a, (long long)s->m * s->k, 1u + (unsigned)s->m);
    reference_fill(ELEM_R64, *b, (long long)s->k * s->n, 2u + (unsigned)s->n);
    reference_fill(ELEM_R64, *c, (long long)s->m * s->n, 3u + (unsigned)s->k);
    memcpy(*want, *c, sizeof(double) * (size_t)s->m * (size_t)s->n);
    reference_gemm(ELEM_R64, ELEM_R64, ELEM_R64, 0, 0, s->m, s->n, s->k, 1.5, *a, s->m, *b, s->k,
                   0.5, *want, s->m);
}

#ifdef MODULE_CUBLAS
#include <cublas_v2.h>
#include <cuda.h>

static CUdeviceptr upload(const void *host, size_t bytes)
{
    CUdeviceptr d = 0;
    if (cuMemAlloc(&d, bytes) != CUDA_SUCCESS || cuMemcpyHtoD(d, host, bytes) != CUDA_SUCCESS) {
        printf("module: device memory failed\n");
        exit(1);
    }
    return d;
}

EXPORT int module_gemms(void)
{
    CUdevice dev;
    CUcontext ctx;
    cublasHandle_t h;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        printf("module: no CUDA context\n");
        return 1;
    }
    cublasStatus_t st = cublasCreate(&h);
    if (st != CUBLAS_STATUS_SUCCESS) {
        printf("module: cublasCreate returned %d\n", (int)st);
        return 1;
    }
    int wrong = 0;
    for (int i = 0; i < SHAPES; i++) {
        const struct shape *s = &shapes[i];
        double *a, *b, *c, *want;
        operands(s, &a, &b, &c, &want);
        size_t cb = sizeof(double) * (size_t)s->m * (size_t)s->n;
        CUdeviceptr da = upload(a, sizeof(double) * (size_t)s->m * (size_t)s->k);
        CUdeviceptr db = upload(b, sizeof(double) * (size_t)s->k * (size_t)s->n);
        CUdeviceptr dc = upload(c, cb);
        double alpha = 1.5, beta = 0.5;
        st = cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, s->m, s->n, s->k, &alpha, (const double *)da,
                         s->m, (const double *)db, s->k, &beta, (double *)dc, s->m);
        if (st != CUBLAS_STATUS_SUCCESS) {
            printf("module: cublasDgemm %dx%dx%d returned %d\n", s->m, s->n, s->k, (int)st);
            wrong++;
        } else if (cuCtxSynchronize() != CUDA_SUCCESS || cuMemcpyDtoH(c, dc, cb) != CUDA_SUCCESS) {
            printf("module: reading C back failed\n");
            wrong++;
        } else {
            wrong += compare("cublasDgemm", s, c, want);
        }
        cuMemFree(da);
        cuMemFree(db);
        cuMemFree(dc);
        free(a);
        free(b);
        free(c);
        free(want);
    }
    cublasDestroy(h);
    printf("module: cuBLAS %d of %d cases correct\n", SHAPES - wrong, SHAPES);
    return wrong;
}
#endif

#ifdef MODULE_CPU_BLAS
#include <cblas.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *,
            const double *, const int *, const double *, const int *, const double *, double *,
            const int *, size_t, size_t);

EXPORT int module_gemms(void)
{
    int wrong = 0;
    for (int i = 0; i < SHAPES; i++) {
        const struct shape *s = &shapes[i];
        double *a, *b, *c, *want;
        operands(s, &a, &b, &c, &want);
        double *c2 = malloc(sizeof(double) * (size_t)s->m * (size_t)s->n);
        memcpy(c2, c, sizeof(double) * (size_t)s->m * (size_t)s->n);
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, s->m, s->n, s->k, 1.5, a, s->m, b,
                    s->k, 0.5, c, s->m);
        wrong += compare("cblas_dgemm", s, c, want);
        double alpha = 1.5, beta = 0.5;
        dgemm_("N", "N", &s->m, &s->n, &s->k, &alpha, a, &s->m, b, &s->k, &beta, c2, &s->m, 1, 1);
        wrong += compare("dgemm_", s, c2, want);
        free(a);
        free(b);
        free(c);
        free(c2);
        free(want);
    }
    printf("module: CPU BLAS %d of %d cases correct\n", 2 * SHAPES - wrong, 2 * SHAPES);
    return wrong;
}
#endif
