/* Owns running a CPU program's GEMM on the GPUs (see host_offload.h): the
 * driver context and cuBLAS handle it uses, found and made on first use;
 * device buffers for A, B and C from the pool, kept between calls and
 * grown when a call needs more; the chunked copies and GEMMs on two
 * streams. The program here is a CUDA program of mgpu's: its driver calls
 * go through mgpu's hooks like any program's (allocations in the pool,
 * pageable copies staged and split by owner), and its cuBLAS calls through
 * mgpu's interposer (blas/cublas_exports.c), which splits them. */
#include "blas/host_offload.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Chunks of C's columns: enough for one chunk's copies to overlap
 * another's GEMM, few enough that each GEMM is still large. */
#define MIN_CHUNKS 2
#define MAX_CHUNKS 8
#define CHUNK_BYTES (256ull << 20)

typedef int (*create_fn)(void **);
typedef int (*set_stream_fn)(void *, CUstream);
typedef int (*set_mode_fn)(void *, int);
typedef int (*gemm_fn)(void *, int, int, int, int, int, const void *, const void *, int,
                       const void *, int, const void *, void *, int);

static const char *const gemm_names[] = {"cublasSgemm_v2", "cublasDgemm_v2", "cublasCgemm_v2",
                                         "cublasZgemm_v2"};
static const size_t kind_bytes[] = {4, 8, 8, 16};

/* Everything made once, under offload_lock, which every offload holds:
 * one GEMM on the GPUs at a time. */
static pthread_mutex_t offload_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool tried, ready;
    const char *why_not;
    CUcontext ctx;
    CUstream streams[2];
    CUevent a_copied, start, end;
    void *handle;
    set_stream_fn set_stream;
    gemm_fn gemm[4];
    CUdeviceptr buffers[3]; /* A, B, C */
    size_t sizes[3];
} gpu;

/* The cuBLAS mgpu-run names (MGPU_CUBLAS), else the shared one the loader
 * finds, else the one of the toolkit mgpu was built with.
 * Loaded global, so that mgpu's interposer, preloaded, finds it behind
 * itself. */
static void *load_cublas(void)
{
    const char *named = getenv("MGPU_CUBLAS");
    if (named != NULL && *named != '\0')
        return dlopen(named, RTLD_NOW | RTLD_GLOBAL);
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                        MGPU_CUDA_LIBDIR "/libcublas.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
        if (h != NULL)
            return h;
    }
    return NULL;
}

static const char *start_gpu(void)
{
    CUdevice dev;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&gpu.ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(gpu.ctx) != CUDA_SUCCESS)
        return "no GPU: the CUDA driver could not be started";
    void *lib = load_cublas();
    if (lib == NULL)
        return "no cuBLAS: libcublas.so could not be loaded (set MGPU_CUBLAS to its path)";
    create_fn create = (create_fn)dlsym(lib, "cublasCreate_v2");
    set_mode_fn pointer_mode = (set_mode_fn)dlsym(lib, "cublasSetPointerMode_v2");
    gpu.set_stream = (set_stream_fn)dlsym(lib, "cublasSetStream_v2");
    /* The GEMMs as the program would find them: mgpu's interposer first. */
    for (int i = 0; i < 4; i++)
        gpu.gemm[i] = (gemm_fn)dlsym(RTLD_DEFAULT, gemm_names[i]);
    if (create == NULL || pointer_mode == NULL || gpu.set_stream == NULL || gpu.gemm[0] == NULL ||
        gpu.gemm[1] == NULL || gpu.gemm[2] == NULL || gpu.gemm[3] == NULL)
        return "the cuBLAS found lacks the functions mgpu calls";
    if (create(&gpu.handle) != 0 || pointer_mode(gpu.handle, 0) != 0)
        return "cuBLAS could not make a handle";
    for (int s = 0; s < 2; s++)
        if (cuStreamCreate(&gpu.streams[s], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
            return "no streams";
    if (cuEventCreate(&gpu.a_copied, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
        cuEventCreate(&gpu.start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        cuEventCreate(&gpu.end, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return "no events";
    return NULL;
}

/* Buffer i of at least `bytes`, grown (freed and allocated again) when
 * smaller. */
static bool reserve(int i, size_t bytes)
{
    if (gpu.sizes[i] >= bytes)
        return true;
    if (gpu.buffers[i] != 0)
        cuMemFree(gpu.buffers[i]);
    gpu.buffers[i] = 0;
    gpu.sizes[i] = 0;
    if (cuMemAlloc(&gpu.buffers[i], bytes) != CUDA_SUCCESS) {
        gpu.buffers[i] = 0;
        return false;
    }
    gpu.sizes[i] = bytes;
    return true;
}

/* `height` rows of `width` bytes between the host (rows `host_pitch`
 * apart) and the device (`device_pitch` apart), in stream s: one plain
 * copy when both sides are packed, else a 2D copy. */
static CUresult copy_rows(bool to_device, const void *host, CUdeviceptr device, size_t width,
                          size_t height, size_t host_pitch, size_t device_pitch, CUstream s)
{
    if (height == 1 || (host_pitch == width && device_pitch == width))
        return to_device ? cuMemcpyHtoDAsync(device, host, width * height, s)
                         : cuMemcpyDtoHAsync((void *)host, device, width * height, s);
    CUDA_MEMCPY2D p;
    memset(&p, 0, sizeof p);
    p.srcMemoryType = to_device ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    p.dstMemoryType = to_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    if (to_device) {
        p.srcHost = host;
        p.srcPitch = host_pitch;
        p.dstDevice = device;
        p.dstPitch = device_pitch;
    } else {
        p.srcDevice = device;
        p.srcPitch = device_pitch;
        p.dstHost = (void *)host;
        p.dstPitch = host_pitch;
    }
    p.WidthInBytes = width;
    p.Height = height;
    return cuMemcpy2DAsync(&p, s);
}

/* A host matrix region of `cols` columns of `rows` elements, `ld` apart,
 * to or from the device, packed there (ld = rows). */
static CUresult copy_in(CUdeviceptr dst, const void *src, long long rows, long long cols,
                        long long ld, size_t e, CUstream s)
{
    return copy_rows(true, src, dst, (size_t)rows * e, (size_t)cols, (size_t)ld * e,
                     (size_t)rows * e, s);
}

static CUresult copy_out(void *dst, CUdeviceptr src, long long rows, long long cols, long long ld,
                         size_t e, CUstream s)
{
    return copy_rows(false, dst, src, (size_t)rows * e, (size_t)cols, (size_t)ld * e,
                     (size_t)rows * e, s);
}

static bool beta_is_zero(const struct mgpu_host_gemm *g)
{
    static const unsigned char zeros[16];
    return memcmp(g->beta, zeros, kind_bytes[g->kind]) == 0;
}

struct chunk {
    long long first, count;
};

/* Chunk c's part of B and C in, its GEMM, on stream s. */
static CUresult queue_chunk(const struct mgpu_host_gemm *g, const struct chunk *c, CUstream s,
                            bool load_c, struct mgpu_host_result *result)
{
    size_t e = kind_bytes[g->kind];
    long long rows_a = g->transa == 0 ? g->m : g->k;
    CUresult r;
    CUdeviceptr db, dc = gpu.buffers[2] + (CUdeviceptr)(c->first * g->m) * e;
    if (g->transb == 0) { /* op(B)'s columns are B's: k rows each */
        db = gpu.buffers[1] + (CUdeviceptr)(c->first * g->k) * e;
        r = copy_in(db, (const char *)g->b + c->first * g->ldb * (long long)e, g->k, c->count,
                    g->ldb, e, s);
        result->bytes_in += (unsigned long long)(g->k * c->count) * e;
    } else { /* op(B)'s columns are B's rows: in place in a packed n x k copy */
        db = gpu.buffers[1] + (CUdeviceptr)c->first * e;
        r = copy_rows(true, (const char *)g->b + c->first * (long long)e, db, (size_t)c->count * e,
                      (size_t)g->k, (size_t)g->ldb * e, (size_t)g->n * e, s);
        result->bytes_in += (unsigned long long)(g->k * c->count) * e;
    }
    if (r == CUDA_SUCCESS && load_c) {
        r = copy_in(dc, (const char *)g->c + c->first * g->ldc * (long long)e, g->m, c->count,
                    g->ldc, e, s);
        result->bytes_in += (unsigned long long)(g->m * c->count) * e;
    }
    if (r != CUDA_SUCCESS)
        return r;
    if (gpu.set_stream(gpu.handle, s) != 0)
        return CUDA_ERROR_LAUNCH_FAILED;
    long long ldb_device = g->transb == 0 ? g->k : g->n;
    int st = gpu.gemm[g->kind](gpu.handle, g->transa, g->transb, (int)g->m, (int)c->count,
                               (int)g->k, g->alpha, (const void *)gpu.buffers[0], (int)rows_a,
                               (const void *)db, (int)ldb_device, g->beta, (void *)dc, (int)g->m);
    return st == 0 ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
}

/* Chunk c's C back to the program (waits for its GEMM). */
static CUresult drain_chunk(const struct mgpu_host_gemm *g, const struct chunk *c, CUstream s,
                            struct mgpu_host_result *result)
{
    size_t e = kind_bytes[g->kind];
    CUresult r =
        copy_out((char *)g->c + c->first * g->ldc * (long long)e,
                 gpu.buffers[2] + (CUdeviceptr)(c->first * g->m) * e, g->m, c->count, g->ldc, e, s);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(s);
    if (r == CUDA_SUCCESS)
        result->bytes_out += (unsigned long long)(g->m * c->count) * e;
    return r;
}

static int run_locked(const struct mgpu_host_gemm *g, mgpu_host_cpu_part cpu_part,
                      struct mgpu_host_result *result, const char **why)
{
    if (!gpu.tried) {
        gpu.tried = true;
        gpu.why_not = start_gpu();
        gpu.ready = gpu.why_not == NULL;
    }
    if (!gpu.ready) {
        *why = gpu.why_not;
        return -1;
    }
    if (cuCtxSetCurrent(gpu.ctx) != CUDA_SUCCESS) {
        *why = "the GPU's context could not be made current";
        return -1;
    }
    size_t e = kind_bytes[g->kind];
    long long rows_a = g->transa == 0 ? g->m : g->k, cols_a = g->transa == 0 ? g->k : g->m;
    if (!reserve(0, (size_t)(rows_a * cols_a) * e) || !reserve(1, (size_t)(g->k * g->n) * e) ||
        !reserve(2, (size_t)(g->m * g->n) * e)) {
        *why = "not enough device memory for its operands";
        return -1;
    }
    bool load_c = !beta_is_zero(g);
    unsigned long long per_column = (unsigned long long)(g->k + (load_c ? 2 : 1) * g->m) * e;
    long long chunks = (long long)((per_column * (unsigned long long)g->n) / CHUNK_BYTES);
    chunks = chunks < MIN_CHUNKS ? MIN_CHUNKS : chunks > MAX_CHUNKS ? MAX_CHUNKS : chunks;
    if (chunks > g->n)
        chunks = g->n;
    struct chunk list[MAX_CHUNKS];
    for (long long i = 0; i < chunks; i++) {
        list[i].first = g->n * i / chunks;
        list[i].count = g->n * (i + 1) / chunks - list[i].first;
    }

    /* A once, on stream 0; stream 1's chunks wait for it. */
    CUresult r = cuEventRecord(gpu.start, gpu.streams[0]);
    if (r == CUDA_SUCCESS)
        r = copy_in(gpu.buffers[0], g->a, rows_a, cols_a, g->lda, e, gpu.streams[0]);
    result->bytes_in += (unsigned long long)(rows_a * cols_a) * e;
    if (r == CUDA_SUCCESS)
        r = cuEventRecord(gpu.a_copied, gpu.streams[0]);
    if (r == CUDA_SUCCESS)
        r = cuStreamWaitEvent(gpu.streams[1], gpu.a_copied, 0);
    /* Chunk i's copies in and GEMM, then chunk i-1's C out: the host's
     * copy of chunk i+1 overlaps chunk i's GEMM, and chunk i's copy out
     * the GEMM of chunk i+1. */
    long long drained = 0;
    for (long long i = 0; i < chunks && r == CUDA_SUCCESS; i++) {
        r = queue_chunk(g, &list[i], gpu.streams[i % 2], load_c, result);
        if (r == CUDA_SUCCESS && i > 0) {
            r = drain_chunk(g, &list[i - 1], gpu.streams[(i - 1) % 2], result);
            drained += r == CUDA_SUCCESS;
        }
    }
    if (r == CUDA_SUCCESS) {
        r = drain_chunk(g, &list[chunks - 1], gpu.streams[(chunks - 1) % 2], result);
        drained += r == CUDA_SUCCESS;
    }
    if (r == CUDA_SUCCESS &&
        (r = cuEventRecord(gpu.end, gpu.streams[(chunks - 1) % 2])) == CUDA_SUCCESS &&
        (r = cuEventSynchronize(gpu.end)) == CUDA_SUCCESS) {
        float ms = 0;
        if (cuEventElapsedTime(&ms, gpu.start, gpu.end) == CUDA_SUCCESS)
            result->gpu_ms = ms;
        return 0;
    }
    /* The GPUs failed: the columns not copied back are the CPU's. */
    cuStreamSynchronize(gpu.streams[0]);
    cuStreamSynchronize(gpu.streams[1]);
    long long first = drained > 0 ? list[drained - 1].first + list[drained - 1].count : 0;
    cpu_part(g, first, g->n - first);
    *why = "the GPUs failed part way; the CPU BLAS finished it";
    return 1;
}

int mgpu_host_gemm_offload(const struct mgpu_host_gemm *g, mgpu_host_cpu_part cpu_part,
                           struct mgpu_host_result *result, const char **why)
{
    memset(result, 0, sizeof *result);
    if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX) {
        *why = "a dimension beyond cuBLAS's int";
        return -1;
    }
    pthread_mutex_lock(&offload_lock);
    int rc = run_locked(g, cpu_part, result, why);
    pthread_mutex_unlock(&offload_lock);
    return rc;
}
