/* A GEMM on the host for the cuBLAS tests: elements of five kinds (float,
 * double, complex float, complex double, half) loaded into double complex,
 * C = alpha op(A) op(B) + beta C summed over k in order, and stored back
 * rounded to the kind. The test client checks cuBLAS against it; the fake
 * cuBLAS (tests/fake/fake_cublas.c) computes with it, so that on the fake
 * a split GEMM must give the expected C bit for bit. */
#ifndef MGPU_GEMM_REFERENCE_H
#define MGPU_GEMM_REFERENCE_H

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum elem_kind { ELEM_R32, ELEM_R64, ELEM_C32, ELEM_C64, ELEM_R16 };

static inline size_t elem_bytes(enum elem_kind k)
{
    static const size_t bytes[] = {4, 8, 8, 16, 2};
    return bytes[k];
}

/* IEEE half <-> float, round to nearest even (no NaN payloads needed). */
static inline float half_to_float(uint16_t h)
{
    unsigned sign = (h >> 15) & 1, exp = (h >> 10) & 31, frac = h & 1023;
    float v;
    if (exp == 0)
        v = ldexpf((float)frac, -24);
    else if (exp == 31)
        v = frac ? NAN : INFINITY;
    else
        v = ldexpf((float)(frac | 1024), (int)exp - 25);
    return sign ? -v : v;
}

static inline uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    float a = fabsf(f);
    if (isnan(f))
        return sign | 0x7e00;
    if (a >= 65520.0f)
        return sign | 0x7c00;
    if (a < ldexpf(1.0f, -14)) { /* subnormal: units of 2^-24 */
        float units = nearbyintf(ldexpf(a, 24));
        return sign | (uint16_t)units;
    }
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    float units = nearbyintf(ldexpf(m, 11));
    if (units >= 2048.0f) {
        units /= 2.0f;
        e++;
    }
    return sign | (uint16_t)((e + 14) << 10) | (uint16_t)((unsigned)units & 1023);
}

static inline double complex elem_load(enum elem_kind k, const void *base, long long i)
{
    switch (k) {
    case ELEM_R32:
        return ((const float *)base)[i];
    case ELEM_R64:
        return ((const double *)base)[i];
    case ELEM_C32:
        return CMPLX(((const float *)base)[2 * i], ((const float *)base)[2 * i + 1]);
    case ELEM_C64:
        return CMPLX(((const double *)base)[2 * i], ((const double *)base)[2 * i + 1]);
    default:
        return half_to_float(((const uint16_t *)base)[i]);
    }
}

static inline void elem_store(enum elem_kind k, void *base, long long i, double complex v)
{
    switch (k) {
    case ELEM_R32:
        ((float *)base)[i] = (float)creal(v);
        break;
    case ELEM_R64:
        ((double *)base)[i] = creal(v);
        break;
    case ELEM_C32:
        ((float *)base)[2 * i] = (float)creal(v);
        ((float *)base)[2 * i + 1] = (float)cimag(v);
        break;
    case ELEM_C64:
        ((double *)base)[2 * i] = creal(v);
        ((double *)base)[2 * i + 1] = cimag(v);
        break;
    default:
        ((uint16_t *)base)[i] = float_to_half((float)creal(v));
        break;
    }
}

/* op: 0 N, 1 T, 2 C (conjugate transpose), as cublasOperation_t. */
static inline double complex op_load(enum elem_kind k, const void *m, int op, long long row,
                                     long long col, long long ld)
{
    if (op == 0)
        return elem_load(k, m, row + col * ld);
    double complex v = elem_load(k, m, col + row * ld);
    return op == 2 ? conj(v) : v;
}

/* C (kind kc) = alpha op(A) op(B) + beta C with A of kind ka, B of kind kb. */
static inline void reference_gemm(enum elem_kind ka, enum elem_kind kb, enum elem_kind kc,
                                  int transa, int transb, long long m, long long n, long long k,
                                  double complex alpha, const void *a, long long lda, const void *b,
                                  long long ldb, double complex beta, void *c, long long ldc)
{
    for (long long j = 0; j < n; j++)
        for (long long i = 0; i < m; i++) {
            double complex sum = 0;
            for (long long l = 0; l < k; l++)
                sum += op_load(ka, a, transa, i, l, lda) * op_load(kb, b, transb, l, j, ldb);
            double complex old = beta == 0 ? 0 : elem_load(kc, c, i + j * ldc);
            elem_store(kc, c, i + j * ldc, alpha * sum + beta * old);
        }
}

/* count elements of kind k from `seed`: multiples of 1/64 in [-1, 1] (exact
 * in every kind), real and imaginary parts alike. */
static inline void reference_fill(enum elem_kind k, void *p, long long count, unsigned seed)
{
    for (long long i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        double re = (double)((int)((seed >> 9) % 129) - 64) / 64.0;
        seed = seed * 1664525u + 1013904223u;
        double im = (double)((int)((seed >> 9) % 129) - 64) / 64.0;
        elem_store(k, p, i, CMPLX(re, im));
    }
}

/* cuBLASLt's epilogues on one element of D, by their bits (the values of
 * cublasLtEpilogue_t): BIAS (4) adds the row's bias, RELU (2) keeps the
 * positive part, GELU (32) is the tanh form. */
static inline double complex reference_epilogue(unsigned epilogue, double complex x,
                                                double complex bias)
{
    if (epilogue & 4u)
        x += bias;
    if (epilogue & 2u)
        x = creal(x) > 0 ? x : 0;
    if (epilogue & 32u) {
        double r = creal(x);
        x = 0.5 * r * (1.0 + tanh(0.7978845608028654 * (r + 0.044715 * r * r * r)));
    }
    return x;
}

#endif
