/* The cuBLAS GEMMs a program may call, each checked against the host GEMM
 * of gemm_reference.h: cublasSgemm over every pair of transposes, Dgemm,
 * Cgemm and Zgemm with conjugates, Hgemm, Sgemm_v2_64, GemmEx (float, and
 * half inputs into float), the strided batched forms with fewer and with
 * more matrices than GPUs, the batched forms through device arrays of
 * pointers, scalars in device memory, the TF32 math mode, a C with fewer
 * columns than GPUs, a small GEMM, both on the default stream and on a
 * stream set on the handle; and a C that lies inside a buffer a kernel
 * reads before and after the GEMM (a mirror of it must not go stale); and A,
 * B and C in one allocation, A rewritten between two GEMMs.
 * Every element of each C buffer is compared, its padding rows, the gaps
 * between batched matrices and guards on both sides included, so that a
 * part written out of place is found.
 *
 * Built twice: against the real cuBLAS (tests/gpu-cublas.sh, within a
 * tolerance of the kind) and against the fake cuBLAS of tests/fake
 * (tests/fake-cublas.sh, with --exact: the fake computes with the same
 * reference, so a correct split gives the same bits). Prints one line per
 * case and "cublas_gemms: N cases correct"; exits 1 on the first failure.
 * With --large (last), three larger GEMMs instead, whose parts copy their
 * slices of the cut operand in pieces. */
#include "../fake/test_kernels.h"
#include "cublas_half.h"
#include "gemm_reference.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define GUARD 37 /* elements of C's buffer before and after the matrices */

enum routine {
    SGEMM,
    DGEMM,
    CGEMM,
    ZGEMM,
    HGEMM,
    SGEMM_64,
    GEMM_EX,
    SGEMM_STRIDED,
    GEMM_STRIDED_EX,
    SGEMM_BATCHED,
    GEMM_BATCHED_EX,
};

struct gemm_case {
    const char *label;
    enum routine routine;
    enum elem_kind ka, kc, scalar; /* B is of A's kind */
    int transa, transb;
    long long m, n, k, batch;
    bool device_scalars, tf32;
};

static bool exact;
static cublasHandle_t handle;
static CUstream stream;

static bool check_cu(const char *what, CUresult r)
{
    if (r == CUDA_SUCCESS)
        return true;
    const char *name = NULL;
    cuGetErrorName(r, &name);
    printf("error: %s returned %s\n", what, name ? name : "an unknown error");
    return false;
}

static bool check_blas(const char *what, cublasStatus_t s)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return true;
    printf("error: %s returned cuBLAS status %d\n", what, (int)s);
    return false;
}

static CUdeviceptr upload(const void *host, size_t bytes)
{
    CUdeviceptr d = 0;
    if (!check_cu("cuMemAlloc", cuMemAlloc(&d, bytes)) ||
        !check_cu("cuMemcpyHtoD", cuMemcpyHtoD(d, host, bytes)))
        exit(1);
    return d;
}

/* How far apart got and want may be for one element of kind `kc` in a sum
 * of k products of entries up to 1. */
static double tolerance(const struct gemm_case *c)
{
    if (exact)
        return 0;
    double scale = 2.0 * (double)c->k + 1.0;
    switch (c->kc) {
    case ELEM_R64:
    case ELEM_C64:
        return 1e-12 * scale;
    case ELEM_R16:
        return 1e-2 * scale;
    default:
        return (c->tf32 || c->ka == ELEM_R16 ? 2e-3 : 1e-5) * scale;
    }
}

static cudaDataType data_type(enum elem_kind k)
{
    static const cudaDataType types[] = {CUDA_R_32F, CUDA_R_64F, CUDA_C_32F, CUDA_C_64F,
                                         CUDA_R_16F};
    return types[k];
}

/* The call itself, on the device copies. */
static cublasStatus_t call(const struct gemm_case *c, const void *alpha, const void *beta,
                           CUdeviceptr a, long long lda, long long sa, CUdeviceptr b, long long ldb,
                           long long sb, CUdeviceptr cm, long long ldc, long long sc,
                           CUdeviceptr arrays)
{
    cublasOperation_t ta = (cublasOperation_t)c->transa, tb = (cublasOperation_t)c->transb;
    int m = (int)c->m, n = (int)c->n, k = (int)c->k, batch = (int)c->batch;
    void *A = (void *)a, *B = (void *)b, *C = (void *)cm;
    const void *const *pa = (const void *const *)arrays;
    const void *const *pb = pa + batch;
    void *const *pc = (void *const *)(pa + 2 * batch);
    cublasComputeType_t compute = c->kc == ELEM_R64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    switch (c->routine) {
    case SGEMM:
        return cublasSgemm(handle, ta, tb, m, n, k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                           (int)ldc);
    case DGEMM:
        return cublasDgemm(handle, ta, tb, m, n, k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                           (int)ldc);
    case CGEMM:
        return cublasCgemm(handle, ta, tb, m, n, k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                           (int)ldc);
    case ZGEMM:
        return cublasZgemm(handle, ta, tb, m, n, k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                           (int)ldc);
    case HGEMM:
        return cublasHgemm(handle, ta, tb, m, n, k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                           (int)ldc);
    case SGEMM_64:
        return cublasSgemm_64(handle, ta, tb, c->m, c->n, c->k, alpha, A, lda, B, ldb, beta, C,
                              ldc);
    case GEMM_EX:
        return cublasGemmEx(handle, ta, tb, m, n, k, alpha, A, data_type(c->ka), (int)lda, B,
                            data_type(c->ka), (int)ldb, beta, C, data_type(c->kc), (int)ldc,
                            compute, CUBLAS_GEMM_DEFAULT);
    case SGEMM_STRIDED:
        return cublasSgemmStridedBatched(handle, ta, tb, m, n, k, alpha, A, (int)lda, sa, B,
                                         (int)ldb, sb, beta, C, (int)ldc, sc, batch);
    case GEMM_STRIDED_EX:
        return cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, alpha, A, data_type(c->ka),
                                          (int)lda, sa, B, data_type(c->ka), (int)ldb, sb, beta, C,
                                          data_type(c->kc), (int)ldc, sc, batch, compute,
                                          CUBLAS_GEMM_DEFAULT);
    case SGEMM_BATCHED:
        return cublasSgemmBatched(handle, ta, tb, m, n, k, alpha, (const float *const *)pa,
                                  (int)lda, (const float *const *)pb, (int)ldb, beta,
                                  (float *const *)pc, (int)ldc, batch);
    case GEMM_BATCHED_EX:
        return cublasGemmBatchedEx(handle, ta, tb, m, n, k, alpha, pa, data_type(c->ka), (int)lda,
                                   pb, data_type(c->ka), (int)ldb, beta, pc, data_type(c->kc),
                                   (int)ldc, batch, compute, CUBLAS_GEMM_DEFAULT);
    }
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

static bool run_case(const struct gemm_case *c)
{
    long long rows_a = c->transa == 0 ? c->m : c->k, cols_a = c->transa == 0 ? c->k : c->m;
    long long rows_b = c->transb == 0 ? c->k : c->n, cols_b = c->transb == 0 ? c->n : c->k;
    long long lda = rows_a + 3, ldb = rows_b + 1, ldc = c->m + 2;
    long long sa = lda * cols_a + 5, sb = ldb * cols_b + 3, sc = ldc * c->n + 7;
    long long a_count = sa * c->batch, b_count = sb * c->batch;
    long long c_count = sc * c->batch + 2 * GUARD;
    size_t ea = elem_bytes(c->ka), ec = elem_bytes(c->kc);
    void *a = malloc((size_t)a_count * ea), *b = malloc((size_t)b_count * ea);
    void *cw = malloc((size_t)c_count * ec), *got = malloc((size_t)c_count * ec);
    reference_fill(c->ka, a, a_count, 11);
    reference_fill(c->ka, b, b_count, 23);
    reference_fill(c->kc, cw, c_count, 37);
    CUdeviceptr da = upload(a, (size_t)a_count * ea), db = upload(b, (size_t)b_count * ea);
    CUdeviceptr dc = upload(cw, (size_t)c_count * ec);
    CUdeviceptr c0 = dc + GUARD * ec;

    /* Scalars of the kind the routine takes, on the host or the device. */
    double complex alpha = c->scalar == ELEM_C32 || c->scalar == ELEM_C64 ? CMPLX(1.5, 0.5) : 1.5;
    double complex beta = c->scalar == ELEM_C32 || c->scalar == ELEM_C64 ? CMPLX(-0.5, 0.25) : -0.5;
    unsigned char scalars[32];
    elem_store(c->scalar, scalars, 0, alpha);
    elem_store(c->scalar, scalars + 16, 0, beta);
    CUdeviceptr dscalars = c->device_scalars ? upload(scalars, sizeof scalars) : 0;
    const void *pa = c->device_scalars ? (const void *)dscalars : scalars;
    const void *pb = c->device_scalars ? (const void *)(dscalars + 16) : scalars + 16;

    /* The batched forms' arrays: A's, B's and C's matrices in turn. */
    CUdeviceptr arrays = 0;
    if (c->routine == SGEMM_BATCHED || c->routine == GEMM_BATCHED_EX) {
        CUdeviceptr *ptrs = malloc(3 * (size_t)c->batch * sizeof *ptrs);
        for (long long i = 0; i < c->batch; i++) {
            ptrs[i] = da + (CUdeviceptr)(i * sa) * ea;
            ptrs[c->batch + i] = db + (CUdeviceptr)(i * sb) * ea;
            ptrs[2 * c->batch + i] = c0 + (CUdeviceptr)(i * sc) * ec;
        }
        arrays = upload(ptrs, 3 * (size_t)c->batch * sizeof *ptrs);
        free(ptrs);
    }

    bool ok =
        check_blas("cublasSetPointerMode",
                   cublasSetPointerMode(handle, c->device_scalars ? CUBLAS_POINTER_MODE_DEVICE
                                                                  : CUBLAS_POINTER_MODE_HOST)) &&
        check_blas("cublasSetMathMode",
                   cublasSetMathMode(handle,
                                     c->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH)) &&
        check_blas(c->label, call(c, pa, pb, da, lda, sa, db, ldb, sb, c0, ldc, sc, arrays)) &&
        check_cu("cuStreamSynchronize", cuStreamSynchronize(stream)) &&
        check_cu("cuMemcpyDtoH", cuMemcpyDtoH(got, dc, (size_t)c_count * ec));

    for (long long i = 0; ok && i < c->batch; i++)
        reference_gemm(c->ka, c->ka, c->kc, c->transa, c->transb, c->m, c->n, c->k, alpha,
                       (char *)a + i * sa * (long long)ea, lda, (char *)b + i * sb * (long long)ea,
                       ldb, beta, (char *)cw + (GUARD + i * sc) * (long long)ec, ldc);
    double tol = tolerance(c);
    for (long long i = 0; ok && i < c_count; i++) {
        double complex g = elem_load(c->kc, got, i), w = elem_load(c->kc, cw, i);
        if (cabs(g - w) > tol || (exact && memcmp((char *)got + i * (long long)ec,
                                                  (char *)cw + i * (long long)ec, ec) != 0)) {
            printf("FAIL: %s: element %lld of C's buffer is %g%+gi, not %g%+gi\n", c->label, i,
                   creal(g), cimag(g), creal(w), cimag(w));
            ok = false;
        }
    }
    if (ok)
        printf("ok: %s\n", c->label);
    cuMemFree(da);
    cuMemFree(db);
    cuMemFree(dc);
    if (dscalars)
        cuMemFree(dscalars);
    if (arrays)
        cuMemFree(arrays);
    free(a);
    free(b);
    free(cw);
    free(got);
    return ok;
}

/* y = 2 x + y by the test kernel, over the whole of x. */
static bool axpy(CUfunction fn, CUdeviceptr y, CUdeviceptr x, unsigned count)
{
    float a = 2.0f;
    void *params[] = {&y, &x, &a, &count};
    return check_cu("cuLaunchKernel", cuLaunchKernel(fn, (count + 255) / 256, 1, 1, 256, 1, 1, 0,
                                                     stream, params, NULL));
}

/* A kernel reads buffer X, a GEMM writes a window of X, the kernel reads X
 * again: the second read must see the GEMM's C. */
static bool c_inside_a_buffer_read_later(void)
{
    enum { COUNT = 1 << 20, WINDOW = 300000, M = 64, N = 64, K = 32 };
    CUmodule module;
    CUfunction fn;
    if (!check_cu("cuModuleLoadData", cuModuleLoadData(&module, mgpu_test_kernels_ptx)) ||
        !check_cu("cuModuleGetFunction", cuModuleGetFunction(&fn, module, MGPU_TEST_AXPY)))
        return false;
    float *x = malloc(COUNT * sizeof *x), *y = malloc(COUNT * sizeof *y);
    float *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b);
    reference_fill(ELEM_R32, x, COUNT, 5);
    reference_fill(ELEM_R32, a, M * K, 6);
    reference_fill(ELEM_R32, b, K * N, 7);
    for (int i = 0; i < COUNT; i++)
        y[i] = 0;
    CUdeviceptr dx = upload(x, COUNT * sizeof *x), dy1 = upload(y, COUNT * sizeof *y);
    CUdeviceptr dy2 = upload(y, COUNT * sizeof *y);
    CUdeviceptr da = upload(a, M * K * sizeof *a), db = upload(b, K * N * sizeof *b);
    const float alpha = 1.0f, beta = 0.0f;
    bool ok =
        check_blas("cublasSetPointerMode",
                   cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST)) &&
        check_blas("cublasSetMathMode", cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH)) &&
        axpy(fn, dy1, dx, COUNT) &&
        check_blas("cublasSgemm into X",
                   cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, (float *)da, M,
                               (float *)db, K, &beta, (float *)(dx + WINDOW * sizeof(float)), M)) &&
        axpy(fn, dy2, dx, COUNT) && check_cu("cuStreamSynchronize", cuStreamSynchronize(stream)) &&
        check_cu("cuMemcpyDtoH", cuMemcpyDtoH(y, dy2, COUNT * sizeof *y));
    reference_gemm(ELEM_R32, ELEM_R32, ELEM_R32, 0, 0, M, N, K, 1.0, a, M, b, K, 0.0, x + WINDOW,
                   M);
    for (int i = 0; ok && i < COUNT; i++) {
        float want = 2.0f * x[i];
        if (fabsf(y[i] - want) > (exact ? 0.0f : 1e-4f * K)) {
            printf("FAIL: C inside a buffer read later: y[%d] is %g, not %g%s\n", i, y[i], want,
                   i >= WINDOW && i < WINDOW + M * N ? " (a stale read of the GEMM's C)" : "");
            ok = false;
        }
    }
    if (ok)
        printf("ok: C inside a buffer a kernel reads before and after\n");
    cuMemFree(dx);
    cuMemFree(dy1);
    cuMemFree(dy2);
    cuMemFree(da);
    cuMemFree(db);
    cuModuleUnload(module);
    free(x);
    free(y);
    free(a);
    free(b);
    return ok;
}

/* A GEMM, A rewritten by a copy, the same GEMM again: the second must
 * read the new A (a mirror of A that the first read must not be read
 * stale). */
static bool a_rewritten_between_gemms(void)
{
    enum { N = 64 };
    float *a = malloc(N * N * sizeof *a), *b = malloc(N * N * sizeof *b);
    float *c = malloc(N * N * sizeof *c), *want = malloc(N * N * sizeof *want);
    reference_fill(ELEM_R32, a, N * N, 12);
    reference_fill(ELEM_R32, b, N * N, 13);
    CUdeviceptr da = upload(a, N * N * sizeof *a), db = upload(b, N * N * sizeof *b);
    CUdeviceptr dc = upload(a, N * N * sizeof *c);
    const float alpha = 1.0f, beta = 0.0f;
    reference_fill(ELEM_R32, a, N * N, 14);
    bool ok = check_blas("cublasSetPointerMode",
                         cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST)) &&
              check_blas("cublasSetMathMode", cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH)) &&
              check_blas("cublasSgemm",
                         cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, (float *)da,
                                     N, (float *)db, N, &beta, (float *)dc, N)) &&
              check_cu("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync(da, a, N * N * sizeof *a, stream)) &&
              check_blas("cublasSgemm",
                         cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, (float *)da,
                                     N, (float *)db, N, &beta, (float *)dc, N)) &&
              check_cu("cuStreamSynchronize", cuStreamSynchronize(stream)) &&
              check_cu("cuMemcpyDtoH", cuMemcpyDtoH(c, dc, N * N * sizeof *c));
    reference_gemm(ELEM_R32, ELEM_R32, ELEM_R32, 0, 0, N, N, N, 1.0, a, N, b, N, 0.0, want, N);
    for (int i = 0; ok && i < N * N; i++)
        if (fabsf(c[i] - want[i]) > (exact ? 0.0f : 1e-5f * (2 * N + 1))) {
            printf("FAIL: A rewritten between two GEMMs: C[%d] is %g, not %g (the old A read)\n", i,
                   c[i], want[i]);
            ok = false;
        }
    if (ok)
        printf("ok: A rewritten between two GEMMs\n");
    cuMemFree(da);
    cuMemFree(db);
    cuMemFree(dc);
    free(a);
    free(b);
    free(c);
    free(want);
    return ok;
}

/* A, B and C in one allocation, as a framework's caching allocator lays
 * tensors in one segment: a GEMM, A rewritten by a copy, the same GEMM
 * again. The parts may read A from mirrors of its range (C lies beside
 * it, not on it), and the second GEMM must read the new A. */
static bool operands_in_one_allocation(void)
{
    enum { M = 80, N = 48, K = 24 };
    size_t a_count = M * K, b_count = K * N, c_count = M * N;
    double *a = malloc(a_count * sizeof *a), *b = malloc(b_count * sizeof *b);
    double *c = malloc(c_count * sizeof *c), *want = malloc(c_count * sizeof *want);
    reference_fill(ELEM_R64, a, (long long)a_count, 21);
    reference_fill(ELEM_R64, b, (long long)b_count, 22);
    CUdeviceptr whole = 0;
    if (!check_cu("cuMemAlloc", cuMemAlloc(&whole, (a_count + b_count + c_count) * sizeof *a)))
        return false;
    CUdeviceptr da = whole, db = whole + a_count * sizeof *a,
                dc = whole + (a_count + b_count) * sizeof *a;
    const double alpha = 1.0, beta = 0.0;
    bool ok = check_cu("cuMemcpyHtoD", cuMemcpyHtoD(da, a, a_count * sizeof *a)) &&
              check_cu("cuMemcpyHtoD", cuMemcpyHtoD(db, b, b_count * sizeof *b)) &&
              check_blas("cublasSetPointerMode",
                         cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST)) &&
              check_blas("cublasDgemm",
                         cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha,
                                     (double *)da, M, (double *)db, K, &beta, (double *)dc, M));
    reference_fill(ELEM_R64, a, (long long)a_count, 23);
    ok = ok &&
         check_cu("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync(da, a, a_count * sizeof *a, stream)) &&
         check_blas("cublasDgemm",
                    cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, (double *)da, M,
                                (double *)db, K, &beta, (double *)dc, M)) &&
         check_cu("cuStreamSynchronize", cuStreamSynchronize(stream)) &&
         check_cu("cuMemcpyDtoH", cuMemcpyDtoH(c, dc, c_count * sizeof *c));
    reference_gemm(ELEM_R64, ELEM_R64, ELEM_R64, 0, 0, M, N, K, 1.0, a, M, b, K, 0.0, want, M);
    for (size_t i = 0; ok && i < c_count; i++)
        if (fabs(c[i] - want[i]) > (exact ? 0.0 : 1e-12 * (2 * K + 1))) {
            printf("FAIL: A, B and C in one allocation: C[%zu] is %g, not %g\n", i, c[i], want[i]);
            ok = false;
        }
    if (ok)
        printf("ok: A, B and C in one allocation, A rewritten between two GEMMs\n");
    cuMemFree(whole);
    free(a);
    free(b);
    free(c);
    free(want);
    return ok;
}

int main(int argc, char **argv)
{
    exact = argc > 1 && strcmp(argv[1], "--exact") == 0;
    bool large = argc > 1 && strcmp(argv[argc - 1], "--large") == 0;
    CUdevice dev;
    CUcontext ctx;
    if (!check_cu("cuInit", cuInit(0)) || !check_cu("cuDeviceGet", cuDeviceGet(&dev, 0)) ||
        !check_cu("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev)) ||
        !check_cu("cuCtxSetCurrent", cuCtxSetCurrent(ctx)) ||
        !check_blas("cublasCreate", cublasCreate(&handle)))
        return 1;

    static const struct gemm_case cases[] = {
        {"Sgemm N,N (default stream)", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 0, 67, 45, 23, 1,
         false, false},
        {"Dgemm T,N (default stream)", DGEMM, ELEM_R64, ELEM_R64, ELEM_R64, 1, 0, 64, 130, 31, 1,
         false, false},
        {"Sgemm, small (8x8x8)", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 1, 8, 8, 8, 1, false,
         false},
        /* from here on, the stream set on the handle */
        {"Sgemm N,T", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 1, 67, 45, 23, 1, false, false},
        {"Sgemm N,C", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 2, 67, 45, 23, 1, false, false},
        {"Sgemm T,N", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 1, 0, 67, 45, 23, 1, false, false},
        {"Sgemm T,T", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 1, 1, 67, 45, 23, 1, false, false},
        {"Sgemm T,C", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 1, 2, 67, 45, 23, 1, false, false},
        {"Sgemm C,N", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 2, 0, 67, 45, 23, 1, false, false},
        {"Sgemm C,T", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 2, 1, 67, 45, 23, 1, false, false},
        {"Sgemm C,C", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 2, 2, 67, 45, 23, 1, false, false},
        {"Sgemm, C of 2 columns (rows cut)", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 1, 0, 203, 2, 30,
         1, false, false},
        {"Sgemm, scalars in device memory", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 0, 53, 77, 19,
         1, true, false},
        {"Sgemm, TF32 math mode", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 0, 96, 96, 64, 1, false,
         true},
        {"Dgemm N,T", DGEMM, ELEM_R64, ELEM_R64, ELEM_R64, 0, 1, 41, 66, 17, 1, false, false},
        {"Cgemm C,N", CGEMM, ELEM_C32, ELEM_C32, ELEM_C32, 2, 0, 33, 41, 17, 1, false, false},
        {"Cgemm N,C", CGEMM, ELEM_C32, ELEM_C32, ELEM_C32, 0, 2, 33, 41, 17, 1, false, false},
        {"Zgemm T,C", ZGEMM, ELEM_C64, ELEM_C64, ELEM_C64, 1, 2, 19, 23, 29, 1, false, false},
        {"Zgemm, scalars in device memory", ZGEMM, ELEM_C64, ELEM_C64, ELEM_C64, 0, 0, 21, 18, 9, 1,
         true, false},
        {"Hgemm N,N", HGEMM, ELEM_R16, ELEM_R16, ELEM_R16, 0, 0, 48, 40, 16, 1, false, false},
        {"Sgemm_v2_64 T,T", SGEMM_64, ELEM_R32, ELEM_R32, ELEM_R32, 1, 1, 100, 7, 50, 1, false,
         false},
        {"GemmEx float T,N", GEMM_EX, ELEM_R32, ELEM_R32, ELEM_R32, 1, 0, 70, 66, 21, 1, false,
         false},
        {"GemmEx half into float N,T", GEMM_EX, ELEM_R16, ELEM_R32, ELEM_R32, 0, 1, 64, 72, 24, 1,
         false, false},
        {"SgemmStridedBatched, 3 matrices", SGEMM_STRIDED, ELEM_R32, ELEM_R32, ELEM_R32, 0, 1, 21,
         19, 11, 3, false, false},
        {"SgemmStridedBatched, 10 matrices", SGEMM_STRIDED, ELEM_R32, ELEM_R32, ELEM_R32, 1, 0, 21,
         19, 11, 10, false, false},
        {"GemmStridedBatchedEx double, 5 matrices", GEMM_STRIDED_EX, ELEM_R64, ELEM_R64, ELEM_R64,
         0, 0, 17, 15, 13, 5, false, false},
        {"SgemmBatched, 10 matrices", SGEMM_BATCHED, ELEM_R32, ELEM_R32, ELEM_R32, 0, 0, 21, 19, 11,
         10, false, false},
        {"SgemmBatched, 2 matrices", SGEMM_BATCHED, ELEM_R32, ELEM_R32, ELEM_R32, 1, 1, 31, 29, 27,
         2, false, false},
        {"GemmBatchedEx float, 9 matrices", GEMM_BATCHED_EX, ELEM_R32, ELEM_R32, ELEM_R32, 0, 1, 16,
         24, 12, 9, false, false},
    };
    /* --large: three GEMMs whose parts each copy 8 MiB of the cut operand
     * (B's columns; B transposed; A's rows), which mgpu copies in pieces
     * under the parts' GEMMs (blas/gemm_split.c). */
    static const struct gemm_case large_cases[] = {
        {"Sgemm N,N, B of 32 MiB", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 0, 8, 4096, 2048, 1,
         false, false},
        {"Sgemm N,T, B of 32 MiB", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 1, 8, 4096, 2048, 1,
         false, false},
        {"Sgemm N,N, A of 32 MiB, C of 2 columns", SGEMM, ELEM_R32, ELEM_R32, ELEM_R32, 0, 0, 4096,
         2, 2048, 1, false, false},
    };
    if (large) {
        int n = (int)(sizeof large_cases / sizeof large_cases[0]);
        for (int i = 0; i < n; i++)
            if (!run_case(&large_cases[i]))
                return 1;
        cublasDestroy(handle);
        printf("cublas_gemms: %d large cases correct\n", n);
        return 0;
    }
    int count = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < count; i++) {
        if (i == 3 &&
            (!check_cu("cuStreamCreate", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) ||
             !check_blas("cublasSetStream", cublasSetStream(handle, (cudaStream_t)stream))))
            return 1;
        if (!run_case(&cases[i]))
            return 1;
    }
    if (!c_inside_a_buffer_read_later() || !a_rewritten_between_gemms() ||
        !operands_in_one_allocation())
        return 1;
    cublasDestroy(handle);
    cuStreamDestroy(stream);
    printf("cublas_gemms: %d cases correct\n", count + 3);
    return 0;
}
