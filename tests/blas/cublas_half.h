/* cuBLAS declares cublasHgemm for C++ only (its __half is a C++ class);
 * the C test programs and the fake cuBLAS call and define it with this
 * two-byte type, which has the same layout. */
#ifndef MGPU_TEST_CUBLAS_HALF_H
#define MGPU_TEST_CUBLAS_HALF_H

#include <cublas_v2.h>

typedef struct {
    unsigned short bits;
} half_t;

cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const half_t *, const half_t *, int, const half_t *, int, const half_t *,
                           half_t *, int);

#endif
