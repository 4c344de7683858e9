/* libmgpu-blas.so, which mgpu-run preloads: owns the cuBLAS GEMM entry
 * points a program calls (cublas?gemm, GemmEx, the strided and batched
 * forms, each also as _64), with cuBLAS's own prototypes. Each one hands
 * its call to the runtime (mgpu_blas_gemm in libmgpu), which splits it
 * over the run's GPUs or declines; a declined call goes on to the real
 * routine. The real routine is the one the caller would have reached
 * without mgpu (caller_scope.c): a framework's extension module loaded
 * RTLD_LOCAL reaches the cuBLAS in its own scope, the program the one in
 * the global scope, and the runtime is given that library's functions
 * only, so handles of one cuBLAS never meet another's routines. A program
 * that links cuBLAS statically defines these names itself and never
 * calls them. */
#include "blas/caller_scope.h"
#include "blas/gemm_call.h"
#include "blas/interposer.h"
#include "blas/blas_stats.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* cuBLAS declares its half-precision GEMMs for C++ only (__half is a C++
 * class); in C they take this two-byte type, which has the same layout. */
#ifndef __cplusplus
typedef struct {
    unsigned short bits;
} __half;
#define HALF_GEMMS(I)                                                                              \
    cublasStatus_t CUBLASWINAPI cublasHgemm##I(                                                    \
        cublasHandle_t, cublasOperation_t, cublasOperation_t, HALF_INT##I, HALF_INT##I,            \
        HALF_INT##I, const __half *, const __half *, HALF_INT##I, const __half *, HALF_INT##I,     \
        const __half *, __half *, HALF_INT##I);                                                    \
    cublasStatus_t CUBLASWINAPI cublasHgemmStridedBatched##I(                                      \
        cublasHandle_t, cublasOperation_t, cublasOperation_t, HALF_INT##I, HALF_INT##I,            \
        HALF_INT##I, const __half *, const __half *, HALF_INT##I, long long int, const __half *,   \
        HALF_INT##I, long long int, const __half *, __half *, HALF_INT##I, long long int,          \
        HALF_INT##I);                                                                              \
    cublasStatus_t CUBLASWINAPI cublasHgemmBatched##I(                                             \
        cublasHandle_t, cublasOperation_t, cublasOperation_t, HALF_INT##I, HALF_INT##I,            \
        HALF_INT##I, const __half *, const __half *const[], HALF_INT##I, const __half *const[],    \
        HALF_INT##I, const __half *, __half *const[], HALF_INT##I, HALF_INT##I);
#define HALF_INT int
#define HALF_INT_64 int64_t
HALF_GEMMS()
HALF_GEMMS(_64)
#endif

/* The routines: X(name, element type, integer type, form) for the typed
 * ones; the Ex forms take their types as arguments. */
#define TYPED_ROUTINES(X)                                                                          \
    X(cublasSgemm_v2, float, int, PLAIN)                                                           \
    X(cublasDgemm_v2, double, int, PLAIN)                                                          \
    X(cublasCgemm_v2, cuComplex, int, PLAIN)                                                       \
    X(cublasZgemm_v2, cuDoubleComplex, int, PLAIN)                                                 \
    X(cublasHgemm, __half, int, PLAIN)                                                             \
    X(cublasSgemm_v2_64, float, int64_t, PLAIN)                                                    \
    X(cublasDgemm_v2_64, double, int64_t, PLAIN)                                                   \
    X(cublasCgemm_v2_64, cuComplex, int64_t, PLAIN)                                                \
    X(cublasZgemm_v2_64, cuDoubleComplex, int64_t, PLAIN)                                          \
    X(cublasHgemm_64, __half, int64_t, PLAIN)                                                      \
    X(cublasSgemmStridedBatched, float, int, STRIDED)                                              \
    X(cublasDgemmStridedBatched, double, int, STRIDED)                                             \
    X(cublasCgemmStridedBatched, cuComplex, int, STRIDED)                                          \
    X(cublasZgemmStridedBatched, cuDoubleComplex, int, STRIDED)                                    \
    X(cublasHgemmStridedBatched, __half, int, STRIDED)                                             \
    X(cublasSgemmStridedBatched_64, float, int64_t, STRIDED)                                       \
    X(cublasDgemmStridedBatched_64, double, int64_t, STRIDED)                                      \
    X(cublasCgemmStridedBatched_64, cuComplex, int64_t, STRIDED)                                   \
    X(cublasZgemmStridedBatched_64, cuDoubleComplex, int64_t, STRIDED)                             \
    X(cublasHgemmStridedBatched_64, __half, int64_t, STRIDED)                                      \
    X(cublasSgemmBatched, float, int, BATCHED)                                                     \
    X(cublasDgemmBatched, double, int, BATCHED)                                                    \
    X(cublasCgemmBatched, cuComplex, int, BATCHED)                                                 \
    X(cublasZgemmBatched, cuDoubleComplex, int, BATCHED)                                           \
    X(cublasHgemmBatched, __half, int, BATCHED)                                                    \
    X(cublasSgemmBatched_64, float, int64_t, BATCHED)                                              \
    X(cublasDgemmBatched_64, double, int64_t, BATCHED)                                             \
    X(cublasCgemmBatched_64, cuComplex, int64_t, BATCHED)                                          \
    X(cublasZgemmBatched_64, cuDoubleComplex, int64_t, BATCHED)                                    \
    X(cublasHgemmBatched_64, __half, int64_t, BATCHED)
#define EX_ROUTINES(X)                                                                             \
    X(cublasGemmEx, int, PLAIN)                                                                    \
    X(cublasGemmEx_64, int64_t, PLAIN)                                                             \
    X(cublasGemmStridedBatchedEx, int, STRIDED)                                                    \
    X(cublasGemmStridedBatchedEx_64, int64_t, STRIDED)                                             \
    X(cublasGemmBatchedEx, int, BATCHED)                                                           \
    X(cublasGemmBatchedEx_64, int64_t, BATCHED)

enum routine {
#define ROUTINE_ID(fn_name, ...) R_##fn_name,
    TYPED_ROUTINES(ROUTINE_ID) EX_ROUTINES(ROUTINE_ID)
#undef ROUTINE_ID
        ROUTINE_COUNT
};

static const char *const routine_names[ROUTINE_COUNT] = {
#define ROUTINE_NAME(fn_name, ...) #fn_name,
    TYPED_ROUTINES(ROUTINE_NAME) EX_ROUTINES(ROUTINE_NAME)
#undef ROUTINE_NAME
};

/* The cuBLAS functions the runtime calls back, besides the GEMMs. */
#define HELPERS(X)                                                                                 \
    X(cublasCreate_v2)                                                                             \
    X(cublasSetStream_v2)                                                                          \
    X(cublasGetStream_v2)                                                                          \
    X(cublasGetPointerMode_v2)                                                                     \
    X(cublasSetPointerMode_v2)                                                                     \
    X(cublasGetMathMode)                                                                           \
    X(cublasSetMathMode)                                                                           \
    X(cublasGetAtomicsMode)                                                                        \
    X(cublasSetAtomicsMode)

enum helper {
#define HELPER_ID(fn_name) H_##fn_name,
    HELPERS(HELPER_ID)
#undef HELPER_ID
        HELPER_COUNT
};

static const char *const helper_names[HELPER_COUNT] = {
#define HELPER_NAME(fn_name) #fn_name,
    HELPERS(HELPER_NAME)
#undef HELPER_NAME
};

/* One cuBLAS that calls were found to reach: its functions, each looked
 * up in it once. */
struct cublas_library {
    struct mgpu_interposed_library base;
    _Atomic(void *) routines[ROUTINE_COUNT];
    _Atomic(void *) helpers[HELPER_COUNT];
};

#define MAX_LIBRARIES 8
static struct cublas_library libraries[MAX_LIBRARIES];
static struct mgpu_library_table library_table = {libraries, sizeof libraries[0], MAX_LIBRARIES, 0,
                                                  PTHREAD_MUTEX_INITIALIZER};

static void *library_function(void *dl, _Atomic(void *) *cache, const char *name)
{
    void *fn = atomic_load_explicit(cache, memory_order_acquire);
    if (fn == NULL) {
        fn = mgpu_scope_symbol(dl, name);
        atomic_store_explicit(cache, fn, memory_order_release);
    }
    return fn;
}

static void *routine_of(const struct mgpu_blas_library *api, enum routine r)
{
    struct cublas_library *lib = (struct cublas_library *)api;
    return library_function(lib->base.dl, &lib->routines[r], routine_names[r]);
}

static void *helper_of(const struct mgpu_blas_library *api, enum helper h)
{
    struct cublas_library *lib = (struct cublas_library *)api;
    return library_function(lib->base.dl, &lib->helpers[h], helper_names[h]);
}

/* Calls routine fn, the real one of `call`, on `handle` with the call's
 * arguments (the whole call, or one part of it that the runtime made). */
static int run_with(void *fn, const struct mgpu_gemm_call *c, void *handle)
{
    if (fn == NULL)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    switch ((enum routine)c->routine) {
#define RUN_PLAIN(fn_name, T, I)                                                                   \
    return ((__typeof__(&fn_name))fn)(handle, c->transa, c->transb, (I)c->m, (I)c->n, (I)c->k,     \
                                      c->alpha, c->a, (I)c->lda, c->b, (I)c->ldb, c->beta, c->c,   \
                                      (I)c->ldc)
#define RUN_STRIDED(fn_name, T, I)                                                                 \
    return ((__typeof__(&fn_name))fn)(handle, c->transa, c->transb, (I)c->m, (I)c->n, (I)c->k,     \
                                      c->alpha, c->a, (I)c->lda, c->stride_a, c->b, (I)c->ldb,     \
                                      c->stride_b, c->beta, c->c, (I)c->ldc, c->stride_c,          \
                                      (I)c->batch)
#define RUN_BATCHED(fn_name, T, I)                                                                 \
    return ((__typeof__(&fn_name))fn)(handle, c->transa, c->transb, (I)c->m, (I)c->n, (I)c->k,     \
                                      c->alpha, c->a, (I)c->lda, c->b, (I)c->ldb, c->beta, c->c,   \
                                      (I)c->ldc, (I)c->batch)
#define RUN_TYPED(fn_name, T, I, form)                                                             \
    case R_##fn_name:                                                                              \
        RUN_##form(fn_name, T, I);
        TYPED_ROUTINES(RUN_TYPED)
#define RUN_EX_PLAIN(fn_name, I)                                                                   \
    return ((__typeof__(&fn_name))fn)(handle, c->transa, c->transb, (I)c->m, (I)c->n, (I)c->k,     \
                                      c->alpha, c->a, c->a_type, (I)c->lda, c->b, c->b_type,       \
                                      (I)c->ldb, c->beta, c->c, c->c_type, (I)c->ldc,              \
                                      c->compute_type, c->algo)
#define RUN_EX_STRIDED(fn_name, I)                                                                 \
    return ((__typeof__(&fn_name))fn)(                                                             \
        handle, c->transa, c->transb, (I)c->m, (I)c->n, (I)c->k, c->alpha, c->a, c->a_type,        \
        (I)c->lda, c->stride_a, c->b, c->b_type, (I)c->ldb, c->stride_b, c->beta, c->c, c->c_type, \
        (I)c->ldc, c->stride_c, (I)c->batch, c->compute_type, c->algo)
#define RUN_EX_BATCHED(fn_name, I)                                                                 \
    return ((__typeof__(&fn_name))fn)(handle, c->transa, c->transb, (I)c->m, (I)c->n, (I)c->k,     \
                                      c->alpha, c->a, c->a_type, (I)c->lda, c->b, c->b_type,       \
                                      (I)c->ldb, c->beta, c->c, c->c_type, (I)c->ldc, (I)c->batch, \
                                      c->compute_type, c->algo)
#define RUN_EX(fn_name, I, form)                                                                   \
    case R_##fn_name:                                                                              \
        RUN_EX_##form(fn_name, I);
        EX_ROUTINES(RUN_EX)
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

/* The runtime's calls into one library. */
static int run_part(const struct mgpu_blas_library *api, const struct mgpu_gemm_call *c,
                    void *handle)
{
    return run_with(routine_of(api, (enum routine)c->routine), c, handle);
}

#define LIBRARY_CALL(field, symbol, params, args)                                                  \
    static int field params                                                                        \
    {                                                                                              \
        void *f = helper_of(api, H_##symbol);                                                      \
        return f ? ((__typeof__(&symbol))f)args : CUBLAS_STATUS_NOT_INITIALIZED;                   \
    }
LIBRARY_CALL(create_handle, cublasCreate_v2, (const struct mgpu_blas_library *api, void **h),
             ((cublasHandle_t *)h))
LIBRARY_CALL(set_stream, cublasSetStream_v2,
             (const struct mgpu_blas_library *api, void *h, void *s), (h, s))
LIBRARY_CALL(get_stream, cublasGetStream_v2,
             (const struct mgpu_blas_library *api, void *h, void **s), (h, (cudaStream_t *)s))
LIBRARY_CALL(get_pointer_mode, cublasGetPointerMode_v2,
             (const struct mgpu_blas_library *api, void *h, int *m), (h, (cublasPointerMode_t *)m))
LIBRARY_CALL(set_pointer_mode, cublasSetPointerMode_v2,
             (const struct mgpu_blas_library *api, void *h, int m), (h, (cublasPointerMode_t)m))
LIBRARY_CALL(get_math_mode, cublasGetMathMode,
             (const struct mgpu_blas_library *api, void *h, int *m), (h, (cublasMath_t *)m))
LIBRARY_CALL(set_math_mode, cublasSetMathMode,
             (const struct mgpu_blas_library *api, void *h, int m), (h, (cublasMath_t)m))
LIBRARY_CALL(get_atomics_mode, cublasGetAtomicsMode,
             (const struct mgpu_blas_library *api, void *h, int *m), (h, (cublasAtomicsMode_t *)m))
LIBRARY_CALL(set_atomics_mode, cublasSetAtomicsMode,
             (const struct mgpu_blas_library *api, void *h, int m), (h, (cublasAtomicsMode_t)m))

/* The record of the cuBLAS `def` found (interposer.h). */
static const struct mgpu_blas_library *library_of(const struct mgpu_scope_definition *def)
{
    static const struct mgpu_blas_library api = {
        .create = create_handle,
        .set_stream = set_stream,
        .get_stream = get_stream,
        .get_pointer_mode = get_pointer_mode,
        .set_pointer_mode = set_pointer_mode,
        .get_math_mode = get_math_mode,
        .set_math_mode = set_math_mode,
        .get_atomics_mode = get_atomics_mode,
        .set_atomics_mode = set_atomics_mode,
        .run = run_part,
    };
    return mgpu_library_table_find(&library_table, def, &api);
}

__thread int mgpu_blas_dispatching;

/* The bytes of one element of a cudaDataType, or 0 for the packed types
 * (under a byte) whose parts cannot start at any element. */
size_t mgpu_blas_type_bytes(cudaDataType t)
{
    switch (t) {
    case CUDA_R_8I:
    case CUDA_R_8U:
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
        return 1;
    case CUDA_R_16F:
    case CUDA_R_16BF:
    case CUDA_C_8I:
    case CUDA_C_8U:
    case CUDA_R_16I:
    case CUDA_R_16U:
        return 2;
    case CUDA_R_32F:
    case CUDA_C_16F:
    case CUDA_C_16BF:
    case CUDA_R_32I:
    case CUDA_R_32U:
    case CUDA_C_16I:
    case CUDA_C_16U:
        return 4;
    case CUDA_R_64F:
    case CUDA_C_32F:
    case CUDA_R_64I:
    case CUDA_R_64U:
    case CUDA_C_32I:
    case CUDA_C_32U:
        return 8;
    case CUDA_C_64F:
    case CUDA_C_64I:
    case CUDA_C_64U:
        return 16;
    default:
        return 0;
    }
}

bool mgpu_blas_from_cublas(const char *path)
{
    const char *slash = strrchr(path, '/'), *name = slash != NULL ? slash + 1 : path;
    return strncmp(name, "libcublas.so", 12) == 0 || strncmp(name, "libcublasLt.so", 14) == 0;
}

/* The runtime's split, else the real routine: the one the caller at
 * `site` would have reached. Element sizes of 0 (packed types) go
 * straight on; a caller with no cuBLAS behind mgpu's is told so, as it
 * would be without a cuBLAS (and the report says it). */
static cublasStatus_t dispatch(const struct mgpu_gemm_call *call, const void *site)
{
    struct mgpu_scope_definition def;
    const char *name = routine_names[call->routine];
    if (mgpu_scope_lookup(site, name, &def))
        mgpu_blas_stats_library(name, def.caller_path, def.fn != NULL ? def.library_path : NULL,
                                false);
    if (def.fn == NULL)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    const struct mgpu_blas_library *lib = NULL;
    int status;
    if (mgpu_blas_dispatching > 0 || call->a_bytes == 0 || call->b_bytes == 0 ||
        call->c_bytes == 0 || (lib = library_of(&def)) == NULL)
        return (cublasStatus_t)run_with(def.fn, call, call->handle);
    mgpu_blas_dispatching++;
    if (!mgpu_blas_gemm(lib, call, &status)) {
        status = run_with(def.fn, call, call->handle);
        mgpu_blas_gemm_ran_whole(status);
    }
    mgpu_blas_dispatching--;
    return (cublasStatus_t)status;
}

#define CALL_COMMON(fn_name, form_)                                                                \
    .routine = R_##fn_name, .name = #fn_name, .form = MGPU_GEMM_##form_, .handle = handle,         \
    .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,      \
    .lda = lda, .ldb = ldb, .ldc = ldc

#define DEFINE_PLAIN(fn_name, T, I)                                                                \
    EXPORT cublasStatus_t CUBLASWINAPI fn_name(                                                    \
        cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,  \
        const T *alpha, const T *A, I lda, const T *B, I ldb, const T *beta, T *C, I ldc)          \
    {                                                                                              \
        struct mgpu_gemm_call call = {CALL_COMMON(fn_name, PLAIN),                                 \
                                      .a = A,                                                      \
                                      .b = B,                                                      \
                                      .c = C,                                                      \
                                      .batch = 1,                                                  \
                                      .a_bytes = sizeof(T),                                        \
                                      .b_bytes = sizeof(T),                                        \
                                      .c_bytes = sizeof(T)};                                       \
        return dispatch(&call, MGPU_CALL_SITE);                                                    \
    }
#define DEFINE_STRIDED(fn_name, T, I)                                                              \
    EXPORT cublasStatus_t CUBLASWINAPI fn_name(                                                    \
        cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,  \
        const T *alpha, const T *A, I lda, long long int strideA, const T *B, I ldb,               \
        long long int strideB, const T *beta, T *C, I ldc, long long int strideC, I batchCount)    \
    {                                                                                              \
        struct mgpu_gemm_call call = {CALL_COMMON(fn_name, STRIDED),                               \
                                      .a = A,                                                      \
                                      .b = B,                                                      \
                                      .c = C,                                                      \
                                      .stride_a = strideA,                                         \
                                      .stride_b = strideB,                                         \
                                      .stride_c = strideC,                                         \
                                      .batch = batchCount,                                         \
                                      .a_bytes = sizeof(T),                                        \
                                      .b_bytes = sizeof(T),                                        \
                                      .c_bytes = sizeof(T)};                                       \
        return dispatch(&call, MGPU_CALL_SITE);                                                    \
    }
#define DEFINE_BATCHED(fn_name, T, I)                                                              \
    EXPORT cublasStatus_t CUBLASWINAPI fn_name(                                                    \
        cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,  \
        const T *alpha, const T *const Aarray[], I lda, const T *const Barray[], I ldb,            \
        const T *beta, T *const Carray[], I ldc, I batchCount)                                     \
    {                                                                                              \
        struct mgpu_gemm_call call = {                                                             \
            CALL_COMMON(fn_name, BATCHED), .a = Aarray,         .b = Barray,                       \
            .c = (void *)Carray,           .batch = batchCount, .a_bytes = sizeof(T),              \
            .b_bytes = sizeof(T),          .c_bytes = sizeof(T)};                                  \
        return dispatch(&call, MGPU_CALL_SITE);                                                    \
    }
#define DEFINE_TYPED(fn_name, T, I, form) DEFINE_##form(fn_name, T, I)
TYPED_ROUTINES(DEFINE_TYPED)

#define EX_TYPES                                                                                   \
    .a_type = Atype, .b_type = Btype, .c_type = Ctype, .compute_type = computeType, .algo = algo,  \
    .a_bytes = mgpu_blas_type_bytes(Atype), .b_bytes = mgpu_blas_type_bytes(Btype),                \
    .c_bytes = mgpu_blas_type_bytes(Ctype)
#define DEFINE_EX_PLAIN(fn_name, I)                                                                \
    EXPORT cublasStatus_t CUBLASWINAPI fn_name(                                                    \
        cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,  \
        const void *alpha, const void *A, cudaDataType Atype, I lda, const void *B,                \
        cudaDataType Btype, I ldb, const void *beta, void *C, cudaDataType Ctype, I ldc,           \
        cublasComputeType_t computeType, cublasGemmAlgo_t algo)                                    \
    {                                                                                              \
        struct mgpu_gemm_call call = {                                                             \
            CALL_COMMON(fn_name, PLAIN), .a = A, .b = B, .c = C, .batch = 1, EX_TYPES};            \
        return dispatch(&call, MGPU_CALL_SITE);                                                    \
    }
#define DEFINE_EX_STRIDED(fn_name, I)                                                              \
    EXPORT cublasStatus_t CUBLASWINAPI fn_name(                                                    \
        cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,  \
        const void *alpha, const void *A, cudaDataType Atype, I lda, long long int strideA,        \
        const void *B, cudaDataType Btype, I ldb, long long int strideB, const void *beta,         \
        void *C, cudaDataType Ctype, I ldc, long long int strideC, I batchCount,                   \
        cublasComputeType_t computeType, cublasGemmAlgo_t algo)                                    \
    {                                                                                              \
        struct mgpu_gemm_call call = {CALL_COMMON(fn_name, STRIDED),                               \
                                      .a = A,                                                      \
                                      .b = B,                                                      \
                                      .c = C,                                                      \
                                      .stride_a = strideA,                                         \
                                      .stride_b = strideB,                                         \
                                      .stride_c = strideC,                                         \
                                      .batch = batchCount,                                         \
                                      EX_TYPES};                                                   \
        return dispatch(&call, MGPU_CALL_SITE);                                                    \
    }
#define DEFINE_EX_BATCHED(fn_name, I)                                                              \
    EXPORT cublasStatus_t CUBLASWINAPI fn_name(                                                    \
        cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,  \
        const void *alpha, const void *const Aarray[], cudaDataType Atype, I lda,                  \
        const void *const Barray[], cudaDataType Btype, I ldb, const void *beta,                   \
        void *const Carray[], cudaDataType Ctype, I ldc, I batchCount,                             \
        cublasComputeType_t computeType, cublasGemmAlgo_t algo)                                    \
    {                                                                                              \
        struct mgpu_gemm_call call = {                                                             \
            CALL_COMMON(fn_name, BATCHED), .a = Aarray,         .b = Barray,                       \
            .c = (void *)Carray,           .batch = batchCount, EX_TYPES};                         \
        return dispatch(&call, MGPU_CALL_SITE);                                                    \
    }
#define DEFINE_EX(fn_name, I, form) DEFINE_EX_##form(fn_name, I)
EX_ROUTINES(DEFINE_EX)
