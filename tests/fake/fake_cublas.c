/* A fake cuBLAS for the tests without a GPU: handles that keep a stream,
 * pointer, math and atomics modes, and the GEMM routines the cuBLAS test
 * client calls, computed on the host at the call with the reference GEMM
 * of tests/blas/gemm_reference.h (the fake GPU's device pointers are host
 * addresses and its streams run work as it is queued). With
 * FAKE_CUBLAS_LOG=FILE every GEMM appends a line: the routine, its m, n,
 * k and batch, the handle's number, and the device count the driver gives
 * this call, which is the real count when the call comes from mgpu's own
 * handles (inside mgpu_driver_bypass) and the virtual one when it comes
 * from the program's (MGPU_DEVICE_COUNT=one makes that 1).
 * FAKE_CUBLAS_FAIL_CALL=K makes the K-th GEMM call fail. A GEMM on a
 * handle another library made (this source built again as a second
 * cuBLAS, FAKE_CUBLAS_NAME) is refused and said on stderr. */
#include "../blas/cublas_half.h"
#include "../blas/gemm_reference.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

/* Which build of the fake this is, for messages: tests build it twice, as
 * two cuBLAS libraries of one process. */
#ifndef FAKE_CUBLAS_NAME
#define FAKE_CUBLAS_NAME "libfakecublas"
#endif

struct cublasContext {
    const void *maker; /* &handles_made of the library that made it */
    int number;
    cudaStream_t stream;
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
    cublasAtomicsMode_t atomics_mode;
};

static atomic_int handles_made;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    struct cublasContext *h = calloc(1, sizeof *h);
    if (h == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    h->maker = &handles_made;
    h->number = atomic_fetch_add(&handles_made, 1);
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t stream)
{
    h->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t *stream)
{
    *stream = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t mode)
{
    h->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t *mode)
{
    *mode = h->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    h->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *mode)
{
    *mode = h->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetAtomicsMode(cublasHandle_t h, cublasAtomicsMode_t mode)
{
    h->atomics_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetAtomicsMode(cublasHandle_t h, cublasAtomicsMode_t *mode)
{
    *mode = h->atomics_mode;
    return CUBLAS_STATUS_SUCCESS;
}

/* FAKE_CUBLAS_FAIL_CALL=K: the K-th GEMM call (from 1) fails, as a GPU
 * fault would make it. */
static atomic_long gemm_calls;
static bool injected_failure(void)
{
    const char *k = getenv("FAKE_CUBLAS_FAIL_CALL");
    long n = atomic_fetch_add(&gemm_calls, 1) + 1;
    return k != NULL && *k != '\0' && atol(k) == n;
}

/* A handle this library did not make (one of another cuBLAS, as when a
 * call is handed to the wrong library): refused, and said on stderr. */
static bool foreign(cublasHandle_t h)
{
    if (h != NULL && h->maker == &handles_made)
        return false;
    fprintf(stderr, "fake cuBLAS (%s): a GEMM on a handle it did not make\n", FAKE_CUBLAS_NAME);
    return true;
}

static int driver_device_count(void)
{
    CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(RTLD_DEFAULT, "cuDeviceGetCount");
    int n = -1;
    if (count == NULL || count(&n) != CUDA_SUCCESS)
        return -1;
    return n;
}

static void log_call(const char *routine, cublasHandle_t h, long long m, long long n, long long k,
                     long long batch)
{
    const char *path = getenv("FAKE_CUBLAS_LOG");
    if (path == NULL || *path == '\0')
        return;
    int devices = driver_device_count();
    pthread_mutex_lock(&log_lock);
    FILE *f = fopen(path, "a");
    if (f != NULL) {
        fprintf(f, "%s m=%lld n=%lld k=%lld batch=%lld handle=%d devices=%d math=%d pointer=%d\n",
                routine, m, n, k, batch, h->number, devices, (int)h->math_mode,
                (int)h->pointer_mode);
        fclose(f);
    }
    pthread_mutex_unlock(&log_lock);
}

/* One matrix of a call: kinds, and the scalars' kind (host or device
 * memory alike: the fake's device memory is the host's). */
struct gemm {
    enum elem_kind ka, kb, kc, scalar;
    int transa, transb;
    long long m, n, k, lda, ldb, ldc;
    const void *alpha, *beta;
};

static void run_gemm(const struct gemm *g, const void *a, const void *b, void *c)
{
    double complex alpha = elem_load(g->scalar, g->alpha, 0);
    double complex beta = elem_load(g->scalar, g->beta, 0);
    reference_gemm(g->ka, g->kb, g->kc, g->transa, g->transb, g->m, g->n, g->k, alpha, a, g->lda, b,
                   g->ldb, beta, c, g->ldc);
}

static bool valid(const struct gemm *g, long long batch)
{
    long long rows_a = g->transa == 0 ? g->m : g->k, rows_b = g->transb == 0 ? g->k : g->n;
    return g->m >= 0 && g->n >= 0 && g->k >= 0 && batch >= 0 && g->lda >= (rows_a ? rows_a : 1) &&
           g->ldb >= (rows_b ? rows_b : 1) && g->ldc >= (g->m ? g->m : 1);
}

#define GEMM_ARGS(kind)                                                                            \
    struct gemm g = {kind, kind, kind, kind, transa, transb, m, n, k, lda, ldb, ldc, alpha, beta}

#define DEFINE_PLAIN(name, T, I, kind)                                                             \
    EXPORT cublasStatus_t name(cublasHandle_t h, cublasOperation_t transa,                         \
                               cublasOperation_t transb, I m, I n, I k, const T *alpha,            \
                               const T *A, I lda, const T *B, I ldb, const T *beta, T *C, I ldc)   \
    {                                                                                              \
        GEMM_ARGS(kind);                                                                           \
        if (!valid(&g, 1))                                                                         \
            return CUBLAS_STATUS_INVALID_VALUE;                                                    \
        if (foreign(h))                                                                            \
            return CUBLAS_STATUS_NOT_INITIALIZED;                                                  \
        if (injected_failure())                                                                    \
            return CUBLAS_STATUS_EXECUTION_FAILED;                                                 \
        log_call(#name, h, m, n, k, 1);                                                            \
        run_gemm(&g, A, B, C);                                                                     \
        return CUBLAS_STATUS_SUCCESS;                                                              \
    }
DEFINE_PLAIN(cublasSgemm_v2, float, int, ELEM_R32)
DEFINE_PLAIN(cublasDgemm_v2, double, int, ELEM_R64)
DEFINE_PLAIN(cublasCgemm_v2, cuComplex, int, ELEM_C32)
DEFINE_PLAIN(cublasZgemm_v2, cuDoubleComplex, int, ELEM_C64)
DEFINE_PLAIN(cublasHgemm, half_t, int, ELEM_R16)
DEFINE_PLAIN(cublasSgemm_v2_64, float, int64_t, ELEM_R32)

EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k,
                                                const float *alpha, const float *A, int lda,
                                                long long strideA, const float *B, int ldb,
                                                long long strideB, const float *beta, float *C,
                                                int ldc, long long strideC, int batch)
{
    GEMM_ARGS(ELEM_R32);
    if (!valid(&g, batch))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (foreign(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (injected_failure())
        return CUBLAS_STATUS_EXECUTION_FAILED;
    log_call("cublasSgemmStridedBatched", h, m, n, k, batch);
    /* As a shared library, through the exported cublasSgemm_v2 as the
     * dynamic linker finds it first, as a library that calls its own entry
     * points through its PLT does: mgpu's interposer sees these calls too,
     * from inside the part it is running, and must pass them on. Built
     * into a program, directly. */
#ifdef FAKE_CUBLAS_SHARED
    __typeof__(&cublasSgemm_v2) sgemm =
        (__typeof__(&cublasSgemm_v2))dlsym(RTLD_DEFAULT, "cublasSgemm_v2");
    if (sgemm == NULL)
        return CUBLAS_STATUS_NOT_INITIALIZED;
#else
    __typeof__(&cublasSgemm_v2) sgemm = cublasSgemm_v2;
#endif
    for (int i = 0; i < batch; i++) {
        cublasStatus_t st = sgemm(h, transa, transb, m, n, k, alpha, A + i * strideA, lda,
                                  B + i * strideB, ldb, beta, C + i * strideC, ldc);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSgemmBatched(cublasHandle_t h, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *const A[], int lda,
                                         const float *const B[], int ldb, const float *beta,
                                         float *const C[], int ldc, int batch)
{
    GEMM_ARGS(ELEM_R32);
    if (!valid(&g, batch))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (foreign(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (injected_failure())
        return CUBLAS_STATUS_EXECUTION_FAILED;
    log_call("cublasSgemmBatched", h, m, n, k, batch);
    for (int i = 0; i < batch; i++)
        run_gemm(&g, A[i], B[i], C[i]);
    return CUBLAS_STATUS_SUCCESS;
}

/* The Ex forms' kinds: the types this fake knows, each with the scalars'
 * kind its compute type takes. */
static bool ex_kinds(cudaDataType t, cublasComputeType_t compute, enum elem_kind *kind,
                     enum elem_kind *scalar)
{
    switch (t) {
    case CUDA_R_32F:
        *kind = ELEM_R32;
        break;
    case CUDA_R_64F:
        *kind = ELEM_R64;
        break;
    case CUDA_C_32F:
        *kind = ELEM_C32;
        break;
    case CUDA_C_64F:
        *kind = ELEM_C64;
        break;
    case CUDA_R_16F:
        *kind = ELEM_R16;
        break;
    default:
        return false;
    }
    bool is_complex = t == CUDA_C_32F || t == CUDA_C_64F;
    switch (compute) {
    case CUBLAS_COMPUTE_16F:
        *scalar = ELEM_R16;
        return true;
    case CUBLAS_COMPUTE_64F:
        *scalar = is_complex ? ELEM_C64 : ELEM_R64;
        return true;
    default:
        *scalar = is_complex ? ELEM_C32 : ELEM_R32;
        return true;
    }
}

static bool ex_gemm(struct gemm *g, cudaDataType at, cudaDataType bt, cudaDataType ct,
                    cublasComputeType_t compute)
{
    enum elem_kind scalar;
    return ex_kinds(at, compute, &g->ka, &scalar) && ex_kinds(bt, compute, &g->kb, &scalar) &&
           ex_kinds(ct, compute, &g->kc, &g->scalar);
}

EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                   const void *A, cudaDataType at, int lda, const void *B,
                                   cudaDataType bt, int ldb, const void *beta, void *C,
                                   cudaDataType ct, int ldc, cublasComputeType_t compute,
                                   cublasGemmAlgo_t algo)
{
    (void)algo;
    GEMM_ARGS(ELEM_R32);
    if (!ex_gemm(&g, at, bt, ct, compute))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!valid(&g, 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (foreign(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (injected_failure())
        return CUBLAS_STATUS_EXECUTION_FAILED;
    log_call("cublasGemmEx", h, m, n, k, 1);
    run_gemm(&g, A, B, C);
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType at, int lda, long long strideA, const void *B,
    cudaDataType bt, int ldb, long long strideB, const void *beta, void *C, cudaDataType ct,
    int ldc, long long strideC, int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    (void)algo;
    GEMM_ARGS(ELEM_R32);
    if (!ex_gemm(&g, at, bt, ct, compute))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!valid(&g, batch))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (foreign(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (injected_failure())
        return CUBLAS_STATUS_EXECUTION_FAILED;
    log_call("cublasGemmStridedBatchedEx", h, m, n, k, batch);
    for (int i = 0; i < batch; i++)
        run_gemm(&g, (const char *)A + i * strideA * (long long)elem_bytes(g.ka),
                 (const char *)B + i * strideB * (long long)elem_bytes(g.kb),
                 (char *)C + i * strideC * (long long)elem_bytes(g.kc));
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *const A[], cudaDataType at,
                                          int lda, const void *const B[], cudaDataType bt, int ldb,
                                          const void *beta, void *const C[], cudaDataType ct,
                                          int ldc, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t algo)
{
    (void)algo;
    GEMM_ARGS(ELEM_R32);
    if (!ex_gemm(&g, at, bt, ct, compute))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!valid(&g, batch))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (foreign(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (injected_failure())
        return CUBLAS_STATUS_EXECUTION_FAILED;
    log_call("cublasGemmBatchedEx", h, m, n, k, batch);
    for (int i = 0; i < batch; i++)
        run_gemm(&g, A[i], B[i], C[i]);
    return CUBLAS_STATUS_SUCCESS;
}
