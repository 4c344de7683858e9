/* Where a GEMM is cut for the run's GPUs: C = alpha op(A) op(B) + beta C,
 * column-major as cuBLAS takes it, cut into one sub-GEMM per GPU along the
 * columns of C (the default: each part's columns are contiguous in
 * memory, so a part can follow the owners of C's pages and each GPU
 * writes its own memory), along its rows (when C has fewer columns than
 * there are GPUs), or along the batch (a batched GEMM with at least one
 * matrix per GPU). Pure arithmetic: no driver, no cuBLAS. */
#ifndef MGPU_GEMM_PLAN_H
#define MGPU_GEMM_PLAN_H

#include "base/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* cuBLAS's cublasOperation_t values. */
enum mgpu_gemm_op { MGPU_GEMM_OP_N = 0, MGPU_GEMM_OP_T = 1, MGPU_GEMM_OP_C = 2 };

struct mgpu_gemm_shape {
    int transa, transb; /* enum mgpu_gemm_op */
    long long m, n, k;
    long long lda, ldb, ldc;
    long long batch;                  /* 1 for a plain GEMM */
    bool pointer_arrays;              /* batched through arrays of pointers (in device memory) */
    size_t a_bytes, b_bytes, c_bytes; /* bytes per element of A, B, C */
};

enum mgpu_gemm_cut { MGPU_GEMM_WHOLE, MGPU_GEMM_BY_COLUMNS, MGPU_GEMM_BY_ROWS, MGPU_GEMM_BY_BATCH };

const char *mgpu_gemm_cut_name(enum mgpu_gemm_cut cut);

struct mgpu_gemm_part {
    int gpu;              /* the run's GPU that computes it */
    long long begin, end; /* columns, rows or matrices of C: [begin, end) */
};

struct mgpu_gemm_plan {
    enum mgpu_gemm_cut cut;
    int nparts;
    struct mgpu_gemm_part parts[MGPU_MAX_GPUS]; /* in order of begin */
    bool by_owner;                              /* the column cuts follow the owners of C's pages */
};

/* The run's GPU that holds the byte at `address`, or -1 when unknown. */
typedef int (*mgpu_gemm_owner_fn)(uint64_t address, void *arg);

/* Plans `s` over `ngpus` GPUs. C starts at `c` (the first matrix of a
 * strided batch); owner, when not NULL, says who holds C's pages. A GEMM
 * that cannot be cut (an empty one, one GPU, pointer arrays with fewer
 * matrices than GPUs, too few rows and columns) is planned WHOLE with
 * one part on GPU 0. */
void mgpu_gemm_plan_make(const struct mgpu_gemm_shape *s, int ngpus, uint64_t c,
                         mgpu_gemm_owner_fn owner, void *owner_arg, struct mgpu_gemm_plan *out);

/* Where part p's operands start, as offsets in elements from A, B and C
 * (for BY_BATCH: in matrices, i.e. entries of the pointer arrays or
 * multiples of the strides), and its m, n and batch. */
struct mgpu_gemm_part_shape {
    long long a_offset, b_offset, c_offset;
    long long m, n, batch;
};
void mgpu_gemm_part_shape(const struct mgpu_gemm_shape *s, const struct mgpu_gemm_plan *plan, int p,
                          struct mgpu_gemm_part_shape *out);

#endif
