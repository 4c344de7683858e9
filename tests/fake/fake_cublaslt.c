/* A fake cuBLASLt for the tests without a GPU: handles, matmul
 * descriptors and matrix layouts that keep their attributes, and
 * cublasLtMatmul computed on the host at the call with the reference GEMM
 * of tests/blas/gemm_reference.h (the fake GPU's device memory is the
 * host's), batches, a separate D, and the bias, ReLU and GELU epilogues
 * included. Real and complex types of 16, 32 and 64 bits. A matmul on a
 * handle it did not make is refused and said on stderr. With
 * FAKE_CUBLAS_LOG=FILE each matmul appends a line: m, n, k, batch, the
 * handle's number and the device count the driver gives the call (4 for
 * mgpu's own handles, whose driver calls bypass the hooks). */
#include "../blas/gemm_reference.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#pragma GCC diagnostic pop
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

struct cublasLtContext {
    const void *maker; /* &handles_made of the library that made it */
    int number;
};

static atomic_int handles_made;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle)
{
    struct cublasLtContext *h = calloc(1, sizeof *h);
    if (h == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    h->maker = &handles_made;
    h->number = atomic_fetch_add(&handles_made, 1);
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle)
{
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

/* Attributes live in the opaque structures' words, one word each, at the
 * attribute's number. */
static cublasStatus_t set_word(uint64_t *words, size_t count, unsigned attr, const void *buf,
                               size_t bytes)
{
    if (attr >= count || bytes > sizeof(uint64_t) || buf == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    words[attr] = 0;
    memcpy(&words[attr], buf, bytes);
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t get_word(const uint64_t *words, size_t count, unsigned attr, void *buf,
                               size_t bytes, size_t *written)
{
    if (attr >= count || buf == NULL || bytes > sizeof(uint64_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, &words[attr], bytes);
    if (written != NULL)
        *written = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                               cublasComputeType_t compute, cudaDataType_t scale)
{
    cublasLtMatmulDescOpaque_t *d = calloc(1, sizeof *d);
    if (d == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    d->data[CUBLASLT_MATMUL_DESC_COMPUTE_TYPE] = (uint64_t)compute;
    d->data[CUBLASLT_MATMUL_DESC_SCALE_TYPE] = (uint64_t)scale;
    d->data[CUBLASLT_MATMUL_DESC_EPILOGUE] = CUBLASLT_EPILOGUE_DEFAULT;
    *desc = d;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc)
{
    free(desc);
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                     cublasLtMatmulDescAttributes_t attr,
                                                     const void *buf, size_t bytes)
{
    return set_word(desc->data, 32, (unsigned)attr, buf, bytes);
}

EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc,
                                                     cublasLtMatmulDescAttributes_t attr, void *buf,
                                                     size_t bytes, size_t *written)
{
    return get_word(desc->data, 32, (unsigned)attr, buf, bytes, written);
}

EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                                 uint64_t rows, uint64_t cols, int64_t ld)
{
    cublasLtMatrixLayoutOpaque_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    l->data[CUBLASLT_MATRIX_LAYOUT_TYPE] = (uint64_t)type;
    l->data[CUBLASLT_MATRIX_LAYOUT_ROWS] = rows;
    l->data[CUBLASLT_MATRIX_LAYOUT_COLS] = cols;
    l->data[CUBLASLT_MATRIX_LAYOUT_LD] = (uint64_t)ld;
    l->data[CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT] = 1;
    *layout = l;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout)
{
    free(layout);
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                       cublasLtMatrixLayoutAttribute_t attr,
                                                       const void *buf, size_t bytes)
{
    return set_word(layout->data, 8, (unsigned)attr, buf, bytes);
}

EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                       cublasLtMatrixLayoutAttribute_t attr,
                                                       void *buf, size_t bytes, size_t *written)
{
    return get_word(layout->data, 8, (unsigned)attr, buf, bytes, written);
}

static bool kind_of(uint64_t type, enum elem_kind *k)
{
    switch (type) {
    case CUDA_R_32F:
        *k = ELEM_R32;
        return true;
    case CUDA_R_64F:
        *k = ELEM_R64;
        return true;
    case CUDA_C_32F:
        *k = ELEM_C32;
        return true;
    case CUDA_C_64F:
        *k = ELEM_C64;
        return true;
    case CUDA_R_16F:
        *k = ELEM_R16;
        return true;
    default:
        return false;
    }
}

static int driver_device_count(void)
{
    CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(RTLD_DEFAULT, "cuDeviceGetCount");
    int n = -1;
    if (count == NULL || count(&n) != CUDA_SUCCESS)
        return -1;
    return n;
}

static void log_call(cublasLtHandle_t h, uint64_t m, uint64_t n, long long k, long long batch)
{
    const char *path = getenv("FAKE_CUBLAS_LOG");
    if (path == NULL || *path == '\0')
        return;
    int devices = driver_device_count();
    pthread_mutex_lock(&log_lock);
    FILE *f = fopen(path, "a");
    if (f != NULL) {
        fprintf(f, "cublasLtMatmul m=%llu n=%llu k=%lld batch=%lld handle=%d devices=%d\n",
                (unsigned long long)m, (unsigned long long)n, k, batch, h->number, devices);
        fclose(f);
    }
    pthread_mutex_unlock(&log_lock);
}

EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                     const void *alpha, const void *A, cublasLtMatrixLayout_t la,
                                     const void *B, cublasLtMatrixLayout_t lb, const void *beta,
                                     const void *C, cublasLtMatrixLayout_t lc, void *D,
                                     cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo,
                                     void *workspace, size_t workspace_bytes, cudaStream_t stream)
{
    (void)algo;
    (void)workspace;
    (void)workspace_bytes;
    (void)stream;
    if (h == NULL || h->maker != &handles_made) {
        fprintf(stderr, "fake cuBLASLt: a matmul on a handle it did not make\n");
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    enum elem_kind ka, kb, kc, kd, ks;
    int transa = (int)desc->data[CUBLASLT_MATMUL_DESC_TRANSA];
    int transb = (int)desc->data[CUBLASLT_MATMUL_DESC_TRANSB];
    uint64_t e = desc->data[CUBLASLT_MATMUL_DESC_EPILOGUE];
    const void *bias = (const void *)(uintptr_t)desc->data[CUBLASLT_MATMUL_DESC_BIAS_POINTER];
    if (!kind_of(la->data[CUBLASLT_MATRIX_LAYOUT_TYPE], &ka) ||
        !kind_of(lb->data[CUBLASLT_MATRIX_LAYOUT_TYPE], &kb) ||
        !kind_of(lc->data[CUBLASLT_MATRIX_LAYOUT_TYPE], &kc) ||
        !kind_of(ld->data[CUBLASLT_MATRIX_LAYOUT_TYPE], &kd) ||
        !kind_of(desc->data[CUBLASLT_MATMUL_DESC_SCALE_TYPE], &ks) || kc != kd)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    uint64_t m = ld->data[CUBLASLT_MATRIX_LAYOUT_ROWS], n = ld->data[CUBLASLT_MATRIX_LAYOUT_COLS];
    long long k =
        (long long)
            la->data[transa == 0 ? CUBLASLT_MATRIX_LAYOUT_COLS : CUBLASLT_MATRIX_LAYOUT_ROWS];
    long long lda = (long long)la->data[CUBLASLT_MATRIX_LAYOUT_LD];
    long long ldb = (long long)lb->data[CUBLASLT_MATRIX_LAYOUT_LD];
    long long ldc = (long long)lc->data[CUBLASLT_MATRIX_LAYOUT_LD];
    long long ldd = (long long)ld->data[CUBLASLT_MATRIX_LAYOUT_LD];
    int batch = (int)ld->data[CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT];
    if (m != lc->data[CUBLASLT_MATRIX_LAYOUT_ROWS] || n != lc->data[CUBLASLT_MATRIX_LAYOUT_COLS] ||
        (long long)(transb == 0 ? lb->data[CUBLASLT_MATRIX_LAYOUT_ROWS]
                                : lb->data[CUBLASLT_MATRIX_LAYOUT_COLS]) != k ||
        ldd < (long long)m || ldc < (long long)m || batch < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    log_call(h, m, n, k, batch);
    double complex a_scale = elem_load(ks, alpha, 0), b_scale = elem_load(ks, beta, 0);
    for (int i = 0; i < batch; i++) {
        const char *ai =
            (const char *)A + (long long)elem_bytes(ka) * i *
                                  (long long)la->data[CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET];
        const char *bi =
            (const char *)B + (long long)elem_bytes(kb) * i *
                                  (long long)lb->data[CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET];
        const char *ci =
            (const char *)C + (long long)elem_bytes(kc) * i *
                                  (long long)lc->data[CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET];
        char *di = (char *)D + (long long)elem_bytes(kd) * i *
                                   (long long)ld->data[CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET];
        for (uint64_t col = 0; col < n; col++)
            for (uint64_t row = 0; row < m; row++)
                elem_store(kd, di, (long long)(col * (uint64_t)ldd + row),
                           elem_load(kc, ci, (long long)(col * (uint64_t)ldc + row)));
        reference_gemm(ka, kb, kd, transa, transb, (long long)m, (long long)n, k, a_scale, ai, lda,
                       bi, ldb, b_scale, di, ldd);
        for (uint64_t col = 0; col < n; col++)
            for (uint64_t row = 0; row < m; row++) {
                long long at = (long long)(col * (uint64_t)ldd + row);
                elem_store(
                    kd, di, at,
                    reference_epilogue((unsigned)e, elem_load(kd, di, at),
                                       bias != NULL ? elem_load(kd, bias, (long long)row) : 0));
            }
    }
    return CUBLAS_STATUS_SUCCESS;
}
