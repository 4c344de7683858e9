/* Owns the driver side of privatised reductions (private_reductions.h):
 * the combine kernels (PTX written here, one per operation and type, in a
 * module of the home context), a private copy's start in its slice's
 * stream, and the combine after the slices, by kernel and by ncclReduce.
 * All driver calls go to the real driver. */
#include "mirror/private_reductions.h"

#include "partition/gpu_contexts.h"
#include "partition/gpu_entries.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "mirror/nccl_collectives.h"
#include "ptx/ptx_analysis.h"
#include "base/real_driver.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPS 4   /* by MGPU_REDUCTION_OP; 0 unused */
#define TYPES 7 /* by MGPU_REDUCTION_TYPE; 0 unused */
#define COMBINE_THREADS 256
#define COMBINE_BLOCKS_MAX 1024

static const char *const op_names[OPS] = {NULL, "add", "min", "max"};
static const char *const type_names[TYPES] = {NULL, "u32", "s32", "u64", "s64", "f32", "f64"};

static struct {
    pthread_mutex_t lock;
    bool tried, ready;
    CUcontext home;
    CUmodule module;
    CUfunction combine[OPS][TYPES];
    struct mgpu_private_reduction_stats stats;
} kernels = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* dst[i] = op(dst[i], src[i]) for i < n, a grid-stride loop; 64-bit
 * indices, since a buffer may pass 4 GiB. */
static const char combine_template[] =
    ".visible .entry mgpu_combine_%1$s_%2$s(.param .u64 dst, .param .u64 src, .param .u64 n)\n"
    "{\n"
    "\t.reg .pred %%p<2>;\n"
    "\t.reg .b32 %%r<5>;\n"
    "\t.reg .b64 %%rd<10>;\n"
    "\t.reg .%2$s %%v<4>;\n"
    "\tld.param.u64 %%rd1, [dst];\n"
    "\tld.param.u64 %%rd2, [src];\n"
    "\tld.param.u64 %%rd3, [n];\n"
    "\tmov.u32 %%r1, %%ctaid.x;\n"
    "\tmov.u32 %%r2, %%ntid.x;\n"
    "\tmov.u32 %%r3, %%tid.x;\n"
    "\tmov.u32 %%r4, %%nctaid.x;\n"
    "\tmul.wide.u32 %%rd4, %%r1, %%r2;\n"
    "\tcvt.u64.u32 %%rd5, %%r3;\n"
    "\tadd.u64 %%rd4, %%rd4, %%rd5;\n"
    "\tmul.wide.u32 %%rd6, %%r4, %%r2;\n"
    "$L_next:\n"
    "\tsetp.ge.u64 %%p1, %%rd4, %%rd3;\n"
    "\t@%%p1 bra $L_done;\n"
    "\tshl.b64 %%rd7, %%rd4, %3$d;\n"
    "\tadd.u64 %%rd8, %%rd1, %%rd7;\n"
    "\tadd.u64 %%rd9, %%rd2, %%rd7;\n"
    "\tld.%2$s %%v1, [%%rd8];\n"
    "\tld.%2$s %%v2, [%%rd9];\n"
    "\t%1$s.%2$s %%v3, %%v1, %%v2;\n"
    "\tst.%2$s [%%rd8], %%v3;\n"
    "\tadd.u64 %%rd4, %%rd4, %%rd6;\n"
    "\tbra $L_next;\n"
    "$L_done:\n"
    "\tret;\n"
    "}\n";

/* The module's text: every operation and type. NULL when memory runs out. */
static char *combine_ptx(void)
{
    size_t cap = 64 + (OPS - 1) * (TYPES - 1) * (sizeof combine_template + 64);
    char *ptx = malloc(cap);
    if (ptx == NULL)
        return NULL;
    int used = snprintf(ptx, cap, ".version 7.0\n.target sm_70\n.address_size 64\n\n");
    for (int op = 1; op < OPS; op++)
        for (int type = 1; type < TYPES; type++) {
            int shift = mgpu_reduction_element_size(MGPU_REDUCTION(op, type)) == 8 ? 3 : 2;
            used += snprintf(ptx + used, cap - (size_t)used, combine_template, op_names[op],
                             type_names[type], shift);
        }
    return ptx;
}

/* Under the lock, once. */
static bool load_kernels(CUcontext home)
{
    char *ptx = combine_ptx();
    if (ptx == NULL)
        return false;
    bool ok = mgpu_drv.cuCtxPushCurrent(home) == CUDA_SUCCESS;
    if (ok) {
        CUresult loaded = mgpu_drv.cuModuleLoadDataEx(&kernels.module, ptx, 0, NULL, NULL);
        ok = loaded == CUDA_SUCCESS;
        if (!ok)
            mgpu_warn("reductions not privatised: mgpu's combine kernels do not load (%s)",
                      mgpu_cu_error_name(loaded));
        for (int op = 1; ok && op < OPS; op++)
            for (int type = 1; ok && type < TYPES; type++) {
                char name[64];
                snprintf(name, sizeof name, "mgpu_combine_%s_%s", op_names[op], type_names[type]);
                ok = mgpu_drv.cuModuleGetFunction(&kernels.combine[op][type], kernels.module,
                                                  name) == CUDA_SUCCESS;
            }
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
    }
    free(ptx);
    kernels.home = home;
    return ok;
}

bool mgpu_private_reductions_prepare(CUcontext home)
{
    pthread_mutex_lock(&kernels.lock);
    if (!kernels.tried && home != NULL) {
        kernels.tried = true;
        kernels.ready = load_kernels(home);
    }
    bool ready = kernels.ready && kernels.home == home;
    pthread_mutex_unlock(&kernels.lock);
    return ready;
}

bool mgpu_private_reductions_ready(CUcontext home)
{
    return mgpu_private_reductions_prepare(home);
}

CUresult mgpu_private_reduction_start(const struct mgpu_private_buffer *b, int gpu, CUstream stream)
{
    if (b->copy[gpu] == 0 || MGPU_REDUCTION_OP(b->reduction) != MGPU_REDUCE_ADD)
        return CUDA_SUCCESS; /* min and max copies were refreshed before the fork */
    /* 0 is the identity of an integer sum and, all bits clear, of a float one. */
    struct mgpu_launch_timer timer = {.active = false};
    if (mgpu_timing_traced())
        mgpu_timing_begin_own(&timer, "mirror: private copy set to 0", stream, gpu);
    CUresult set = mgpu_drv.cuMemsetD8Async(b->copy[gpu], 0, b->bytes, stream);
    if (timer.active)
        mgpu_timing_end(&timer, stream, set);
    return set;
}

/* dst op= src over the buffer's elements, in `stream` of the home context. */
static CUresult fold(const struct mgpu_private_buffer *b, CUdeviceptr dst, CUdeviceptr src,
                     CUstream stream)
{
    unsigned op = MGPU_REDUCTION_OP(b->reduction), type = MGPU_REDUCTION_TYPE(b->reduction);
    size_t element = mgpu_reduction_element_size(b->reduction);
    if (op == 0 || op >= OPS || type == 0 || type >= TYPES || element == 0)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long n = b->bytes / element;
    unsigned long long blocks = (n + COMBINE_THREADS - 1) / COMBINE_THREADS;
    if (blocks > COMBINE_BLOCKS_MAX)
        blocks = COMBINE_BLOCKS_MAX;
    if (blocks == 0)
        return CUDA_SUCCESS;
    void *params[] = {&dst, &src, &n};
    kernels.stats.kernel_folds++;
    struct mgpu_launch_timer timer = {.active = false};
    if (mgpu_timing_traced())
        mgpu_timing_begin_own(&timer, "mirror: combine by mgpu's kernel", stream, 0);
    CUresult launched = mgpu_drv.cuLaunchKernel(kernels.combine[op][type], (unsigned)blocks, 1, 1,
                                                COMBINE_THREADS, 1, 1, 0, stream, params, NULL);
    if (timer.active)
        mgpu_timing_end(&timer, stream, launched);
    return launched;
}

CUresult mgpu_private_reduction_combine(const struct mgpu_private_buffer *b, CUstream stream)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (e == NULL || !kernels.ready)
        return CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&kernels.lock);
    kernels.stats.combines++;
    /* Over several devices, the communicator made here if no refresh has
     * made it yet (in the context of the program's stream, current). */
    int devices[MGPU_MAX_GPUS];
    CUcontext home = NULL;
    if (mgpu_gpu_entries_distinct(e, devices) > 1 &&
        mgpu_drv.cuCtxGetCurrent(&home) == CUDA_SUCCESS && home != NULL)
        mgpu_nccl_ready(home);
    /* Copies of one device into the first copy on it (the buffer itself
     * for the home device), then the devices' into the buffer. */
    int ranks = mgpu_nccl_ranks();
    int lead_of_rank[MGPU_MAX_GPUS];
    for (int r = 0; r < MGPU_MAX_GPUS; r++)
        lead_of_rank[r] = -1;
    CUresult result = CUDA_SUCCESS;
    for (int g = 1; g < e->count && result == CUDA_SUCCESS; g++) {
        if (b->copy[g] == 0)
            continue;
        CUdeviceptr into = b->start;
        if (e->device[g] != e->device[0]) {
            bool first;
            int rank = mgpu_nccl_rank_of(g, &first);
            if (ranks > 1 && rank > 0 && rank < MGPU_MAX_GPUS && lead_of_rank[rank] < 0) {
                lead_of_rank[rank] = g;
                continue;
            }
            if (ranks > 1 && rank > 0 && rank < MGPU_MAX_GPUS)
                into = b->copy[lead_of_rank[rank]];
        }
        result = fold(b, into, b->copy[g], stream);
    }
    bool leads = false, every_rank = ranks > 1;
    for (int r = 1; r < ranks; r++) {
        leads |= lead_of_rank[r] >= 0;
        every_rank &= lead_of_rank[r] >= 0;
    }
    if (result == CUDA_SUCCESS && every_rank) {
        CUdeviceptr send_of_rank[MGPU_MAX_GPUS] = {b->start};
        for (int r = 1; r < ranks; r++)
            send_of_rank[r] = b->copy[lead_of_rank[r]];
        result = mgpu_nccl_reduce(b->start, send_of_rank,
                                  b->bytes / mgpu_reduction_element_size(b->reduction),
                                  b->reduction, stream);
        kernels.stats.nccl_reduces += result == CUDA_SUCCESS;
    } else if (result == CUDA_SUCCESS && leads) {
        for (int r = 1; r < ranks && result == CUDA_SUCCESS; r++)
            if (lead_of_rank[r] >= 0)
                result = fold(b, b->start, b->copy[lead_of_rank[r]], stream);
    }
    pthread_mutex_unlock(&kernels.lock);
    return result;
}

void mgpu_private_reduction_stats(struct mgpu_private_reduction_stats *out)
{
    pthread_mutex_lock(&kernels.lock);
    *out = kernels.stats;
    pthread_mutex_unlock(&kernels.lock);
}
