/* A CPU program's GEMM run on the GPUs (mgpu-run --blas): its operands
 * copied into device memory from the pool, the GEMM through cuBLAS (whose
 * calls mgpu's interposer splits over the run's GPUs), C copied back. The
 * columns of C go in chunks on two streams, so that one chunk's copies
 * overlap another's GEMM; copies from the program's (pageable) memory go
 * through mgpu's pinned staging buffers on every GPU at once. */
#ifndef MGPU_HOST_OFFLOAD_H
#define MGPU_HOST_OFFLOAD_H

#include <stddef.h>

enum mgpu_host_kind { MGPU_HOST_S, MGPU_HOST_D, MGPU_HOST_C, MGPU_HOST_Z };

/* One column-major GEMM (a row-major CBLAS call already turned around):
 * C = alpha op(A) op(B) + beta C, op 0 N, 1 T, 2 C. */
struct mgpu_host_gemm {
    enum mgpu_host_kind kind;
    int transa, transb;
    long long m, n, k;
    const void *alpha, *beta; /* host memory */
    const void *a, *b;
    void *c;
    long long lda, ldb, ldc;
    /* The caller's CPU BLAS's Fortran GEMM of this kind (for cpu_part), or
     * NULL when it has none. */
    void *cpu_fortran;
};

/* The columns [first, first + count) of C computed by the CPU BLAS (the
 * caller's), for the columns a failed offload did not finish. */
typedef void (*mgpu_host_cpu_part)(const struct mgpu_host_gemm *g, long long first,
                                   long long count);

struct mgpu_host_result {
    double gpu_ms;                /* from the first copy in to the last copy out */
    unsigned long long bytes_in;  /* copied to the GPUs */
    unsigned long long bytes_out; /* copied back */
};

/* Runs g on the GPUs. Returns 0; or -1 with *why (a static string) when
 * nothing was done (no driver or cuBLAS, device memory short), C
 * untouched; or 1 when the GPUs failed part way, the columns they did not
 * finish then computed by cpu_part, *why saying what failed. */
int mgpu_host_gemm_offload(const struct mgpu_host_gemm *g, mgpu_host_cpu_part cpu_part,
                           struct mgpu_host_result *result, const char **why);

#endif
