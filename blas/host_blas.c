/* libmgpu-hostblas.so, which mgpu-run --blas preloads into a CPU program:
 * owns the BLAS GEMM entry points such a program calls, CBLAS
 * (cblas_sgemm, _dgemm, _cgemm, _zgemm) and Fortran (sgemm_, dgemm_,
 * cgemm_, zgemm_, LP64), with the reference BLAS's prototypes. A call of
 * at least MGPU_HOST_BLAS_MIN (m*n*k) is turned into one column-major
 * GEMM (a row-major CBLAS call is turned around) and run on the GPUs
 * (host_offload.c); smaller ones, invalid ones and those the GPUs cannot
 * take go to the CPU BLAS the caller would have reached without mgpu
 * (caller_scope.c: also a library's own, loaded RTLD_LOCAL, as numpy and
 * SciPy load theirs). A caller with no CPU BLAS at all has its calls run
 * on the GPUs whatever their size, and mgpu stops the program with a
 * message where they cannot be: C is never left unwritten. A CPU BLAS
 * routine that calls another (the reference CBLAS calls the Fortran one)
 * passes straight through. Each call is counted for the report
 * (blas/blas_stats.c). */
#include "blas/blas_stats.h"
#include "blas/caller_scope.h"
#include "blas/host_offload.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
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

/* Where the exported routine was called from: the caller's code. */
#define SITE __builtin_extract_return_addr(__builtin_return_address(0))

/* The CPU BLAS routine `name` (static storage) that the caller at `site`
 * would have reached, and that caller's Fortran GEMM of `kind` in *fortran. */
static void *cpu_routine(const void *site, const char *name, enum mgpu_host_kind kind,
                         void **fortran)
{
    struct mgpu_scope_definition def;
    if (mgpu_scope_lookup(site, name, &def))
        mgpu_blas_stats_library(name, def.caller_path, def.fn != NULL ? def.library_path : NULL,
                                true);
    if (name == fortran_names[kind]) {
        *fortran = def.fn;
    } else {
        struct mgpu_scope_definition f;
        mgpu_scope_lookup(site, fortran_names[kind], &f);
        *fortran = f.fn;
    }
    return def.fn;
}

/* A call that neither the GPUs nor a CPU BLAS can compute: C would be left
 * unwritten, so the program stops here, loudly. */
static _Noreturn void no_blas(const char *name)
{
    fprintf(stderr,
            "mgpu: %s: the GPUs could not run it and the caller has no CPU BLAS behind mgpu's; "
            "stopping rather than leave C unwritten (run without --blas)\n",
            name);
    abort();
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
    if (count > 0 && g->cpu_fortran == NULL)
        no_blas(fortran_names[g->kind]);
    if (count > 0)
        ((fortran_gemm)g->cpu_fortran)(&ta, &tb, &m, &n, &k, g->alpha, g->a, &lda, b, &ldb, g->beta,
                                       c, &ldc, 1, 1);
}

static bool valid(const struct mgpu_host_gemm *g)
{
    long long rows_a = g->transa == 0 ? g->m : g->k, rows_b = g->transb == 0 ? g->k : g->n;
    return g->transa >= 0 && g->transb >= 0 && g->m >= 0 && g->n >= 0 && g->k >= 0 &&
           g->lda >= (rows_a > 1 ? rows_a : 1) && g->ldb >= (rows_b > 1 ? rows_b : 1) &&
           g->ldc >= (g->m > 1 ? g->m : 1);
}

/* Runs g on the GPUs when it is worth it, or whatever its size when the
 * caller has no CPU BLAS (`cpu` NULL); false when the caller is to call
 * the CPU BLAS. Counted either way. */
static bool offload(const char *name, const struct mgpu_host_gemm *g, const void *cpu)
{
    const char *why = NULL;
    if (!valid(g))
        why = "invalid arguments (the CPU BLAS reports them)";
    else if (cpu != NULL && (double)g->m * (double)g->n * (double)g->k < least_offloaded())
        why = "below MGPU_HOST_BLAS_MIN";
    else if (cpu != NULL && g->cpu_fortran == NULL)
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
                       const void *beta, void *c, int ldc, void *fortran, struct mgpu_host_gemm *g)
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
        .cpu_fortran = fortran,
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
        static const char name[] = #fn_name;                                                       \
        void *fortran;                                                                             \
        void (*cpu)(int, int, int, int, int, int, T, const T *, int, const T *, int, T, T *,       \
                    int) = (__typeof__(cpu))cpu_routine(SITE, name, kind, &fortran);               \
        struct mgpu_host_gemm g;                                                                   \
        bool done = false;                                                                         \
        if (inside++ == 0 && from_cblas(kind, layout, transa, transb, m, n, k, &alpha, a, lda, b,  \
                                        ldb, &beta, c, ldc, fortran, &g))                          \
            done = offload(name, &g, cpu);                                                         \
        if (!done && cpu == NULL)                                                                  \
            no_blas(name);                                                                         \
        if (!done)                                                                                 \
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
        static const char name[] = #fn_name;                                                       \
        void *fortran;                                                                             \
        void (*cpu)(int, int, int, int, int, int, const void *, const void *, int, const void *,   \
                    int, const void *, void *, int) =                                              \
            (__typeof__(cpu))cpu_routine(SITE, name, kind, &fortran);                              \
        struct mgpu_host_gemm g;                                                                   \
        bool done = false;                                                                         \
        if (inside++ == 0 && from_cblas(kind, layout, transa, transb, m, n, k, alpha, a, lda, b,   \
                                        ldb, beta, c, ldc, fortran, &g))                           \
            done = offload(name, &g, cpu);                                                         \
        if (!done && cpu == NULL)                                                                  \
            no_blas(name);                                                                         \
        if (!done)                                                                                 \
            cpu(layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);             \
        inside--;                                                                                  \
    }
CBLAS_COMPLEX(cblas_cgemm, MGPU_HOST_C)
CBLAS_COMPLEX(cblas_zgemm, MGPU_HOST_Z)

#define FORTRAN_PARAMS                                                                             \
    (const char *transa, const char *transb, const int *m, const int *n, const int *k,             \
     const void *alpha, const void *a, const int *lda, const void *b, const int *ldb,              \
     const void *beta, void *c, const int *ldc, size_t transa_len, size_t transb_len)
#define FORTRAN(fn_name, kind_)                                                                    \
    EXPORT void fn_name FORTRAN_PARAMS;                                                            \
    EXPORT void fn_name FORTRAN_PARAMS                                                             \
    {                                                                                              \
        void *fortran;                                                                             \
        fortran_gemm cpu = (fortran_gemm)cpu_routine(SITE, fortran_names[kind_], kind_, &fortran); \
        bool done = false;                                                                         \
        if (inside++ == 0) {                                                                       \
            struct mgpu_host_gemm g = {.kind = kind_,                                              \
                                       .transa = op_of_char(*transa),                              \
                                       .transb = op_of_char(*transb),                              \
                                       .m = *m,                                                    \
                                       .n = *n,                                                    \
                                       .k = *k,                                                    \
                                       .alpha = alpha,                                             \
                                       .beta = beta,                                               \
                                       .a = a,                                                     \
                                       .b = b,                                                     \
                                       .c = c,                                                     \
                                       .lda = *lda,                                                \
                                       .ldb = *ldb,                                                \
                                       .ldc = *ldc,                                                \
                                       .cpu_fortran = fortran};                                    \
            done = offload(#fn_name, &g, (void *)cpu);                                             \
        }                                                                                          \
        if (!done && cpu == NULL)                                                                  \
            no_blas(#fn_name);                                                                     \
        if (!done)                                                                                 \
            cpu(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, transa_len,          \
                transb_len);                                                                       \
        inside--;                                                                                  \
    }
FORTRAN(sgemm_, MGPU_HOST_S)
FORTRAN(dgemm_, MGPU_HOST_D)
FORTRAN(cgemm_, MGPU_HOST_C)
FORTRAN(zgemm_, MGPU_HOST_Z)
