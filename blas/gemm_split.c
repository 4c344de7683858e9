/* Owns running one of the program's cuBLAS GEMMs as one GEMM per GPU of
 * the run: the decision (size, stream capture, where the scalars live),
 * the plan (gemm_plan.c, C cut by the owners of its pages), a cuBLAS
 * handle per GPU entry and per cuBLAS library made in that GPU's context,
 * and the parts queued through sched/'s split launch (forked from and
 * joined to the program's stream, the home GPU's part in that stream, the
 * others' on their slice streams by their workers). Every call into cuBLAS for a part is made
 * inside mgpu_driver_bypass, so that the library's launches and
 * allocations go to that GPU's driver context as they are, not through
 * mgpu's hooks; the program's own handle stays untouched. */
#include "blas/blas_stats.h"
#include "blas/gemm_call.h"
#include "blas/gemm_plan.h"
#include "blas/gemm_policy.h"

#include "partition/gpu_contexts.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "memory/memory_pool.h"
#include "sched/mirror_reads.h"
#include "sched/run_links.h"
#include "base/real_driver.h"
#include "mirror/replicas.h"
#include "base/config.h"
#include "sched/split_launch.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* A part that copies its slice of the cut operand (job->slice_staged)
 * copies it in up to SLICE_CHUNKS pieces of at least SLICE_CHUNK_BYTES
 * (and 8 columns or rows) on a stream of its entry's own, each piece's
 * GEMM waiting only for its piece's copy: the later pieces' copies run
 * under the earlier pieces' GEMMs instead of before all of them (torch.mm
 * BF16 8192^3 at -n 4 on 4 x H200: 0.73 ms cut against 1.35 whole, about
 * 0.2 ms of it the home GPU sending three quarters of B before any part
 * computed). */
#define SLICE_CHUNKS 4
#define SLICE_CHUNK_BYTES ((size_t)4 << 20)
#define SLICE_CHUNK_ITEMS 8

/* A handle per GPU entry, its stream and modes as last set (-1: not yet),
 * and the stream and events its slice's pieces are copied with (made at
 * the first piece, in the part's context), used under the slice streams'
 * lock that every split holds; the handle made on the calling thread
 * under handles_lock. */
struct entry_handle {
    void *handle;
    bool failed; /* cuBLAS made none: not asked again */
    int pointer_mode, math_mode, atomics_mode;
    CUstream copy_stream;
    CUevent copied[SLICE_CHUNKS + 1]; /* a piece copied each; the last: the part's start */
    bool copy_failed;                 /* they could not be made: one copy, as before */
};
#define MAX_LIBRARIES 8
struct library_handles {
    const struct mgpu_blas_library *lib;
    struct entry_handle entries[MGPU_MAX_GPUS];
};
/* One set per cuBLAS library the program's calls reached: a handle made
 * by one library is never given to another's routines. */
static struct library_handles library_handles[MAX_LIBRARIES];
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;

struct gemm_job {
    const struct mgpu_blas_library *lib;
    const struct mgpu_gemm_call *call;
    struct mgpu_gemm_shape shape;
    struct mgpu_gemm_plan plan;
    int pointer_mode, math_mode, atomics_mode; /* the program's handle's */
    int status[MGPU_MAX_GPUS];                 /* by part; -1: not run */
    /* Where GPU g's part reads the operand every part reads whole (A for
     * a cut by columns, B by rows) from its mirror; 0: from the pool */
    CUdeviceptr shared_copy[MGPU_MAX_GPUS];
    bool shared_is_a;
    /* Without mirrors: the shared operand (from its first element to past
     * its last, staged_bytes) copied into memory of the
     * part's GPU in the part's stream before its GEMM, for the parts whose
     * device does not hold all of it; freed after, in the same stream. */
    bool staged[MGPU_MAX_GPUS];
    size_t staged_bytes;
    /* The part's own slice of the operand that is cut (B's columns for a
     * cut by columns, A's rows by rows), copied into memory of the part's
     * GPU before its GEMM where that GPU does not hold it: cuBLAS reads an
     * operand's tiles many times, each over the links when it lies on
     * another GPU (a cut 8192^3 SGEMM with its operands on the home GPU
     * took 46.6 ms on 4 x H200 against 21.4 ms whole). */
    bool slice_staged[MGPU_MAX_GPUS];
};

/* Where the call writes: C, or D for cublasLtMatmul. */
static void *output_of(const struct mgpu_gemm_call *call)
{
    return call->d != NULL ? call->d : call->c;
}

static int owner_of(uint64_t address, void *arg)
{
    (void)arg;
    return mgpu_pool_owner((CUdeviceptr)address);
}

/* Under handles_lock: lib's handles, or NULL when MAX_LIBRARIES other
 * libraries have some. */
static struct entry_handle *handles_of(const struct mgpu_blas_library *lib)
{
    for (int i = 0; i < MAX_LIBRARIES; i++) {
        if (library_handles[i].lib == NULL)
            library_handles[i].lib = lib;
        if (library_handles[i].lib == lib)
            return library_handles[i].entries;
    }
    return NULL;
}

/* Entry g's handle of library lib, made in `ctx` the first time; NULL
 * when cuBLAS could not make one. */
static void *entry_handle(const struct mgpu_blas_library *lib, int g, CUcontext ctx)
{
    pthread_mutex_lock(&handles_lock);
    struct entry_handle *handles = handles_of(lib);
    if (handles == NULL) {
        pthread_mutex_unlock(&handles_lock);
        return NULL;
    }
    struct entry_handle *e = &handles[g];
    if (e->handle == NULL && !e->failed && mgpu_drv_push_context(ctx) == CUDA_SUCCESS) {
        mgpu_driver_bypass_begin();
        void *h = NULL;
        int st = lib->create(lib, &h);
        mgpu_driver_bypass_end();
        mgpu_drv_pop_context();
        if (st == 0 && h != NULL) {
            e->handle = h;
            e->pointer_mode = e->math_mode = e->atomics_mode = -1;
        } else {
            e->failed = true;
            mgpu_warn("cuBLAS could not make a handle for GPU %d (status %d); GEMMs run whole", g,
                      st);
        }
    }
    pthread_mutex_unlock(&handles_lock);
    return e->handle;
}

/* The program handle's modes on entry g's handle; cuBLAS's status. */
static int copy_modes(const struct gemm_job *job, struct entry_handle *e)
{
    const struct mgpu_blas_library *lib = job->lib;
    int st = 0;
    if (e->pointer_mode != job->pointer_mode &&
        (st = lib->set_pointer_mode(lib, e->handle, job->pointer_mode)) == 0)
        e->pointer_mode = job->pointer_mode;
    if (st == 0 && e->math_mode != job->math_mode &&
        (st = lib->set_math_mode(lib, e->handle, job->math_mode)) == 0)
        e->math_mode = job->math_mode;
    if (st == 0 && e->atomics_mode != job->atomics_mode &&
        (st = lib->set_atomics_mode(lib, e->handle, job->atomics_mode)) == 0)
        e->atomics_mode = job->atomics_mode;
    return st;
}

static const void *advance(const void *p, long long elements, size_t bytes)
{
    return (const char *)p + elements * (long long)bytes;
}

/* Part p of `plan` (the job's, or one with part p narrowed to a piece):
 * its m, n and batch, and where its operands start. */
static void range_call(const struct gemm_job *job, const struct mgpu_gemm_plan *plan, int p,
                       struct mgpu_gemm_call *sub)
{
    const struct mgpu_gemm_call *call = job->call;
    struct mgpu_gemm_part_shape ps;
    mgpu_gemm_part_shape(&job->shape, plan, p, &ps);
    *sub = *call;
    sub->m = ps.m;
    sub->n = ps.n;
    sub->batch = ps.batch;
    if (call->form == MGPU_GEMM_BATCHED) {
        sub->a = advance(call->a, ps.a_offset, sizeof(void *));
        sub->b = advance(call->b, ps.b_offset, sizeof(void *));
        sub->c = (void *)advance(call->c, ps.c_offset, sizeof(void *));
    } else if (job->plan.cut == MGPU_GEMM_BY_BATCH) {
        sub->a = advance(call->a, ps.a_offset * call->stride_a, call->a_bytes);
        sub->b = advance(call->b, ps.b_offset * call->stride_b, call->b_bytes);
        sub->c = (void *)advance(call->c, ps.c_offset * call->stride_c, call->c_bytes);
    } else {
        sub->a = advance(call->a, ps.a_offset, call->a_bytes);
        sub->b = advance(call->b, ps.b_offset, call->b_bytes);
        sub->c = (void *)advance(call->c, ps.c_offset, call->c_bytes);
        if (call->d != NULL)
            sub->d = (void *)advance(call->d, ps.c_offset, call->c_bytes);
    }
    CUdeviceptr copy = job->shared_copy[plan->parts[p].gpu];
    if (copy != 0 && job->shared_is_a)
        sub->a = advance((const void *)copy, ps.a_offset, call->a_bytes);
    else if (copy != 0)
        sub->b = advance((const void *)copy, ps.b_offset, call->b_bytes);
}

/* Part p of the call. */
static void part_call(const struct gemm_job *job, int p, struct mgpu_gemm_call *sub)
{
    range_call(job, &job->plan, p, sub);
}

/* The bytes from C's first element to past its last (D's for
 * cublasLtMatmul). */
static size_t c_span(const struct mgpu_gemm_call *call)
{
    long long last = (call->n - 1) * call->ldc + call->m;
    if (call->form == MGPU_GEMM_STRIDED)
        last += (call->batch - 1) * call->stride_c;
    return (size_t)last * call->c_bytes;
}

/* Elements from the first of a stored matrix (rows x cols, leading
 * dimension ld) to past its last, over `batch` of them `stride` apart. */
static long long span_elements(long long rows, long long cols, long long ld, long long batch,
                               long long stride)
{
    if (rows <= 0 || cols <= 0 || batch <= 0)
        return 0;
    return (batch - 1) * stride + (cols - 1) * ld + rows;
}

/* The operand every part reads whole (A when C is cut by columns, B by
 * rows): *operand, and in *shared its range, from its first element to
 * past its last (within its pool buffer, whose id it keeps). A framework's
 * allocator keeps several tensors in one allocation, so the range, not the
 * buffer, is what parts copy or read from mirrors. False when no part may
 * read a copy of it: for batches (each part reads its own matrices), when
 * C overlaps the range, outside the pool, or in a buffer another process
 * maps (it may write it unseen). */
static bool shared_operand(struct gemm_job *job, CUdeviceptr *operand,
                           struct mgpu_pool_block *shared)
{
    const struct mgpu_gemm_call *call = job->call;
    if (call->form == MGPU_GEMM_BATCHED ||
        (job->plan.cut != MGPU_GEMM_BY_COLUMNS && job->plan.cut != MGPU_GEMM_BY_ROWS))
        return false;
    job->shared_is_a = job->plan.cut == MGPU_GEMM_BY_COLUMNS;
    long long batch = call->form == MGPU_GEMM_STRIDED ? call->batch : 1;
    long long elements = job->shared_is_a ? span_elements(call->transa == 0 ? call->m : call->k,
                                                          call->transa == 0 ? call->k : call->m,
                                                          call->lda, batch, call->stride_a)
                                          : span_elements(call->transb == 0 ? call->k : call->n,
                                                          call->transb == 0 ? call->n : call->k,
                                                          call->ldb, batch, call->stride_b);
    *operand = (CUdeviceptr)(job->shared_is_a ? call->a : call->b);
    if (elements <= 0 || !mgpu_pool_find(*operand, shared) || shared->shared)
        return false;
    CUdeviceptr end =
        *operand + (CUdeviceptr)elements * (job->shared_is_a ? call->a_bytes : call->b_bytes);
    if (end > shared->start + shared->bytes || end < *operand)
        end = shared->start + shared->bytes;
    shared->start = *operand;
    shared->bytes = (size_t)(end - *operand);
    CUdeviceptr c = (CUdeviceptr)output_of(call);
    return !(c < end && *operand < c + c_span(call));
}

/* With mirrors on, the shared operand from each part's GPU's replica of
 * its pool buffer, refreshed in the program's stream before the fork:
 * under MGPU_MIRROR=always for every part, else for every part but those
 * on the device that holds all of the operand (which read it where it
 * is). The home GPU's part too: its buffer's pages are spread like any
 * other's (the home part of a 16384^3 SGEMM on 4 x H200 read 3/4 of A over
 * NVLink and held the call at 2.1x). Returns whether any part reads a
 * copy. */
static bool plan_shared_reads(struct gemm_job *job, const CUcontext *contexts, CUstream stream)
{
    CUdeviceptr operand;
    struct mgpu_pool_block shared;
    if (!mgpu_replicas_on() || !shared_operand(job, &operand, &shared))
        return false;
    const struct mgpu_gpu_entries *entries = mgpu_run_gpus();
    int local = mgpu_mirror_sole_device(&shared);
    bool any = false;
    mgpu_replicas_begin();
    for (int p = 0; p < job->plan.nparts; p++) {
        int g = job->plan.parts[p].gpu, holder = mgpu_mirror_holder(g);
        if (mgpu_cfg.mirror != MGPU_MIRROR_ALWAYS && entries->device[g] == local)
            continue;
        job->shared_copy[g] = mgpu_replicas_read(shared.start, shared.bytes, shared.id, operand,
                                                 holder, contexts[holder], contexts[0], stream);
        any |= job->shared_copy[g] != 0;
    }
    mgpu_replicas_end(stream);
    return any;
}

/* Without mirrors (MGPU_MIRROR=never, or none made), a part whose GPU
 * does not hold all of the shared operand reads a copy made for this
 * call alone (GPU: the run's entry, so that one GPU listed several times
 * copies too and the tests run this on one GPU). Each part of a 16384^3
 * BF16 GEMM on 4 x H200 read 3/4 of B over NVLink, and the call took 2.7x
 * one GPU's time; a copy costs B's size over the links once per part,
 * small beside the part's many reads of it, and cannot go stale: it is
 * made after everything the program queued before the call and freed
 * after the part. Returns whether any part copies. */
static bool plan_staged_reads(struct gemm_job *job)
{
    CUdeviceptr operand;
    struct mgpu_pool_block shared;
    if (mgpu_drv.cuMemAllocAsync == NULL || mgpu_drv.cuMemFreeAsync == NULL ||
        !shared_operand(job, &operand, &shared))
        return false;
    job->staged_bytes = shared.bytes; /* the operand's range, from its first element */
    size_t held[MGPU_MAX_GPUS];
    int holders = mgpu_pool_bytes_by_gpu(operand, job->staged_bytes, held);
    bool any = false;
    for (int p = 0; p < job->plan.nparts; p++) {
        int g = job->plan.parts[p].gpu;
        job->staged[g] = holders != 1 || held[g] == 0;
        any |= job->staged[g];
    }
    return any;
}

/* Part p's copy of the shared operand, in `stream` with its GPU's context
 * current; false (the part reads the operand where it is) when the
 * memory or the copy could not be had. */
static bool stage_shared(struct gemm_job *job, int gpu, CUstream stream)
{
    const struct mgpu_gemm_call *call = job->call;
    CUdeviceptr operand = (CUdeviceptr)(job->shared_is_a ? call->a : call->b), copy = 0;
    if (mgpu_drv.cuMemAllocAsync(&copy, job->staged_bytes, stream) != CUDA_SUCCESS)
        return false;
    if (mgpu_drv.cuMemcpyDtoDAsync(copy, operand, job->staged_bytes, stream) != CUDA_SUCCESS) {
        mgpu_drv.cuMemFreeAsync(copy, stream);
        return false;
    }
    job->shared_copy[gpu] = copy;
    return true;
}

/* Part p's slice of the cut operand as stored: where it starts, its rows
 * (contiguous elements) and columns, leading dimension and element size;
 * false where the call's form or cut has no such slice (batches, a cut
 * by batch) or the copy cannot be made. */
struct operand_slice {
    const void *start;
    long long rows, cols, ld;
    size_t bytes; /* per element */
};

static bool cut_slice(const struct gemm_job *job, const struct mgpu_gemm_call *sub,
                      struct operand_slice *out)
{
    const struct mgpu_gemm_call *call = job->call;
    if (call->form != MGPU_GEMM_PLAIN || mgpu_drv.cuMemcpy2DAsync == NULL ||
        mgpu_drv.cuMemAllocAsync == NULL || mgpu_drv.cuMemFreeAsync == NULL)
        return false;
    if (job->plan.cut == MGPU_GEMM_BY_COLUMNS) /* op(B) is k x sub->n */
        *out =
            (struct operand_slice){sub->b, call->transb == 0 ? call->k : sub->n,
                                   call->transb == 0 ? sub->n : call->k, call->ldb, call->b_bytes};
    else if (job->plan.cut == MGPU_GEMM_BY_ROWS) /* op(A) is sub->m x k */
        *out =
            (struct operand_slice){sub->a, call->transa == 0 ? sub->m : call->k,
                                   call->transa == 0 ? call->k : sub->m, call->lda, call->a_bytes};
    else
        return false;
    return out->rows > 0 && out->cols > 0 && out->ld >= out->rows && out->bytes > 0;
}

/* The bytes from a slice's first element to past its last. */
static size_t slice_span(const struct operand_slice *s)
{
    return (size_t)((s->cols - 1) * s->ld + s->rows) * s->bytes;
}

/* Which parts copy their slice of the cut operand: those whose GPU (the
 * run's entry, as for the shared operand) does not hold all of it.
 * Returns how many. */
static int plan_slice_reads(struct gemm_job *job)
{
    int copies = 0;
    for (int p = 0; p < job->plan.nparts; p++) {
        struct mgpu_gemm_call sub;
        struct operand_slice slice;
        int g = job->plan.parts[p].gpu;
        part_call(job, p, &sub);
        job->slice_staged[g] = false;
        if (!cut_slice(job, &sub, &slice))
            continue;
        size_t held[MGPU_MAX_GPUS], span = slice_span(&slice);
        if (mgpu_pool_bytes_by_gpu((CUdeviceptr)slice.start, span, held) >= 1)
            job->slice_staged[g] = held[g] < span;
        copies += job->slice_staged[g];
    }
    return copies;
}

/* Part `sub`'s slice of the cut operand copied, packed (its leading
 * dimension its rows), into memory of the part's GPU in `stream`, and the
 * part pointed at the copy; 0 (the part reads the slice where it is)
 * when the memory or the copy could not be had. */
static CUdeviceptr stage_slice(const struct gemm_job *job, struct mgpu_gemm_call *sub,
                               CUstream stream)
{
    struct operand_slice s;
    CUdeviceptr copy = 0;
    if (!cut_slice(job, sub, &s) ||
        mgpu_drv.cuMemAllocAsync(&copy, (size_t)(s.rows * s.cols) * s.bytes, stream) !=
            CUDA_SUCCESS)
        return 0;
    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof m);
    m.srcMemoryType = m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = (CUdeviceptr)s.start;
    m.srcPitch = (size_t)s.ld * s.bytes;
    m.dstDevice = copy;
    m.dstPitch = (size_t)s.rows * s.bytes;
    m.WidthInBytes = (size_t)s.rows * s.bytes;
    m.Height = (size_t)s.cols;
    if (mgpu_drv.cuMemcpy2DAsync(&m, stream) != CUDA_SUCCESS) {
        mgpu_drv.cuMemFreeAsync(copy, stream);
        return 0;
    }
    if (job->plan.cut == MGPU_GEMM_BY_COLUMNS) {
        sub->b = (const void *)copy;
        sub->ldb = s.rows;
    } else {
        sub->a = (const void *)copy;
        sub->lda = s.rows;
    }
    return copy;
}

/* The run of columns or rows of each piece when a part of `items` of
 * them copies a slice of `bytes` in pieces. */
static long long piece_run(size_t bytes, long long items)
{
    long long k = (long long)(bytes / SLICE_CHUNK_BYTES);
    if (k > items / SLICE_CHUNK_ITEMS)
        k = items / SLICE_CHUNK_ITEMS;
    if (k > SLICE_CHUNKS)
        k = SLICE_CHUNKS;
    if (k < 2)
        return items;
    long long run = (items + k - 1) / k;
    return (run + SLICE_CHUNK_ITEMS - 1) / SLICE_CHUNK_ITEMS * SLICE_CHUNK_ITEMS;
}

/* How many pieces such a part copies its slice in: 1 (one copy, then its
 * GEMM) for a slice too small for two. */
static int pieces_for(size_t bytes, long long items)
{
    long long run = piece_run(bytes, items);
    return run <= 0 || run >= items ? 1 : (int)((items + run - 1) / run);
}

/* The bytes of part p's slice of the cut operand, packed; 0 where it has
 * none to copy. */
static size_t slice_bytes(const struct gemm_job *job, int p)
{
    struct mgpu_gemm_call sub;
    struct operand_slice s;
    part_call(job, p, &sub);
    return cut_slice(job, &sub, &s) ? (size_t)(s.rows * s.cols) * s.bytes : 0;
}

/* How many pieces part p copies its slice in (1 where it copies none). */
static int slice_pieces(const struct gemm_job *job, int p)
{
    if (!job->slice_staged[job->plan.parts[p].gpu])
        return 1;
    return pieces_for(slice_bytes(job, p), job->plan.parts[p].end - job->plan.parts[p].begin);
}

/* Piece i of part p's pieces, of `run` columns or rows each (piece_run),
 * the last taking the rest. */
static void piece_call(const struct gemm_job *job, int p, int i, long long run,
                       struct mgpu_gemm_call *sub)
{
    struct mgpu_gemm_plan plan = job->plan;
    long long begin = plan.parts[p].begin, end = plan.parts[p].end;
    plan.parts[p].begin = begin + i * run;
    plan.parts[p].end = begin + (i + 1) * run < end ? begin + (i + 1) * run : end;
    range_call(job, &plan, p, sub);
}

/* Entry e's stream and events for the pieces, made in the current (the
 * part's) context the first time; whether they are there. */
static bool piece_stream(struct entry_handle *e)
{
    if (e->copy_stream != NULL || e->copy_failed)
        return !e->copy_failed;
    bool ok = mgpu_drv.cuStreamCreate(&e->copy_stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    for (int i = 0; ok && i <= SLICE_CHUNKS; i++)
        ok = mgpu_drv.cuEventCreate(&e->copied[i], CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
    e->copy_failed = !ok;
    return ok;
}

/* Part p's GEMM as `pieces` GEMMs in `stream`, each after its piece of the
 * slice is copied on the entry's own stream (forked from `stream`, so
 * after everything queued there before). Returns cuBLAS's status, or -1
 * with nothing queued when the fork could not be made. */
static int run_pieces(struct gemm_job *job, int p, int pieces, struct entry_handle *e,
                      CUstream stream)
{
    struct mgpu_gemm_call subs[SLICE_CHUNKS];
    CUdeviceptr copies[SLICE_CHUNKS] = {0};
    long long run =
        piece_run(slice_bytes(job, p), job->plan.parts[p].end - job->plan.parts[p].begin);
    if (mgpu_drv.cuEventRecord(e->copied[SLICE_CHUNKS], stream) != CUDA_SUCCESS ||
        mgpu_drv.cuStreamWaitEvent(e->copy_stream, e->copied[SLICE_CHUNKS], 0) != CUDA_SUCCESS)
        return -1;
    for (int i = 0; i < pieces; i++) {
        piece_call(job, p, i, run, &subs[i]);
        copies[i] = stage_slice(job, &subs[i], e->copy_stream); /* 0: read where it lies */
        if (mgpu_drv.cuEventRecord(e->copied[i], e->copy_stream) != CUDA_SUCCESS ||
            mgpu_drv.cuStreamWaitEvent(stream, e->copied[i], 0) != CUDA_SUCCESS) {
            /* The GEMMs would not wait for this piece: wait for all of
             * the copy stream instead. */
            mgpu_drv.cuStreamSynchronize(e->copy_stream);
        }
    }
    mgpu_driver_bypass_begin();
    int st = copy_modes(job, e);
    if (st == 0)
        st = job->lib->set_stream(job->lib, e->handle, stream);
    for (int i = 0; i < pieces && st == 0; i++)
        st = job->lib->run(job->lib, &subs[i], e->handle);
    mgpu_driver_bypass_end();
    for (int i = 0; i < pieces; i++)
        if (copies[i] != 0)
            mgpu_drv.cuMemFreeAsync(copies[i], stream);
    return st;
}

/* sched/'s split launch calls this for part p on GPU gpu, with its
 * context current and `stream` the program's (home part) or the GPU's
 * slice stream. */
static CUresult run_part(void *arg, int p, int gpu, CUstream stream)
{
    struct gemm_job *job = arg;
    pthread_mutex_lock(&handles_lock);
    struct entry_handle *e = &handles_of(job->lib)[gpu]; /* made by decide() */
    pthread_mutex_unlock(&handles_lock);
    struct mgpu_gemm_call sub;
    bool staged = job->staged[gpu] && stage_shared(job, gpu, stream);
    struct mgpu_launch_timer timer;
    bool traced = mgpu_timing_traced();
    if (traced)
        mgpu_timing_begin_own(&timer, job->call->name, stream, gpu);
    int pieces = slice_pieces(job, p), st = -1;
    if (pieces > 1 && piece_stream(e))
        st = run_pieces(job, p, pieces, e, stream);
    CUdeviceptr slice = 0;
    if (st == -1) { /* one piece */
        part_call(job, p, &sub);
        slice = job->slice_staged[gpu] ? stage_slice(job, &sub, stream) : 0;
        mgpu_driver_bypass_begin();
        st = copy_modes(job, e);
        if (st == 0)
            st = job->lib->set_stream(job->lib, e->handle, stream);
        if (st == 0)
            st = job->lib->run(job->lib, &sub, e->handle);
        mgpu_driver_bypass_end();
    }
    if (staged)
        mgpu_drv.cuMemFreeAsync(job->shared_copy[gpu], stream);
    if (slice != 0)
        mgpu_drv.cuMemFreeAsync(slice, stream);
    CUresult r = st == 0 ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
    if (traced)
        mgpu_timing_end(&timer, stream, r);
    job->status[p] = st;
    return r;
}

/* Whether every part can read the scalars (in device pointer mode) and
 * the epilogue's bias: where a part runs on another device than the
 * home one, they must lie in the pool, one address on every GPU. */
static bool scalars_reachable(const struct gemm_job *job, const struct mgpu_gpu_entries *entries)
{
    const struct mgpu_gemm_call *call = job->call;
    if (job->pointer_mode == 0 &&
        call->bias == NULL) /* CUBLAS_POINTER_MODE_HOST: read at the call */
        return true;
    for (int p = 0; p < job->plan.nparts; p++)
        if (entries->device[job->plan.parts[p].gpu] != entries->device[0])
            return (job->pointer_mode == 0 || (mgpu_pool_holds((CUdeviceptr)call->alpha) &&
                                               mgpu_pool_holds((CUdeviceptr)call->beta))) &&
                   (call->bias == NULL || mgpu_pool_holds((CUdeviceptr)call->bias));
    return true;
}

/* The policy's estimate of the split (gemm_policy.h): the largest part's
 * share of the whole call's time, after each part's copy of its slice of
 * the cut operand and the copies of the shared operand to every part
 * whose GPU does not hold all of it, one after another from the GPU that
 * holds most. With mirrors on, those are the mirror's, made once and read
 * by the calls after while the operand is not written: shared over the
 * `calls` of the shape so far (torch.mm of one pair of 8192^2 BF16
 * tensors: 1.34 ms whole; its A's copies to three GPUs, about 1.1 ms,
 * counted at every call kept it whole at -n 4). NAN while the links are
 * being measured; negative when they or the operand are not known. */
static double estimate_split_us(void *arg, double whole_us, unsigned long calls)
{
    struct gemm_job *job = arg;
    const struct mgpu_link_model *links = mgpu_run_links();
    long long total = 0, largest = 0;
    for (int p = 0; p < job->plan.nparts; p++) {
        long long items = job->plan.parts[p].end - job->plan.parts[p].begin;
        total += items;
        if (items > largest)
            largest = items;
    }
    if (links == NULL && total > 0 && mgpu_run_links_pending())
        return NAN;
    if (links == NULL || total <= 0)
        return -1.0;
    double compute_us = whole_us * (double)largest / (double)total;
    struct mgpu_link_move moves[2 * MGPU_MAX_GPUS];
    size_t n = 0;
    int pieces = SLICE_CHUNKS;
    /* Each part's slice of the cut operand, where its GPU lacks it, copied
     * in pieces under its GEMM where it is large enough (run_pieces). */
    for (int p = 0; p < job->plan.nparts; p++) {
        struct mgpu_gemm_call sub;
        struct operand_slice slice;
        part_call(job, p, &sub);
        size_t held[MGPU_MAX_GPUS] = {0}, span;
        int g = job->plan.parts[p].gpu;
        if (!cut_slice(job, &sub, &slice) ||
            mgpu_pool_bytes_by_gpu((CUdeviceptr)slice.start, span = slice_span(&slice), held) < 1 ||
            held[g] >= span)
            continue;
        int from = 0;
        for (int h = 1; h < links->nentries && h < MGPU_MAX_GPUS; h++)
            if (held[h] > held[from])
                from = h;
        moves[n++] = (struct mgpu_link_move){span - held[g], from, g};
        int k = pieces_for((size_t)(slice.rows * slice.cols) * slice.bytes,
                           job->plan.parts[p].end - job->plan.parts[p].begin);
        if (k < pieces)
            pieces = k;
    }
    /* The parts' time with their slices' copies: in pieces, all but one
     * piece of the shorter of the two under the longer. */
    double slices_us = mgpu_link_copy_seconds(links, moves, n) * 1e6;
    double parts_us = n > 0 && pieces > 1
                          ? fmax(compute_us, slices_us) + fmin(compute_us, slices_us) / pieces
                          : compute_us + slices_us;
    CUdeviceptr operand;
    struct mgpu_pool_block shared;
    if (!shared_operand(job, &operand, &shared))
        return parts_us;
    size_t held[MGPU_MAX_GPUS] = {0};
    if (mgpu_pool_bytes_by_gpu(operand, shared.bytes, held) < 1)
        return -1.0;
    int holder = 0;
    for (int g = 1; g < links->nentries && g < MGPU_MAX_GPUS; g++)
        if (held[g] > held[holder])
            holder = g;
    size_t slices = n;
    for (int p = 0; p < job->plan.nparts; p++) {
        int g = job->plan.parts[p].gpu;
        if (g != holder && held[g] < shared.bytes)
            moves[n++] = (struct mgpu_link_move){shared.bytes - held[g], holder, g};
    }
    if (slices == 0 || pieces < 2) { /* every copy before the GEMMs, side by side */
        if (!mgpu_replicas_on() || calls < 2)
            return compute_us + mgpu_link_copy_seconds(links, moves, n) * 1e6;
        return compute_us + slices_us +
               mgpu_link_copy_seconds(links, moves + slices, n - slices) * 1e6 / (double)calls;
    }
    /* The shared operand's copies come before the pieces (staged in the
     * part's stream), or, mirrored, once for the calls so far. */
    double shared_us = mgpu_link_copy_seconds(links, moves + slices, n - slices) * 1e6;
    if (!mgpu_replicas_on() || calls < 2)
        return parts_us + shared_us;
    return parts_us + shared_us / (double)calls;
}

static enum mgpu_blas_unsplit unsplit_for(enum mgpu_gemm_policy_whole why)
{
    switch (why) {
    case MGPU_GEMM_WHOLE_SHORT:
        return MGPU_BLAS_UNSPLIT_SHORT;
    case MGPU_GEMM_WHOLE_ESTIMATE:
        return MGPU_BLAS_UNSPLIT_ESTIMATE;
    case MGPU_GEMM_WHOLE_MEASURED:
        return MGPU_BLAS_UNSPLIT_MEASURED;
    default:
        return MGPU_BLAS_UNSPLIT_FIRST;
    }
}

/* Why the call runs whole, or -1 to split it; fills job, contexts and
 * *stream, and in *trial the policy's timing of the call (either way). */
static int decide(struct gemm_job *job, CUcontext contexts[MGPU_MAX_GPUS], int *ngpus,
                  CUstream *stream, struct mgpu_gemm_trial *trial)
{
    const struct mgpu_gemm_call *call = job->call;
    const struct mgpu_blas_library *lib = job->lib;
    if (!mgpu_cfg.blas_split)
        return MGPU_BLAS_UNSPLIT_OFF;
    const struct mgpu_gpu_entries *entries = mgpu_run_gpus();
    if (entries == NULL || entries->count < 2)
        return MGPU_BLAS_UNSPLIT_ONE_GPU;
    if ((double)call->m * (double)call->n * (double)call->k * (double)call->batch <
        mgpu_cfg.blas_split_min)
        return MGPU_BLAS_UNSPLIT_SMALL;
    if (call->uncuttable)
        return MGPU_BLAS_UNSPLIT_KIND;
    void *program_stream = NULL;
    CUcontext home = NULL;
    char why[160];
    if (lib->get_stream(lib, call->handle, &program_stream) != 0 ||
        lib->get_pointer_mode(lib, call->handle, &job->pointer_mode) != 0 ||
        lib->get_math_mode(lib, call->handle, &job->math_mode) != 0 ||
        lib->get_atomics_mode(lib, call->handle, &job->atomics_mode) != 0 ||
        mgpu_drv.cuCtxGetCurrent(&home) != CUDA_SUCCESS || home == NULL ||
        mgpu_gpu_contexts(home, contexts, ngpus, why, sizeof why) != 0)
        return MGPU_BLAS_UNSPLIT_CONTEXT;
    *stream = (CUstream)program_stream;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (mgpu_drv.cuStreamIsCapturing != NULL &&
        (mgpu_drv.cuStreamIsCapturing(*stream, &capture) != CUDA_SUCCESS ||
         capture != CU_STREAM_CAPTURE_STATUS_NONE))
        return MGPU_BLAS_UNSPLIT_CAPTURE;
    job->shape = (struct mgpu_gemm_shape){
        .transa = call->transa,
        .transb = call->transb,
        .m = call->m,
        .n = call->n,
        .k = call->k,
        .lda = call->lda,
        .ldb = call->ldb,
        .ldc = call->ldc,
        .batch = call->batch,
        .pointer_arrays = call->form == MGPU_GEMM_BATCHED,
        .a_bytes = call->a_bytes,
        .b_bytes = call->b_bytes,
        .c_bytes = call->c_bytes,
    };
    mgpu_gemm_plan_make(&job->shape, *ngpus, (uint64_t)(uintptr_t)output_of(call), owner_of, NULL,
                        &job->plan);
    if (job->plan.cut == MGPU_GEMM_WHOLE ||
        (call->columns_only && job->plan.cut != MGPU_GEMM_BY_COLUMNS))
        return MGPU_BLAS_UNSPLIT_SHAPE;
    if (!scalars_reachable(job, entries))
        return MGPU_BLAS_UNSPLIT_SCALARS;
    enum mgpu_gemm_policy_whole whole_why;
    if (!mgpu_gemm_policy_choose(lib, call, estimate_split_us, job, trial, &whole_why))
        return (int)unsplit_for(whole_why);
    for (int p = 0; p < job->plan.nparts; p++) {
        int g = job->plan.parts[p].gpu;
        if (entry_handle(lib, g, contexts[g]) == NULL)
            return MGPU_BLAS_UNSPLIT_CONTEXT;
    }
    if (mgpu_split_launch_start(*ngpus, contexts) != 0)
        return MGPU_BLAS_UNSPLIT_CONTEXT;
    return -1;
}

/* The policy's timing of a call that runs whole, between the runtime's
 * answer (mgpu_blas_gemm: false) and the interposer's call of the real
 * routine on the same thread (mgpu_blas_gemm_ran_whole). */
static _Thread_local struct mgpu_gemm_trial whole_trial;
static _Thread_local CUstream whole_trial_stream;

void mgpu_blas_gemm_ran_whole(int status)
{
    if (whole_trial.shape == NULL)
        return;
    mgpu_gemm_trial_end(&whole_trial, whole_trial_stream,
                        status == 0 ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED);
}

bool mgpu_blas_gemm(const struct mgpu_blas_library *lib, const struct mgpu_gemm_call *call,
                    int *status)
{
    /* A GEMM that cuBLAS calls from inside one of mgpu's parts (through
     * its own exported entry points) is that part's business. */
    if (mgpu_driver_bypass)
        return false;
    if (whole_trial.shape != NULL) /* the last declined call was never run */
        mgpu_gemm_trial_end(&whole_trial, whole_trial_stream, CUDA_ERROR_NOT_READY);
    struct gemm_job job;
    memset(&job, 0, sizeof job);
    job.lib = lib;
    job.call = call;
    CUcontext contexts[MGPU_MAX_GPUS];
    int ngpus = 0;
    CUstream stream = NULL;
    struct mgpu_gemm_trial trial = {NULL, false};
    int why = decide(&job, contexts, &ngpus, &stream, &trial);
    if (why >= 0) {
        if (trial.shape != NULL && trial.split) /* armed, then a handle failed */
            mgpu_gemm_trial_end(&trial, stream, CUDA_ERROR_NOT_READY);
        else if (trial.shape != NULL) { /* timed whole: ended by mgpu_blas_gemm_ran_whole */
            mgpu_gemm_trial_begin(&trial, stream);
            whole_trial = trial;
            whole_trial_stream = stream;
        }
        mgpu_blas_stats_unsplit(call->name, (enum mgpu_blas_unsplit)why, call->m, call->n, call->k);
        return false;
    }

    struct mgpu_grid_slice slices[MGPU_MAX_GPUS];
    memset(slices, 0, sizeof slices);
    for (int p = 0; p < job.plan.nparts; p++) {
        slices[p].gpu = job.plan.parts[p].gpu;
        job.status[p] = -1;
    }
    struct mgpu_split_work work = {run_part, &job, contexts, ngpus};
    struct mgpu_split_request req = {
        .work = &work,
        .slices = slices,
        .nslices = job.plan.nparts,
        .stream = stream,
        .trace_kernel = -1,
    };
    CUevent start = NULL, end = NULL;
    if (mgpu_cfg.report && (mgpu_drv.cuEventCreate(&start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
                            mgpu_drv.cuEventRecord(start, stream) != CUDA_SUCCESS))
        start = NULL;
    /* NCCL's communicator for the mirrors, its making started before the
     * policy's timing (on 4 x H100 it took 1005 ms, once waited for inside
     * the first cut of an SGEMM that takes 21.7 ms whole; now only
     * MGPU_MIRROR=always waits for it). */
    if (trial.shape != NULL && mgpu_replicas_on())
        mgpu_replicas_prepare(contexts[0]);
    mgpu_gemm_trial_begin(&trial, stream);
    bool mirrored = plan_shared_reads(&job, contexts, stream);
    bool staged = !mirrored && plan_staged_reads(&job);
    int slice_copies = plan_slice_reads(&job);
    CUresult r = mgpu_split_launch(&req);
    if (start != NULL && (mgpu_drv.cuEventCreate(&end, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
                          mgpu_drv.cuEventRecord(end, stream) != CUDA_SUCCESS))
        end = NULL;

    bool ran = false;
    *status = 0;
    for (int p = 0; p < job.plan.nparts; p++) {
        ran |= job.status[p] >= 0;
        if (*status == 0 && job.status[p] > 0)
            *status = job.status[p];
    }
    /* A split that queued nothing is no split time (the call then runs
     * whole, untimed). */
    mgpu_gemm_trial_end(&trial, stream, ran ? r : CUDA_ERROR_NOT_READY);
    if (!ran) { /* nothing was queued: the program's call runs as it is */
        if (start != NULL)
            mgpu_drv.cuEventDestroy(start);
        if (end != NULL)
            mgpu_drv.cuEventDestroy(end);
        mgpu_blas_stats_unsplit(call->name, MGPU_BLAS_UNSPLIT_CONTEXT, call->m, call->n, call->k);
        return false;
    }
    if (*status == 0 && r != CUDA_SUCCESS)
        *status = 13; /* CUBLAS_STATUS_EXECUTION_FAILED */
    if (call->form == MGPU_GEMM_BATCHED)
        mgpu_replicas_written_anywhere();
    else
        mgpu_replicas_written((CUdeviceptr)output_of(call), c_span(call));
    mgpu_blas_stats_split(call->name, &job.plan, mirrored, staged, call->m, call->n, call->k, start,
                          end);
    int pieces = 1;
    for (int p = 0; p < job.plan.nparts && mgpu_cfg.verbose >= 2; p++) {
        int k = slice_pieces(&job, p);
        pieces = k > pieces ? k : pieces;
    }
    char in_pieces[64] = "";
    if (pieces > 1)
        snprintf(in_pieces, sizeof in_pieces, ", in up to %d pieces under their GEMMs", pieces);
    mgpu_debug("%s %lldx%lldx%lld (batch %lld) split by %s into %d parts, %d of them copying "
               "their slice of the cut operand%s",
               call->name, call->m, call->n, call->k, call->batch, mgpu_gemm_cut_name(job.plan.cut),
               job.plan.nparts, slice_copies, in_pieces);
    return true;
}
