/* A library in the shape of a framework's extension module (PyTorch's
 * libtorch_cuda.so, numpy's and SciPy's BLAS users): loaded by its
 * program with dlopen(RTLD_LOCAL), its BLAS in its own scope through its
 * run path, where the global scope does not see it. Built twice:
 * with -DMODULE_CUBLAS against the fake cuBLAS and cuBLASLt (and, as
 * libcublas_module_gpu.so, against the real ones: tests/gpu-local-blas.sh),
 * computing
 * GEMMs (cublasDgemm; cublasLtMatmul with bias, ReLU and GELU epilogues,
 * a separate D, a batch) on device memory of its own handles; with -DMODULE_CPU_BLAS against the
 * CPU BLAS. module_gemms() runs a few GEMMs, large and small, checks every element of each C
 * against the reference, prints one line and returns the number of wrong cases.
 * tests/fake-local-blas.sh runs it under mgpu-run, whose interposers must reach this library's
 * BLAS, not fail or skip the call. */
#include "../blas/gemm_reference.h"

#include <stdbool.h>
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
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#pragma GCC diagnostic pop
#include <cuda.h>
#include <math.h>

static CUdeviceptr upload(const void *host, size_t bytes)
{
    CUdeviceptr d = 0;
    if (cuMemAlloc(&d, bytes) != CUDA_SUCCESS || cuMemcpyHtoD(d, host, bytes) != CUDA_SUCCESS) {
        printf("module: device memory failed\n");
        exit(1);
    }
    return d;
}

/* cublasLtMatmul: D = epilogue(alpha op(A) op(B) + beta C), with the
 * layouts, epilogues and batches a framework gives it. */
struct lt_case {
    enum elem_kind kind;
    int transa, transb, m, n, k;
    cublasLtEpilogue_t epilogue;
    bool bias, separate_d;
    int batch;
};
static const struct lt_case lt_cases[] = {
    {ELEM_R32, 0, 0, 96, 64, 40, CUBLASLT_EPILOGUE_RELU_BIAS, true, true, 1},
    {ELEM_R64, 1, 0, 80, 48, 24, CUBLASLT_EPILOGUE_DEFAULT, false, false, 1},
    {ELEM_R32, 0, 1, 64, 2, 30, CUBLASLT_EPILOGUE_BIAS, true, false, 1},
    {ELEM_R32, 0, 0, 32, 32, 16, CUBLASLT_EPILOGUE_GELU, false, false, 2},
    {ELEM_R64, 0, 0, 8, 8, 8, CUBLASLT_EPILOGUE_DEFAULT, false, false, 1},
};
#define LT_CASES (int)(sizeof lt_cases / sizeof lt_cases[0])

static cublasLtMatrixLayout_t lt_layout(cudaDataType type, int rows, int cols, int batch,
                                        long long stride)
{
    cublasLtMatrixLayout_t l;
    if (cublasLtMatrixLayoutCreate(&l, type, (uint64_t)rows, (uint64_t)cols, rows) !=
        CUBLAS_STATUS_SUCCESS)
        return NULL;
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                     sizeof stride);
    return l;
}

static int lt_case(cublasLtHandle_t h, const struct lt_case *t)
{
    cudaDataType type = t->kind == ELEM_R32 ? CUDA_R_32F : CUDA_R_64F;
    size_t e = elem_bytes(t->kind);
    int ra = t->transa ? t->k : t->m, ca = t->transa ? t->m : t->k;
    int rb = t->transb ? t->n : t->k, cb = t->transb ? t->k : t->n;
    long long sa = (long long)ra * ca, sb = (long long)rb * cb, sc = (long long)t->m * t->n;
    void *a = malloc(e * (size_t)(sa * t->batch)), *b = malloc(e * (size_t)(sb * t->batch));
    void *c = malloc(e * (size_t)(sc * t->batch)), *want = malloc(e * (size_t)(sc * t->batch));
    void *bias = malloc(e * (size_t)t->m), *got = malloc(e * (size_t)(sc * t->batch));
    reference_fill(t->kind, a, sa * t->batch, 5u + (unsigned)t->m);
    reference_fill(t->kind, b, sb * t->batch, 6u + (unsigned)t->n);
    reference_fill(t->kind, c, sc * t->batch, 7u + (unsigned)t->k);
    reference_fill(t->kind, bias, t->m, 8u);
    memcpy(want, c, e * (size_t)(sc * t->batch));
    for (int i = 0; i < t->batch; i++) {
        char *wi = (char *)want + e * (size_t)(sc * i);
        reference_gemm(t->kind, t->kind, t->kind, t->transa, t->transb, t->m, t->n, t->k, 1.5,
                       (char *)a + e * (size_t)(sa * i), ra, (char *)b + e * (size_t)(sb * i), rb,
                       0.5, wi, t->m);
        for (long long j = 0; j < sc; j++)
            elem_store(t->kind, wi, j,
                       reference_epilogue(t->epilogue, elem_load(t->kind, wi, j),
                                          t->bias ? elem_load(t->kind, bias, j % t->m) : 0));
    }
    size_t cbytes = e * (size_t)(sc * t->batch);
    CUdeviceptr da = upload(a, e * (size_t)(sa * t->batch)),
                db = upload(b, e * (size_t)(sb * t->batch));
    CUdeviceptr dc = upload(c, cbytes), dbias = upload(bias, e * (size_t)t->m);
    CUdeviceptr dd = t->separate_d ? upload(c, cbytes) : dc;
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulDescCreate(&desc, t->kind == ELEM_R32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F,
                             type);
    cublasOperation_t ta = t->transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = t->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &t->epilogue,
                                   sizeof t->epilogue);
    if (t->bias)
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias,
                                       sizeof dbias);
    cublasLtMatrixLayout_t la = lt_layout(type, ra, ca, t->batch, sa);
    cublasLtMatrixLayout_t lb = lt_layout(type, rb, cb, t->batch, sb);
    cublasLtMatrixLayout_t lc = lt_layout(type, t->m, t->n, t->batch, sc);
    double alpha64 = 1.5, beta64 = 0.5;
    float alpha32 = 1.5f, beta32 = 0.5f;
    const void *alpha = t->kind == ELEM_R32 ? (const void *)&alpha32 : (const void *)&alpha64;
    const void *beta = t->kind == ELEM_R32 ? (const void *)&beta32 : (const void *)&beta64;
    cublasStatus_t st =
        cublasLtMatmul(h, desc, alpha, (const void *)da, la, (const void *)db, lb, beta,
                       (const void *)dc, lc, (void *)dd, lc, NULL, NULL, 0, 0);
    int wrong = 0;
    struct shape s = {t->m, t->n * t->batch, t->k};
    if (st != CUBLAS_STATUS_SUCCESS) {
        printf("module: cublasLtMatmul %dx%dx%d returned %d\n", t->m, t->n, t->k, (int)st);
        wrong = 1;
    } else if (cuCtxSynchronize() != CUDA_SUCCESS ||
               cuMemcpyDtoH(got, dd, cbytes) != CUDA_SUCCESS) {
        printf("module: reading D back failed\n");
        wrong = 1;
    } else if (t->kind == ELEM_R64) {
        wrong = compare("cublasLtMatmul", &s, got, want);
    } else {
        /* Exact against the fake (the same reference, the same order);
         * within a sum's rounding against a real cuBLASLt. */
        const char *exact = getenv("MODULE_EXACT");
        float tolerance = exact != NULL && exact[0] == '1' ? 0.0f : 1e-4f * (float)(2 * t->k + 1);
        for (long long j = 0; j < sc * t->batch && !wrong; j++)
            if (fabsf(((float *)got)[j] - ((float *)want)[j]) > tolerance) {
                printf("module: cublasLtMatmul %dx%dx%d: D[%lld] is %g, not %g\n", t->m, t->n, t->k,
                       j, ((float *)got)[j], ((float *)want)[j]);
                wrong = 1;
            }
    }
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    CUdeviceptr all[5] = {da, db, dc, dbias, t->separate_d ? dd : 0};
    for (int i = 0; i < 5; i++)
        if (all[i] != 0)
            cuMemFree(all[i]);
    free(a);
    free(b);
    free(c);
    free(want);
    free(bias);
    free(got);
    return wrong;
}

static int lt_gemms(void)
{
    cublasLtHandle_t h;
    cublasStatus_t st = cublasLtCreate(&h);
    if (st != CUBLAS_STATUS_SUCCESS) {
        printf("module: cublasLtCreate returned %d\n", (int)st);
        return 1;
    }
    int wrong = 0;
    for (int i = 0; i < LT_CASES; i++)
        wrong += lt_case(h, &lt_cases[i]);
    cublasLtDestroy(h);
    printf("module: cuBLASLt %d of %d cases correct\n", LT_CASES - wrong, LT_CASES);
    return wrong;
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
    return wrong + lt_gemms();
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
