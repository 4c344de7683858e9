/* One intercepted cuBLAS GEMM call, as the interposed library
 * (blas/cublas_exports.c, libmgpu-blas.so, which knows cuBLAS's
 * prototypes) hands it to the runtime (blas/gemm_split.c, in libmgpu,
 * which does not link cuBLAS), and the few cuBLAS functions the runtime
 * calls back for the handles of the run's GPUs. Plain C types only: the
 * enums are cuBLAS's values. */
#ifndef MGPU_GEMM_CALL_H
#define MGPU_GEMM_CALL_H

#include <stdbool.h>
#include <stddef.h>

enum mgpu_gemm_form {
    MGPU_GEMM_PLAIN,   /* cublas?gemm, cublasGemmEx */
    MGPU_GEMM_STRIDED, /* ...StridedBatched */
    MGPU_GEMM_BATCHED, /* ...Batched: arrays of pointers in device memory */
};

struct mgpu_gemm_call {
    int routine;      /* the interposer's index, which its runner switches on */
    const char *name; /* "cublasSgemm_v2", for the report */
    enum mgpu_gemm_form form;
    void *handle; /* the program's cublasHandle_t */
    int transa, transb;
    long long m, n, k;
    const void *alpha, *beta;
    const void *a, *b; /* matrices, or with BATCHED the pointer arrays */
    void *c;
    long long lda, ldb, ldc;
    long long stride_a, stride_b, stride_c; /* in elements; STRIDED */
    long long batch;                        /* 1 for PLAIN */
    size_t a_bytes, b_bytes, c_bytes;       /* bytes per element */
    int a_type, b_type, c_type;             /* cudaDataType, for the Ex forms */
    int compute_type, algo;                 /* cublasComputeType_t, cublasGemmAlgo_t */
    /* cublasLtMatmul: D, laid out as C (same type and ld), written where
     * the classic routines write C; NULL for them. */
    void *d;
    const void *bias;  /* a vector every part reads whole (the epilogue's bias), or NULL */
    const void *lt;    /* the interposer's own description of an Lt call */
    bool uncuttable;   /* a layout or epilogue mgpu does not cut: runs whole */
    bool columns_only; /* only D's columns may be cut (a bias per row of D) */
};

/* One cuBLAS library as the interposer found it: the one the calling
 * library would have reached without mgpu (blas/caller_scope.h). A
 * program may hold several (its own and a framework's, loaded
 * RTLD_LOCAL); handles made by one are never given to another, so the
 * runtime keeps its handles per library. Each call returns a
 * cublasStatus_t; streams are cudaStream_t, which are CUstreams. */
struct mgpu_blas_library {
    const char *path; /* for messages */
    int (*create)(const struct mgpu_blas_library *lib, void **handle);
    int (*set_stream)(const struct mgpu_blas_library *lib, void *handle, void *stream);
    int (*get_stream)(const struct mgpu_blas_library *lib, void *handle, void **stream);
    int (*get_pointer_mode)(const struct mgpu_blas_library *lib, void *handle, int *mode);
    int (*set_pointer_mode)(const struct mgpu_blas_library *lib, void *handle, int mode);
    int (*get_math_mode)(const struct mgpu_blas_library *lib, void *handle, int *mode);
    int (*set_math_mode)(const struct mgpu_blas_library *lib, void *handle, int mode);
    int (*get_atomics_mode)(const struct mgpu_blas_library *lib, void *handle, int *mode);
    int (*set_atomics_mode)(const struct mgpu_blas_library *lib, void *handle, int mode);
    /* Runs `call` (a part of the program's call) on `handle` with this
     * library's routine. */
    int (*run)(const struct mgpu_blas_library *lib, const struct mgpu_gemm_call *call,
               void *handle);
};

/* Exported by libmgpu. Takes the program's call: returns true when mgpu
 * ran it (split over the run's GPUs), with cuBLAS's status in *status;
 * false when the caller is to run it unchanged (small, one GPU, BLAS
 * splitting off, a form mgpu cannot cut), after counting it for the
 * report. */
__attribute__((visibility("default"))) bool
mgpu_blas_gemm(const struct mgpu_blas_library *lib, const struct mgpu_gemm_call *call, int *status);
/* After a call mgpu_blas_gemm declined, once the interposer has called
 * the real routine on the same thread (status: its cuBLAS status): ends
 * the policy's timing of that whole call, if it had one. */
__attribute__((visibility("default"))) void mgpu_blas_gemm_ran_whole(int status);

#endif
