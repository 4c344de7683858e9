/* Part of libmgpu-blas.so: owns cublasLtMatmul as the program calls it
 * (PyTorch's addmm and nn.Linear, most bf16 and fp8 products). The call's
 * descriptors are read back from cuBLASLt; a call that can be cut without
 * changing its result (every matrix in column order and unbatched, C and
 * D laid out alike, no scaling factors or auxiliary outputs, an epilogue
 * of none, a bias per row, ReLU or GELU on D) is handed to the runtime as
 * a GEMM of its own library (mgpu_blas_gemm), which cuts D by columns
 * over the run's GPUs as it cuts the classic GEMMs. Each part runs on a
 * cuBLASLt handle of its GPU entry, with part-sized matrix layouts, the
 * program's descriptor (it holds no sizes), and on the home part the
 * program's algorithm and workspace; the other parts take a workspace of
 * their own and let cuBLASLt choose the algorithm. Every other call, and
 * the calls cuBLAS makes into cuBLASLt from inside its own routines, goes
 * on to the real routine, the one the caller would have reached
 * (caller_scope.c). */
#include "blas/blas_stats.h"
#include "blas/caller_scope.h"
#include "blas/gemm_call.h"
#include "blas/interposer.h"

/* cublasLt.h declares one function with an empty list of parameters. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#pragma GCC diagnostic pop
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

/* Each part's own workspace on GPU entries other than the home one. */
#define PART_WORKSPACE (32u << 20)

#define LT_FUNCTIONS(X)                                                                            \
    X(cublasLtMatmul)                                                                              \
    X(cublasLtCreate)                                                                              \
    X(cublasLtMatrixLayoutCreate)                                                                  \
    X(cublasLtMatrixLayoutDestroy)                                                                 \
    X(cublasLtMatrixLayoutGetAttribute)                                                            \
    X(cublasLtMatmulDescGetAttribute)

enum lt_function {
#define LT_ID(fn_name) F_##fn_name,
    LT_FUNCTIONS(LT_ID)
#undef LT_ID
        LT_FUNCTION_COUNT
};

static const char *const lt_names[LT_FUNCTION_COUNT] = {
#define LT_NAME(fn_name) #fn_name,
    LT_FUNCTIONS(LT_NAME)
#undef LT_NAME
};

/* One cuBLASLt that calls were found to reach: its functions, each
 * looked up in it once. */
struct lt_library {
    struct mgpu_interposed_library base;
    _Atomic(void *) fns[LT_FUNCTION_COUNT];
};

#define MAX_LIBRARIES 4
static struct lt_library libraries[MAX_LIBRARIES];
static struct mgpu_library_table library_table = {libraries, sizeof libraries[0], MAX_LIBRARIES, 0,
                                                  PTHREAD_MUTEX_INITIALIZER};

static void *lt_function(const struct mgpu_blas_library *api, enum lt_function f)
{
    struct lt_library *lib = (struct lt_library *)api;
    void *fn = atomic_load_explicit(&lib->fns[f], memory_order_acquire);
    if (fn == NULL) {
        fn = mgpu_scope_symbol(lib->base.dl, lt_names[f]);
        atomic_store_explicit(&lib->fns[f], fn, memory_order_release);
    }
    return fn;
}
#define LT(api, fn_name) ((__typeof__(&fn_name))lt_function(api, F_##fn_name))

/* A handle as the runtime sees it: the program's (on the stack, for one
 * call) or one of mgpu's per GPU entry, with the stream its part runs in
 * and, for mgpu's, a workspace of its own. */
struct lt_handle {
    cublasLtHandle_t lt;
    cudaStream_t stream;
    int pointer_mode;
    CUdeviceptr workspace;
    size_t workspace_bytes;
};

/* What a call says beyond the GEMM's sizes and pointers. */
struct lt_call {
    cublasLtMatmulDesc_t desc;
    cudaDataType a_type, b_type, c_type;
    const cublasLtMatmulAlgo_t *algo;
    void *workspace;
    size_t workspace_bytes;
    cudaStream_t stream; /* the program's */
};

static int create_handle(const struct mgpu_blas_library *api, void **handle)
{
    struct lt_handle *h = calloc(1, sizeof *h);
    if (h == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    int st = LT(api, cublasLtCreate) != NULL ? LT(api, cublasLtCreate)(&h->lt)
                                             : CUBLAS_STATUS_NOT_INITIALIZED;
    if (st != CUBLAS_STATUS_SUCCESS) {
        free(h);
        return st;
    }
    /* Made with the entry's context current and the hooks bypassed: this
     * is that GPU's own memory. Without it the part runs without one. The
     * driver is looked up, not linked: this library is preloaded into
     * programs that never load it. */
    void *fn = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), *driver = NULL;
    if (fn == NULL && (driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) != NULL)
        fn = dlsym(driver, "cuMemAlloc_v2"); /* loaded RTLD_LOCAL, as the CUDA runtime does */
    CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))fn;
    if (alloc != NULL && alloc(&h->workspace, PART_WORKSPACE) == CUDA_SUCCESS)
        h->workspace_bytes = PART_WORKSPACE;
    if (driver != NULL)
        dlclose(driver);
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

static int set_stream(const struct mgpu_blas_library *api, void *h, void *stream)
{
    (void)api;
    ((struct lt_handle *)h)->stream = stream;
    return 0;
}

static int get_stream(const struct mgpu_blas_library *api, void *h, void **stream)
{
    (void)api;
    *stream = ((struct lt_handle *)h)->stream;
    return 0;
}

static int get_pointer_mode(const struct mgpu_blas_library *api, void *h, int *mode)
{
    (void)api;
    *mode = ((struct lt_handle *)h)->pointer_mode;
    return 0;
}

static int set_pointer_mode(const struct mgpu_blas_library *api, void *h, int mode)
{
    (void)api;
    ((struct lt_handle *)h)->pointer_mode = mode; /* the descriptor says it to cuBLASLt */
    return 0;
}

/* cuBLASLt has no math or atomics modes on its handles. */
static int get_no_mode(const struct mgpu_blas_library *api, void *h, int *mode)
{
    (void)api;
    (void)h;
    *mode = 0;
    return 0;
}

static int set_no_mode(const struct mgpu_blas_library *api, void *h, int mode)
{
    (void)api;
    (void)h;
    (void)mode;
    return 0;
}

/* A column-ordered layout of rows x cols, or NULL. */
static cublasLtMatrixLayout_t layout(const struct mgpu_blas_library *api, cudaDataType type,
                                     long long rows, long long cols, long long ld)
{
    cublasLtMatrixLayout_t l = NULL;
    if (LT(api, cublasLtMatrixLayoutCreate)(&l, type, (uint64_t)rows, (uint64_t)cols, ld) !=
        CUBLAS_STATUS_SUCCESS)
        return NULL;
    return l;
}

/* Runs part `sub` of an Lt call on handle h (the program's stream for
 * the home part, a slice stream for the others). */
static int run_part(const struct mgpu_blas_library *api, const struct mgpu_gemm_call *sub,
                    void *handle)
{
    struct lt_handle *h = handle;
    const struct lt_call *lt = sub->lt;
    bool home = h->stream == lt->stream;
    cublasLtMatrixLayout_t la = layout(api, lt->a_type, sub->transa == 0 ? sub->m : sub->k,
                                       sub->transa == 0 ? sub->k : sub->m, sub->lda);
    cublasLtMatrixLayout_t lb = layout(api, lt->b_type, sub->transb == 0 ? sub->k : sub->n,
                                       sub->transb == 0 ? sub->n : sub->k, sub->ldb);
    cublasLtMatrixLayout_t lc = layout(api, lt->c_type, sub->m, sub->n, sub->ldc);
    int st = CUBLAS_STATUS_ALLOC_FAILED;
    if (la != NULL && lb != NULL && lc != NULL) {
        const cublasLtMatmulAlgo_t *algo = home ? lt->algo : NULL;
        void *ws = home ? lt->workspace : (void *)h->workspace;
        size_t ws_bytes = home ? lt->workspace_bytes : h->workspace_bytes;
        st = LT(api, cublasLtMatmul)(h->lt, lt->desc, sub->alpha, sub->a, la, sub->b, lb, sub->beta,
                                     sub->c, lc, sub->d, lc, algo, ws, ws_bytes, h->stream);
        /* The program's algorithm was chosen for the whole; a part of
         * another shape may not take it. */
        if (algo != NULL &&
            (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE))
            st = LT(api, cublasLtMatmul)(h->lt, lt->desc, sub->alpha, sub->a, la, sub->b, lb,
                                         sub->beta, sub->c, lc, sub->d, lc, NULL, ws, ws_bytes,
                                         h->stream);
    }
    cublasLtMatrixLayout_t all[3] = {la, lb, lc};
    for (int i = 0; i < 3; i++)
        if (all[i] != NULL)
            LT(api, cublasLtMatrixLayoutDestroy)(all[i]);
    return st;
}

/* The record of the cuBLASLt `def` found (interposer.h). */
static const struct mgpu_blas_library *library_of(const struct mgpu_scope_definition *def)
{
    static const struct mgpu_blas_library api = {
        .create = create_handle,
        .set_stream = set_stream,
        .get_stream = get_stream,
        .get_pointer_mode = get_pointer_mode,
        .set_pointer_mode = set_pointer_mode,
        .get_math_mode = get_no_mode,
        .set_math_mode = set_no_mode,
        .get_atomics_mode = get_no_mode,
        .set_atomics_mode = set_no_mode,
        .run = run_part,
    };
    return mgpu_library_table_find(&library_table, def, &api);
}

/* A layout as the call gave it. */
struct layout_facts {
    uint32_t type;
    int32_t order, batch;
    uint64_t rows, cols;
    int64_t ld;
};

static bool read_layout(const struct mgpu_blas_library *api, cublasLtMatrixLayout_t l,
                        struct layout_facts *f)
{
    __typeof__(&cublasLtMatrixLayoutGetAttribute) get = LT(api, cublasLtMatrixLayoutGetAttribute);
    size_t n;
    *f = (struct layout_facts){.batch = 1};
    return l != NULL && get != NULL &&
           get(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &f->type, sizeof f->type, &n) == 0 &&
           get(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &f->order, sizeof f->order, &n) == 0 &&
           get(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &f->rows, sizeof f->rows, &n) == 0 &&
           get(l, CUBLASLT_MATRIX_LAYOUT_COLS, &f->cols, sizeof f->cols, &n) == 0 &&
           get(l, CUBLASLT_MATRIX_LAYOUT_LD, &f->ld, sizeof f->ld, &n) == 0 &&
           get(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &f->batch, sizeof f->batch, &n) == 0;
}

/* The descriptor's attribute `a` of `bytes` bytes into *out (left as it
 * was where cuBLASLt does not know it). */
static bool desc_attribute(const struct mgpu_blas_library *api, cublasLtMatmulDesc_t d,
                           cublasLtMatmulDescAttributes_t a, void *out, size_t bytes)
{
    size_t n;
    __typeof__(&cublasLtMatmulDescGetAttribute) get = LT(api, cublasLtMatmulDescGetAttribute);
    return get != NULL && get(d, a, out, bytes, &n) == 0;
}

/* Whether epilogue e only adds a bias per row of D and applies an
 * elementwise function to D: then each column of D depends on nothing
 * but its own column of op(B). */
static bool cuttable_epilogue(uint32_t e)
{
    return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_RELU ||
           e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
           e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS;
}

/* The call as a GEMM of the runtime's, from its descriptors; false when
 * they cannot be read (the call then goes on as it is). */
static bool describe(const struct mgpu_blas_library *api, struct mgpu_gemm_call *call,
                     struct lt_call *lt, struct lt_handle *program, cublasLtMatrixLayout_t la,
                     cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                     cublasLtMatrixLayout_t ld)
{
    struct layout_facts fa, fb, fc, fd;
    int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N, transc = CUBLAS_OP_N,
            pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = NULL, *scales[5] = {NULL, NULL, NULL, NULL, NULL}, *aux = NULL;
    static const cublasLtMatmulDescAttributes_t scale_attributes[5] = {
        CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_AMAX_D_POINTER};
    if (!read_layout(api, la, &fa) || !read_layout(api, lb, &fb) || !read_layout(api, lc, &fc) ||
        !read_layout(api, ld, &fd) ||
        !desc_attribute(api, lt->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa) ||
        !desc_attribute(api, lt->desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb) ||
        !desc_attribute(api, lt->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) ||
        !desc_attribute(api, lt->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pointer_mode,
                        sizeof pointer_mode))
        return false;
    desc_attribute(api, lt->desc, CUBLASLT_MATMUL_DESC_TRANSC, &transc, sizeof transc);
    desc_attribute(api, lt->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    desc_attribute(api, lt->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
    bool scaled = false;
    for (int i = 0; i < 5; i++)
        scaled |=
            desc_attribute(api, lt->desc, scale_attributes[i], &scales[i], sizeof scales[i]) &&
            scales[i] != NULL;
    lt->a_type = (cudaDataType)fa.type;
    lt->b_type = (cudaDataType)fb.type;
    lt->c_type = (cudaDataType)fd.type;
    program->pointer_mode = pointer_mode;
    call->transa = transa;
    call->transb = transb;
    call->m = (long long)fd.rows;
    call->n = (long long)fd.cols;
    call->k = (long long)(transa == CUBLAS_OP_N ? fa.cols : fa.rows);
    call->lda = fa.ld;
    call->ldb = fb.ld;
    call->ldc = fd.ld;
    call->batch = 1;
    call->a_bytes = mgpu_blas_type_bytes(lt->a_type);
    call->b_bytes = mgpu_blas_type_bytes(lt->b_type);
    call->c_bytes = mgpu_blas_type_bytes(lt->c_type);
    call->bias = (epilogue & CUBLASLT_EPILOGUE_BIAS) ? bias : NULL;
    call->columns_only = call->bias != NULL; /* a part of D's rows needs its part of the bias */
    call->uncuttable = fa.order != CUBLASLT_ORDER_COL || fb.order != CUBLASLT_ORDER_COL ||
                       fc.order != CUBLASLT_ORDER_COL || fd.order != CUBLASLT_ORDER_COL ||
                       fa.batch > 1 || fb.batch > 1 || fc.batch > 1 || fd.batch > 1 ||
                       fc.type != fd.type || fc.rows != fd.rows || fc.cols != fd.cols ||
                       fc.ld != fd.ld || transc != CUBLAS_OP_N || !cuttable_epilogue(epilogue) ||
                       scaled || aux != NULL ||
                       (pointer_mode != CUBLASLT_POINTER_MODE_HOST &&
                        pointer_mode != CUBLASLT_POINTER_MODE_DEVICE) ||
                       call->a_bytes == 0 || call->b_bytes == 0 || call->c_bytes == 0;
    return true;
}

EXPORT cublasStatus_t CUBLASWINAPI cublasLtMatmul(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
    const void *A, cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
    const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
    cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
    size_t workspaceSizeInBytes, cudaStream_t stream)
{
    static const char name[] = "cublasLtMatmul";
    struct mgpu_scope_definition def;
    if (mgpu_scope_lookup(MGPU_CALL_SITE, name, &def))
        mgpu_blas_stats_library(name, def.caller_path, def.fn != NULL ? def.library_path : NULL,
                                false);
    if (def.fn == NULL)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    __typeof__(&cublasLtMatmul) real = (__typeof__(&cublasLtMatmul))def.fn;
    const struct mgpu_blas_library *lib;
    if (mgpu_blas_dispatching > 0 || mgpu_blas_from_cublas(def.caller_path) ||
        (lib = library_of(&def)) == NULL)
        return real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                    algo, workspace, workspaceSizeInBytes, stream);
    struct lt_handle program = {.lt = lightHandle, .stream = stream};
    struct lt_call lt = {.desc = computeDesc,
                         .algo = algo,
                         .workspace = workspace,
                         .workspace_bytes = workspaceSizeInBytes,
                         .stream = stream};
    struct mgpu_gemm_call call = {.name = name,
                                  .form = MGPU_GEMM_PLAIN,
                                  .handle = &program,
                                  .alpha = alpha,
                                  .beta = beta,
                                  .a = A,
                                  .b = B,
                                  .c = (void *)C,
                                  .d = D,
                                  .lt = &lt};
    int status;
    bool ran = false;
    if (describe(lib, &call, &lt, &program, Adesc, Bdesc, Cdesc, Ddesc)) {
        call.uncuttable |= C == NULL; /* no part of it to point at */
        mgpu_blas_dispatching++;
        ran = mgpu_blas_gemm(lib, &call, &status);
        mgpu_blas_dispatching--;
    }
    if (!ran) {
        status = real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                      algo, workspace, workspaceSizeInBytes, stream);
        mgpu_blas_gemm_ran_whole(status);
    }
    return (cublasStatus_t)status;
}
