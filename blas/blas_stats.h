/* The report's figures for the program's cuBLAS GEMMs: per routine, the
 * calls, how many were split and along what, why the others were not,
 * the largest shape, the parts each GPU ran and the GPU time of the split
 * calls (events around each call's fork and join in the program's
 * stream); a CPU program's BLAS calls under --blas, on the GPUs or not
 * and why; and whether the program carries cuBLAS linked statically,
 * where no call can be intercepted. */
#ifndef MGPU_BLAS_STATS_H
#define MGPU_BLAS_STATS_H

#include "blas/gemm_plan.h"

#include <cuda.h>
#include <stddef.h>

enum mgpu_blas_unsplit {
    MGPU_BLAS_UNSPLIT_OFF,      /* MGPU_BLAS=never */
    MGPU_BLAS_UNSPLIT_ONE_GPU,  /* the run has one GPU */
    MGPU_BLAS_UNSPLIT_SMALL,    /* below MGPU_BLAS_MIN */
    MGPU_BLAS_UNSPLIT_CAPTURE,  /* the stream is being captured */
    MGPU_BLAS_UNSPLIT_SHAPE,    /* nothing to cut: pointer arrays of fewer matrices than GPUs */
    MGPU_BLAS_UNSPLIT_SCALARS,  /* alpha/beta in device memory another GPU cannot read */
    MGPU_BLAS_UNSPLIT_CONTEXT,  /* not on the run's home context, or no handle for a GPU */
    MGPU_BLAS_UNSPLIT_KIND,     /* a cuBLASLt layout, batch, epilogue or scaling not cut */
    MGPU_BLAS_UNSPLIT_FIRST,    /* MGPU_SPLIT=auto: the shape's first calls, being measured */
    MGPU_BLAS_UNSPLIT_SHORT,    /* MGPU_SPLIT=auto: under 100 us whole (gemm_policy.h) */
    MGPU_BLAS_UNSPLIT_ESTIMATE, /* MGPU_SPLIT=auto: the copies a split needs cost more */
    MGPU_BLAS_UNSPLIT_MEASURED, /* MGPU_SPLIT=auto: measured faster whole */
    MGPU_BLAS_UNSPLIT_REASON_COUNT
};

/* One call of routine `name` (a static string), not split for `why`. */
void mgpu_blas_stats_unsplit(const char *name, enum mgpu_blas_unsplit why, long long m, long long n,
                             long long k);
/* One call split as `plan` says, its parts reading the shared operand
 * from mirrors, from copies made for the call (staged), or where it is;
 * `start` and `end` are events recorded around it in
 * the program's stream (home context), or NULL; they are the stats' to
 * destroy. */
void mgpu_blas_stats_split(const char *name, const struct mgpu_gemm_plan *plan, bool mirrored,
                           bool staged, long long m, long long n, long long k, CUevent start,
                           CUevent end);

/* A CPU program's BLAS call under mgpu-run --blas (libmgpu-hostblas.so):
 * routine `name` (a static string) ran on the GPUs (cpu_reason NULL, with
 * its GPU time and the bytes copied in and out) or on the CPU BLAS for
 * cpu_reason (a static string). Exported for that library. */
__attribute__((visibility("default"))) void
mgpu_blas_stats_host(const char *name, const char *cpu_reason, long long m, long long n,
                     long long k, double gpu_ms, unsigned long long bytes_copied);

/* Where an interposed routine's calls from one calling library go:
 * `library` is the path of the cuBLAS (or, with `host`, the CPU BLAS)
 * the caller would have reached without mgpu ("" for the program
 * itself), said under -v; NULL when it has none, said at once in one line
 * and in the report. Called once per call site by the interposer
 * libraries (blas/caller_scope.h); exported for them. */
__attribute__((visibility("default"))) void
mgpu_blas_stats_library(const char *routine, const char *caller, const char *library, bool host);

/* One line per routine called, for the report; returns how many. The GPU
 * times are waited for here. */
size_t mgpu_blas_stats_describe(char (*lines)[160], size_t max);
/* The same for the CPU program's BLAS calls (--blas). */
size_t mgpu_blas_stats_describe_host(char (*lines)[160], size_t max);

/* Whether the program itself defines cuBLAS's functions (linked with the
 * static cuBLAS): its calls then never reach the interposer. */
bool mgpu_blas_linked_statically(void);

#endif
