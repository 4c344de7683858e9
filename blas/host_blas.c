/* libmgpu-hostblas.so, which mgpu-run --blas preloads into a CPU program:
 * owns the BLAS GEMM entry points such a program calls, CBLAS
 * (cblas_sgemm, _dgemm, _cgemm, _zgemm) and Fortran (sgemm_, dgemm_,
 * cgemm_, zgemm_, LP64), with the reference BLAS's prototypes. A call of
 * at least MGPU_HOST_BLAS_MIN (m*n*k) is turned into one column-major
 * GEMM (a row-major CBLAS call is turned around) and run on the GPUs
 * (host_offload.c); smaller ones, invalid ones and those the GPUs cannot
 * take go to the program's CPU BLAS, found behind this library with
 * dlsym(RTLD_NEXT). A CPU BLAS routine that calls another (the reference
 * CBLAS calls the Fortran one) passes straight through. Each call is
 * counted for the report (blas/blas_stats.c). */
#include "blas_stats.h"
#include "host_offload.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* CBLAS's enum values. */
enum { ROW_MAJOR = 101, COL_MAJOR = 102, NO_TRANS = 111, TRANS = 112, CONJ_TRANS = 113 };

typedef void (*fortran_gemm)(const char *, const char *, const int *, const int *, const int *,
                             const void *, const void *, const int *, const void *, const int *,
                             const void *, void *, const int *, size_t, size_t);

static const char *const fortran_names[] = {"sgemm_", "dgemm_", "cgemm_", "zgemm_"};
static const size_t kind_bytes[] = {4, 8, 8, 16};

/* Inside one of these entry points on this thread. */
static __thread int inside;

static void *real(const char *name, _Atomic(void *) *cache)
{
    void *fn = atomic_load_explicit(cache, memory_order_acquire);
    if (fn == NULL) {
        fn = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(cache, fn, memory_order_release);
    }
    return fn;
}

static _Atomic(void *) fortran_cache[4];

static fortran_gemm cpu_fortran(enum mgpu_host_kind kind)
{
    return (fortran_gemm)real(fortran_names[kind], &fortran_cache[kind]);
}

static double least_offloaded(void)
{
    static _Atomic double least = -1;
    double v = atomic_load(&least);
    if (v < 0) {
        const char *text = getenv("MGPU_HOST_BLAS_MIN");
        char *end = NULL;
        v = text && *text ? strtod(text, &end) : 0;
        if (text == NULL || *text == '\0' || end == NULL || *end != '\0' || !(v >= 0))
            v = 1073741824.0;
        atomic_store(&least, v);
    }
    return v;
}

/* The CPU BLAS's columns [first, first + count) of g, for an offload
 * that failed part way. */
static void cpu_part(const struct mgpu_host_gemm *g, long long first, long long count)
{
    static const char ops[] = "NTC";
    char ta = ops[g->transa], tb = ops[g->transb];
    int m = (int)g->m, n = (int)count, k = (int)g->k;
    int lda = (int)g->lda, ldb = (int)g->ldb, ldc = (int)g->ldc;
    size_t e = kind_bytes[g->kind];
    const char *b = (const char *)g->b + (g->transb == 0 ? first * g->ldb : first) * (long long)e;
    char *c = (char *)g->c + first * g->ldc * (long long)e;
    if (count > 0)
        cpu_fortran(g->kind)(&ta, &tb, &m, &n, &k, g->alpha, g->a, &lda, b, &ldb, g->beta, c, &ldc,
                             1, 1);
}

static bool valid(const struct mgpu_host_gemm *g)
{
    long long rows_a = g->transa == 0 ? g->m : g->k, rows_b = g->transb == 0 ? g->k : g->n;
    return g->transa >= 0 && g->transb >= 0 && g->m >= 0 && g->n >= 0 && g->k >= 0 &&
           g->lda >= (rows_a > 1 ? rows_a : 1) && g->ldb >= (rows_b > 1 ? rows_b : 1) &&
           g->ldc >= (g->m > 1 ? g->m : 1);
}

/* Runs g on the GPUs when it is worth it; false when the caller is to
 * call the CPU BLAS. Counted either way. */
static bool offload(const char *name, const struct mgpu_host_gemm *g)
{
    const char *why = NULL;
    if (!valid(g))
        why = "invalid arguments (the CPU BLAS reports them)";
    else if ((double)g->m * (double)g->n * (double)g->k < least_offloaded())
        why = "below MGPU_HOST_BLAS_MIN";
    else if (cpu_fortran(g->kind) == NULL)
        why = "no Fortran GEMM in the CPU BLAS to fall back on";
    struct mgpu_host_result result;
    int rc = -1;
    if (why == NULL)
        rc = mgpu_host_gemm_offload(g, cpu_part, &result, &why);
    if (rc < 0) {
        mgpu_blas_stats_host(name, why, g->m, g->n, g->k, 0, 0);
        return false;
    }
    mgpu_blas_stats_host(name, rc == 0 ? NULL : why, g->m, g->n, g->k, result.gpu_ms,
                         result.bytes_in + result.bytes_out);
    return true;
}

static int op_of_char(char c)
{
    switch (c) {
    case 'N':
    case 'n':
        return 0;
    case 'T':
    case 't':
        return 1;
    case 'C':
    case 'c':
        return 2;
    default:
        return -1;
    }
}

static int op_of_cblas(int t)
{
    return t == NO_TRANS ? 0 : t == TRANS ? 1 : t == CONJ_TRANS ? 2 : -1;
}

/* A CBLAS call as one column-major GEMM: a row-major C is the
 * column-major C^T = op(B)^T op(A)^T, the same buffers read the other way
 * round with the same operations. */
static bool from_cblas(enum mgpu_host_kind kind, int layout, int transa, int transb, int m, int n,
                       int k, const void *alpha, const void *a, int lda, const void *b, int ldb,
                       const void *beta, void *c, int ldc, struct mgpu_host_gemm *g)
{
    if (layout != ROW_MAJOR && layout != COL_MAJOR)
        return false;
    bool row = layout == ROW_MAJOR;
    *g = (struct mgpu_host_gemm){
        .kind = kind,
        .transa = op_of_cblas(row ? transb : transa),
        .transb = op_of_cblas(row ? transa : transb),
        .m = row ? n : m,
        .n = row ? m : n,
        .k = k,
        .alpha = alpha,
        .beta = beta,
        .a = row ? b : a,
        .b = row ? a : b,
        .c = c,
        .lda = row ? ldb : lda,
        .ldb = row ? lda : ldb,
        .ldc = ldc,
    };
    return true;
}

#define CBLAS_REAL_PARAMS(T)                                                                       \
    (int layout, int transa, int transb, int m, int n, int k, T alpha, const T *a, int lda,        \
     const T *b, int ldb, T beta, T *c, int ldc)
#define CBLAS_REAL(fn_name, T, kind)                                                               \
    EXPORT void fn_name CBLAS_REAL_PARAMS(T);                                                      \
    EXPORT void fn_name CBLAS_REAL_PARAMS(T)                                                       \
    {                                                                                              \
        static _Atomic(void *) cache;                                                              \
        struct mgpu_host_gemm g;                                                                   \
        bool done = false;                                                                         \
        if (inside++ == 0 && from_cblas(kind, layout, transa, transb, m, n, k, &alpha, a, lda, b,  \
                                        ldb, &beta, c, ldc, &g))                                   \
            done = offload(#fn_name, &g);                                                          \
        void (*cpu)(int, int, int, int, int, int, T, const T *, int, const T *, int, T, T *,       \
                    int) = (__typeof__(cpu))real(#fn_name, &cache);                                \
        if (!done && cpu != NULL)                                                                  \
            cpu(layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);             \
        inside--;                                                                                  \
    }
CBLAS_REAL(cblas_sgemm, float, MGPU_HOST_S)
CBLAS_REAL(cblas_dgemm, double, MGPU_HOST_D)

#define CBLAS_COMPLEX_PARAMS                                                                       \
    (int layout, int transa, int transb, int m, int n, int k, const void *alpha, const void *a,    \
     int lda, const void *b, int ldb, const void *beta, void *c, int ldc)
#define CBLAS_COMPLEX(fn_name, kind)                                                               \
    EXPORT void fn_name CBLAS_COMPLEX_PARAMS;                                                      \
    EXPORT void fn_name CBLAS_COMPLEX_PARAMS                                                       \
    {                                                                                              \
        static _Atomic(void *) cache;                                                              \
        struct mgpu_host_gemm g;                                                                   \
        bool done = false;                                                                         \
        if (inside++ == 0 && from_cblas(kind, layout, transa, transb, m, n, k, alpha, a, lda, b,   \
                                        ldb, beta, c, ldc, &g))                                    \
            done = offload(#fn_name, &g);                                                          \
        void (*cpu)(int, int, int, int, int, int, const void *, const void *, int, const void *,   \
                    int, const void *, void *, int) = (__typeof__(cpu))real(#fn_name, &cache);     \
        if (!done && cpu != NULL)                                                                  \
            cpu(layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);             \
        inside--;                                                                                  \
    }
CBLAS_COMPLEX(cblas_cgemm, MGPU_HOST_C)
CBLAS_COMPLEX(cblas_zgemm, MGPU_HOST_Z)

#define FORTRAN_PARAMS                                                                             \
    (const char *transa, const char *transb, const int *m, const int *n, const int *k,             \
     const void *alpha, const void *a, const int *lda, const void *b, const int *ldb,              \
     const void *beta, void *c, const int *ldc, size_t transa_len, size_t transb_len)
#define FORTRAN(fn_name, kind)                                                                     \
    EXPORT void fn_name FORTRAN_PARAMS;                                                            \
    EXPORT void fn_name FORTRAN_PARAMS                                                             \
    {                                                                                              \
        bool done = false;                                                                         \
        if (inside++ == 0) {                                                                       \
            struct mgpu_host_gemm g = {kind,                                                       \
                                       op_of_char(*transa),                                        \
                                       op_of_char(*transb),                                        \
                                       *m,                                                         \
                                       *n,                                                         \
                                       *k,                                                         \
                                       alpha,                                                      \
                                       beta,                                                       \
                                       a,                                                          \
                                       b,                                                          \
                                       c,                                                          \
                                       *lda,                                                       \
                                       *ldb,                                                       \
                                       *ldc};                                                      \
            done = offload(#fn_name, &g);                                                          \
        }                                                                                          \
        fortran_gemm cpu = cpu_fortran(kind);                                                      \
        if (!done && cpu != NULL)                                                                  \
            cpu(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, transa_len,          \
                transb_len);                                                                       \
        inside--;                                                                                  \
    }
FORTRAN(sgemm_, MGPU_HOST_S)
FORTRAN(dgemm_, MGPU_HOST_D)
FORTRAN(cgemm_, MGPU_HOST_C)
FORTRAN(zgemm_, MGPU_HOST_Z)
