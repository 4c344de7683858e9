/* What the two halves of libmgpu-blas.so share (cublas_exports.c for the
 * classic GEMMs, cublaslt_exports.c for cublasLtMatmul): the guard for
 * calls made from inside another interposed call on the same thread,
 * element sizes, and where a call came from. */
#ifndef MGPU_BLAS_INTERPOSER_H
#define MGPU_BLAS_INTERPOSER_H

#include "blas/caller_scope.h"
#include "blas/gemm_call.h"

#include <library_types.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* A library that calls were found to reach (caller_scope.h), as the
 * runtime sees it (api) and as the interposer looks its functions up
 * (dl): the first member of each half's own record of one. */
struct mgpu_interposed_library {
    struct mgpu_blas_library api;
    void *dl;
};

/* A fixed table of such records: `max` of `size` bytes from `entries`,
 * each starting with its struct mgpu_interposed_library; searched
 * without the lock, added to under it. */
struct mgpu_library_table {
    void *entries;
    size_t size;
    int max;
    atomic_int count;
    pthread_mutex_t lock;
};

/* The record of the library `def` found, made on first sight with `api`
 * (its path taken from def); NULL when the table is full (that library's
 * calls then run whole). */
const struct mgpu_blas_library *mgpu_library_table_find(struct mgpu_library_table *t,
                                                        const struct mgpu_scope_definition *def,
                                                        const struct mgpu_blas_library *api);

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
