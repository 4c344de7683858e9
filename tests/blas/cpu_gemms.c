/* A CPU program linked with a CPU BLAS (Debian's reference BLAS or
 * OpenBLAS), for mgpu-run --blas: GEMMs through CBLAS in both layouts and
 * through the Fortran entry points, in the four types, every transpose
 * kind, padded leading dimensions, beta zero and not, and one small call;
 * each C checked against the host GEMM of gemm_reference.h within the
 * type's tolerance, the padding rows around it unchanged. Then, with
 * --time N, an N^3 cblas_sgemm timed on the host clock (median of 3 after
 * one more), its C checked on a sample.
 * Prints one line per case and "cpu_gemms: N cases correct"; exits 1 on a
 * wrong element. */
#include "gemm_reference.h"

#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The Fortran BLAS, LP64, as gfortran passes characters. */
void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *,
            const float *, const int *, const float *, const int *, const float *, float *,
            const int *, size_t, size_t);
void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *,
            const double *, const int *, const double *, const int *, const double *, double *,
            const int *, size_t, size_t);
void zgemm_(const char *, const char *, const int *, const int *, const int *, const void *,
            const void *, const int *, const void *, const int *, const void *, void *, const int *,
            size_t, size_t);

enum api { CBLAS_COL, CBLAS_ROW, FORTRAN };

struct gemm_case {
    const char *label;
    enum api api;
    enum elem_kind kind;
    int transa, transb; /* 0 N, 1 T, 2 C */
    int m, n, k;
    bool beta_zero;
};

static const CBLAS_TRANSPOSE cblas_ops[] = {CblasNoTrans, CblasTrans, CblasConjTrans};

/* The case's call. In the row-major layout the matrices are stored
 * transposed: the reference is computed on the column-major view, as
 * C^T = op(B)^T op(A)^T with the operands swapped. */
static void call(const struct gemm_case *c, const void *alpha, const void *beta, const void *a,
                 int lda, const void *b, int ldb, void *cm, int ldc)
{
    CBLAS_LAYOUT layout = c->api == CBLAS_ROW ? CblasRowMajor : CblasColMajor;
    CBLAS_TRANSPOSE ta = cblas_ops[c->transa], tb = cblas_ops[c->transb];
    static const char ops[] = "NTC";
    char fa = ops[c->transa], fb = ops[c->transb];
    if (c->api == FORTRAN) {
        switch (c->kind) {
        case ELEM_R32:
            sgemm_(&fa, &fb, &c->m, &c->n, &c->k, alpha, a, &lda, b, &ldb, beta, cm, &ldc, 1, 1);
            return;
        case ELEM_R64:
            dgemm_(&fa, &fb, &c->m, &c->n, &c->k, alpha, a, &lda, b, &ldb, beta, cm, &ldc, 1, 1);
            return;
        default:
            zgemm_(&fa, &fb, &c->m, &c->n, &c->k, alpha, a, &lda, b, &ldb, beta, cm, &ldc, 1, 1);
            return;
        }
    }
    switch (c->kind) {
    case ELEM_R32:
        cblas_sgemm(layout, ta, tb, c->m, c->n, c->k, *(const float *)alpha, a, lda, b, ldb,
                    *(const float *)beta, cm, ldc);
        return;
    case ELEM_R64:
        cblas_dgemm(layout, ta, tb, c->m, c->n, c->k, *(const double *)alpha, a, lda, b, ldb,
                    *(const double *)beta, cm, ldc);
        return;
    case ELEM_C32:
        cblas_cgemm(layout, ta, tb, c->m, c->n, c->k, alpha, a, lda, b, ldb, beta, cm, ldc);
        return;
    default:
        cblas_zgemm(layout, ta, tb, c->m, c->n, c->k, alpha, a, lda, b, ldb, beta, cm, ldc);
        return;
    }
}

static bool run_case(const struct gemm_case *c)
{
    bool row = c->api == CBLAS_ROW;
    /* The column-major problem the call stands for. */
    int m = row ? c->n : c->m, n = row ? c->m : c->n;
    int ta = row ? c->transb : c->transa, tb = row ? c->transa : c->transb;
    int rows_a = ta == 0 ? m : c->k, cols_a = ta == 0 ? c->k : m;
    int rows_b = tb == 0 ? c->k : n, cols_b = tb == 0 ? n : c->k;
    int lda = rows_a + 3, ldb = rows_b + 1, ldc = m + 2;
    size_t e = elem_bytes(c->kind);
    long long a_count = (long long)lda * cols_a, b_count = (long long)ldb * cols_b;
    long long c_count = (long long)ldc * n;
    void *a = malloc((size_t)a_count * e), *b = malloc((size_t)b_count * e);
    void *got = malloc((size_t)c_count * e), *want = malloc((size_t)c_count * e);
    reference_fill(c->kind, a, a_count, 3);
    reference_fill(c->kind, b, b_count, 4);
    reference_fill(c->kind, got, c_count, 5);
    memcpy(want, got, (size_t)c_count * e);
    bool complex_kind = c->kind == ELEM_C32 || c->kind == ELEM_C64;
    double complex alpha = complex_kind ? CMPLX(1.5, 0.5) : 1.5;
    double complex beta = c->beta_zero ? 0 : complex_kind ? CMPLX(-0.5, 0.25) : -0.5;
    unsigned char scalars[32];
    elem_store(c->kind, scalars, 0, alpha);
    elem_store(c->kind, scalars + 16, 0, beta);
    /* In row-major order the first matrix argument is the column-major
     * problem's B and the second its A. */
    if (row)
        call(c, scalars, scalars + 16, b, ldb, a, lda, got, ldc);
    else
        call(c, scalars, scalars + 16, a, lda, b, ldb, got, ldc);
    reference_gemm(c->kind, c->kind, c->kind, ta, tb, m, n, c->k, alpha, a, lda, b, ldb, beta, want,
                   ldc);
    double scale = 2.0 * c->k + 1.0;
    double tol = (c->kind == ELEM_R64 || c->kind == ELEM_C64 ? 1e-12 : 1e-5) * scale;
    bool ok = true;
    for (long long i = 0; ok && i < c_count; i++) {
        double complex g = elem_load(c->kind, got, i), w = elem_load(c->kind, want, i);
        if (cabs(g - w) > tol) {
            printf("FAIL: %s: element %lld of C's buffer is %g%+gi, not %g%+gi\n", c->label, i,
                   creal(g), cimag(g), creal(w), cimag(w));
            ok = false;
        }
    }
    if (ok)
        printf("ok: %s\n", c->label);
    free(a);
    free(b);
    free(got);
    free(want);
    return ok;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* An n^3 SGEMM on the host clock: the whole call, copies included. */
static bool time_sgemm(int n)
{
    size_t count = (size_t)n * (size_t)n;
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    float *c = malloc(count * sizeof *c);
    reference_fill(ELEM_R32, a, (long long)count, 8);
    reference_fill(ELEM_R32, b, (long long)count, 9);
    double seconds[4];
    for (int r = 0; r < 4; r++) {
        double t0 = now_s();
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                    n);
        seconds[r] = now_s() - t0;
    }
    qsort(seconds + 1, 3, sizeof seconds[0], compare);
    unsigned seed = 77;
    for (int s = 0; s < 32; s++) {
        seed = seed * 1664525u + 1013904223u;
        int i = (int)(seed % (unsigned)n);
        seed = seed * 1664525u + 1013904223u;
        int j = (int)(seed % (unsigned)n);
        double w = 0;
        for (int l = 0; l < n; l++)
            w += (double)a[i + (size_t)l * n] * b[l + (size_t)j * n];
        if (fabs(c[i + (size_t)j * n] - w) > 1e-5 * (2.0 * n + 1)) {
            printf("FAIL: timed sgemm: C[%d,%d] is %g, not %g\n", i, j, c[i + (size_t)j * n], w);
            return false;
        }
    }
    printf("timed: n=%d seconds=%.4f gflops=%.1f\n", n, seconds[2],
           2.0 * n * (double)n * n / seconds[2] / 1e9);
    free(a);
    free(b);
    free(c);
    return true;
}

int main(int argc, char **argv)
{
    static const struct gemm_case cases[] = {
        {"cblas_sgemm column-major N,N", CBLAS_COL, ELEM_R32, 0, 0, 150, 97, 61, false},
        {"cblas_sgemm column-major T,C", CBLAS_COL, ELEM_R32, 1, 2, 150, 97, 61, false},
        {"cblas_sgemm row-major N,T", CBLAS_ROW, ELEM_R32, 0, 1, 120, 83, 77, false},
        {"cblas_sgemm row-major T,N, beta 0", CBLAS_ROW, ELEM_R32, 1, 0, 64, 130, 50, true},
        {"cblas_sgemm small (8x8x8)", CBLAS_COL, ELEM_R32, 0, 0, 8, 8, 8, false},
        {"cblas_dgemm row-major N,N", CBLAS_ROW, ELEM_R64, 0, 0, 99, 101, 70, false},
        {"cblas_dgemm column-major T,T", CBLAS_COL, ELEM_R64, 1, 1, 88, 90, 66, false},
        {"cblas_cgemm column-major C,N", CBLAS_COL, ELEM_C32, 2, 0, 70, 65, 40, false},
        {"cblas_zgemm row-major N,C", CBLAS_ROW, ELEM_C64, 0, 2, 66, 72, 48, false},
        {"sgemm_ T,N", FORTRAN, ELEM_R32, 1, 0, 140, 90, 64, false},
        {"dgemm_ N,T, beta 0", FORTRAN, ELEM_R64, 0, 1, 100, 120, 55, true},
        {"zgemm_ C,C", FORTRAN, ELEM_C64, 2, 2, 50, 60, 45, false},
    };
    int count = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < count; i++)
        if (!run_case(&cases[i]))
            return 1;
    printf("cpu_gemms: %d cases correct\n", count);
    if (argc > 2 && strcmp(argv[1], "--time") == 0 && !time_sgemm(atoi(argv[2])))
        return 1;
    return 0;
}
