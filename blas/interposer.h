/* What the two halves of libmgpu-blas.so share (cublas_exports.c for the
 * classic GEMMs, cublaslt_exports.c for cublasLtMatmul): the guard for
 * calls made from inside another interposed call on the same thread,
 * element sizes, and where a call came from. */
#ifndef MGPU_BLAS_INTERPOSER_H
#define MGPU_BLAS_INTERPOSER_H

#include <library_types.h>
#include <stdbool.h>
#include <stddef.h>

/* How deep this thread is inside interposed calls that went to the
 * runtime: cuBLAS calling its own entry points, or cuBLASLt, from inside
 * one (through its PLT, which finds the interposer first). Such calls are
 * the outer call's business and go straight on. */
extern __thread int mgpu_blas_dispatching;

/* The bytes of one element of a cudaDataType, or 0 for the packed types
 * (under a byte) whose parts cannot start at any element. */
size_t mgpu_blas_type_bytes(cudaDataType t);

/* Whether the object at `path` is a cuBLAS library itself (libcublas,
 * libcublasLt): its calls into the interposer are made from inside one
 * of its own routines. */
bool mgpu_blas_from_cublas(const char *path);

/* Where the exported routine was called from: the caller's code. */
#define MGPU_CALL_SITE __builtin_extract_return_addr(__builtin_return_address(0))

#endif
