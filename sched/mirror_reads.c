/* Owns the choice of replicated reads and privatised reductions for a
 * split launch and the marking of a launch's writes (see mirror_reads.h). */
#include "sched/mirror_reads.h"

#include "partition/gpu_contexts.h"
#include "partition/gpu_entries.h"
#include "sched/launch_params.h"
#include "memory/memory_pool.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_footprint.h"
#include "mirror/replicas.h"
#include "base/config.h"

#include <stdint.h>
#include <string.h>

static bool writes(unsigned use)
{
    return (use & (MGPU_PARAM_STORE | MGPU_PARAM_ATOMIC)) != 0;
}

/* Whether some parameter of the launch writes through a pointer into the
 * buffer that starts at `start`, or writes where mgpu cannot tell. */
static bool launch_writes_buffer(const struct mgpu_gpu_kernels *k, void *const *params,
                                 const void *buffer, CUdeviceptr start)
{
    for (unsigned j = 0; j < k->nparams; j++) {
        if (!writes(k->param_use[j]))
            continue;
        if (k->param_sizes[j] != sizeof(CUdeviceptr))
            return true; /* a struct with pointers in it */
        CUdeviceptr p;
        struct mgpu_pool_block b;
        if (mgpu_launch_param_buffer(k, j, params, buffer, &p, &b) && b.start == start)
            return true;
    }
    return false;
}

/* The entry whose copy GPU entry `gpu` uses: its own under
 * MGPU_MIRROR=always (so that one GPU listed several times exercises
 * every copy), else the first entry on its device (entries of a device
 * share its memory, so one copy serves them all). */
int mgpu_mirror_holder(int gpu)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS || e == NULL)
        return gpu;
    for (int h = 0; h < gpu; h++)
        if (e->device[h] == e->device[gpu])
            return h;
    return gpu;
}

/* Whether GPU entry `gpu` stands on the home GPU's device. */
static bool on_home_device(int gpu)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    return e != NULL && gpu < e->count && e->device[gpu] == e->device[0];
}

int mgpu_mirror_sole_device(const struct mgpu_pool_block *b)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    size_t held[MGPU_MAX_GPUS];
    if (e == NULL || mgpu_pool_bytes_by_gpu(b->start, b->bytes, held) == 0)
        return -1;
    int device = -1;
    for (int g = 0; g < MGPU_MAX_GPUS; g++) {
        if (held[g] == 0)
            continue;
        if (g >= e->count || (device >= 0 && e->device[g] != device))
            return -1;
        device = e->device[g];
    }
    return device;
}

/* Under MGPU_MIRROR=auto, whether a copy of buffer b could serve some entry
 * anything it does not hold already: an entry stands on another device
 * than the one holding all of b, or none holds all of it. A device that
 * holds all of b reads it at local bandwidth; a copy there only costs (one
 * H200 listed twice, its data at home: a grid-stride loop of 0.43 ms per
 * launch took 6.3 ms while the tries of such copies made NCCL's
 * communicator). */
static bool copy_would_serve(const struct mgpu_pool_block *b)
{
    int sole = mgpu_mirror_sole_device(b);
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    for (int g = 0; sole >= 0 && g < e->count; g++)
        if (e->device[g] != sole)
            return true;
    return sole < 0;
}

bool mgpu_mirror_privatising_entries(void)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    for (int g = 1; e != NULL && g < e->count; g++)
        if (!on_home_device(g))
            return true;
    return e == NULL;
}

/* Under MGPU_MIRROR=auto and MGPU_FOOTPRINTS=on: whether, by k's
 * footprint, every slice of the launch (each cut by blocks) reads at most
 * twice its share of buffer b through parameter `param`; false where the
 * footprint cannot say (none, unknown, a loop, a slice cut by iterations,
 * a pointer in a struct). */
static bool slices_read_own_parts(const struct mgpu_gpu_kernels *k, void *const *params,
                                  const void *buffer, unsigned param,
                                  const struct mgpu_pool_block *b,
                                  const struct mgpu_mirror_launch *launch)
{
    const struct mgpu_kernel_footprint *fp = k->footprint;
    if (mgpu_cfg.mirror != MGPU_MIRROR_AUTO || !mgpu_cfg.footprints || launch == NULL ||
        launch->grid == NULL || launch->block == NULL || launch->nslices < 2 || fp == NULL ||
        fp->unknown || fp->nslots > 64 || k->nparams > 64)
        return false;
    int dim = mgpu_grid_split_dim(launch->grid);
    void *values[64];
    struct mgpu_fp_launch l;
    if (dim < 0 ||
        !mgpu_launch_footprint(k, params, buffer, launch->grid, launch->block, values, 64, &l))
        return false;
    double most = 2.0 * (double)b->bytes / launch->nslices;
    struct mgpu_fp_range reads[64], writes[64];
    for (int s = 0; s < launch->nslices; s++) {
        const struct mgpu_grid_slice *sl = &launch->slices[s];
        if (sl->iterations)
            return false;
        mgpu_fp_slice(fp, &l, dim, sl->first[dim], sl->first[dim] + sl->dims[dim], reads, writes);
        bool seen = false;
        for (size_t j = 0; j < fp->nslots; j++) {
            if (fp->slots[j].param != (int)param)
                continue;
            if (fp->slots[j].offset != 0 || reads[j].whole)
                return false;
            seen = true;
            if (reads[j].any && (double)(reads[j].hi - reads[j].lo) > most)
                return false;
        }
        if (!seen)
            return false;
    }
    return true;
}

/* Whether parameter i of the launch is one a mirror could serve (see
 * mgpu_mirror_candidates), its buffer into *b; *reduction: it would be
 * privatised rather than copied. */
static bool candidate(const struct mgpu_gpu_kernels *k, void *const *params, const void *buffer,
                      const struct mgpu_mirror_launch *launch, unsigned i,
                      struct mgpu_pool_block *b, bool *reduction)
{
    CUdeviceptr pointer;
    *reduction = k->param_reduction != NULL && k->param_reduction[i] != 0;
    if (!(*reduction || k->param_use[i] == MGPU_PARAM_LOAD) ||
        !mgpu_launch_param_buffer(k, i, params, buffer, &pointer, b))
        return false;
    return mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS ||
           (*reduction
                ? mgpu_mirror_privatising_entries()
                : copy_would_serve(b) && !slices_read_own_parts(k, params, buffer, i, b, launch));
}

bool mgpu_mirror_candidates(const struct mgpu_gpu_kernels *k, void *const *params,
                            const void *buffer, const struct mgpu_mirror_launch *launch)
{
    if (!mgpu_replicas_on() || k->param_use == NULL || (k->notes & MGPU_NOTE_UNKNOWN_STORE))
        return false;
    for (unsigned i = 0; i < k->nparams; i++) {
        struct mgpu_pool_block b;
        bool reduction;
        if (candidate(k, params, buffer, launch, i, &b, &reduction))
            return true;
    }
    return false;
}

double mgpu_mirror_copies_seconds(const struct mgpu_gpu_kernels *k, void *const *params,
                                  const void *buffer, const struct mgpu_mirror_launch *launch,
                                  const struct mgpu_link_model *model)
{
    if (model == NULL || launch == NULL || !mgpu_replicas_on() || k->param_use == NULL)
        return 0.0;
    struct mgpu_link_move moves[MGPU_MAX_GPUS];
    size_t n = 0;
    double seconds = 0.0;
    for (unsigned i = 0; i < k->nparams; i++) {
        struct mgpu_pool_block b;
        bool reduction;
        if (!candidate(k, params, buffer, launch, i, &b, &reduction) || reduction)
            continue;
        n = 0;
        for (int s = 0; s < launch->nslices && n < MGPU_MAX_GPUS; s++) {
            int to = mgpu_mirror_holder(launch->slices[s].gpu);
            bool seen = to == 0 || to >= model->nentries;
            for (size_t m = 0; m < n && !seen; m++)
                seen = moves[m].to == to;
            if (!seen)
                moves[n++] = (struct mgpu_link_move){b.bytes, 0, to};
        }
        seconds += mgpu_link_copy_seconds(model, moves, n);
    }
    return seconds;
}

/* Whether a parameter other than `param` may reach the buffer that starts
 * at `start`: a pointer into it that the kernel uses, or a struct passed
 * by value that the kernel uses pointers in. */
static bool others_reach_buffer(const struct mgpu_gpu_kernels *k, void *const *params,
                                const void *buffer, unsigned param, CUdeviceptr start)
{
    for (unsigned j = 0; j < k->nparams; j++) {
        if (j == param || k->param_use[j] == 0)
            continue;
        if (k->param_sizes[j] != sizeof(CUdeviceptr))
            return true;
        CUdeviceptr p;
        struct mgpu_pool_block b;
        if (mgpu_launch_param_buffer(k, j, params, buffer, &p, &b) && b.start == start)
            return true;
    }
    return false;
}

/* Parameter i's reduction privatised on the GPUs of the slices other than
 * the home one, when it qualifies: entry j of the plan. */
static bool plan_private(const struct mgpu_gpu_kernels *k, void *const *params, const void *buffer,
                         unsigned i, const struct mgpu_grid_slice *slices, int nslices,
                         CUstream stream, struct mgpu_mirror_plan *plan, int j)
{
    unsigned code = k->param_reduction[i];
    CUdeviceptr pointer;
    struct mgpu_pool_block b;
    if (code == 0 || k->param_use[i] != MGPU_PARAM_ATOMIC ||
        plan->nprivate >= MGPU_MIRROR_MAX_PARAMS ||
        !mgpu_launch_param_buffer(k, i, params, buffer, &pointer, &b) || b.shared ||
        others_reach_buffer(k, params, buffer, i, b.start) ||
        !mgpu_private_reductions_ready(k->contexts[0]))
        return false;
    struct mgpu_private_buffer *p = &plan->privates[plan->nprivate];
    memset(p, 0, sizeof *p);
    p->start = b.start;
    p->bytes = b.bytes;
    p->reduction = code;
    bool from_contents = MGPU_REDUCTION_OP(code) != MGPU_REDUCE_ADD;
    bool any = false;
    memset(plan->value[j], 0, sizeof plan->value[j]);
    for (int s = 0; s < nslices; s++) {
        int gpu = slices[s].gpu;
        /* The home slice updates the buffer itself; with copies shared by
         * a device, so do the home device's other entries, and a device's
         * later entries, whose copy could not be started in one stream
         * before all of their slices. */
        if (gpu == 0 || (mgpu_cfg.mirror != MGPU_MIRROR_ALWAYS &&
                         (on_home_device(gpu) || mgpu_mirror_holder(gpu) != gpu)))
            continue;
        p->copy[gpu] = mgpu_replicas_private(b.start, b.bytes, b.id, gpu, k->contexts[gpu],
                                             k->contexts[0], stream, from_contents, code);
        if (p->copy[gpu] != 0)
            plan->value[j][gpu] = p->copy[gpu] + (pointer - b.start);
        any |= p->copy[gpu] != 0;
    }
    if (any)
        plan->nprivate++;
    return any;
}

void mgpu_mirror_plan_reads(const struct mgpu_gpu_kernels *k, void *const *params,
                            const void *buffer, const struct mgpu_mirror_launch *launch,
                            CUstream stream, bool reductions_only, struct mgpu_mirror_plan *plan)
{
    const struct mgpu_grid_slice *slices = launch->slices;
    int nslices = launch->nslices;
    plan->count = 0;
    plan->nprivate = 0;
    if (!mgpu_replicas_on() || k->param_use == NULL || (k->notes & MGPU_NOTE_UNKNOWN_STORE))
        return;
    bool begun = false;
    for (unsigned i = 0; i < k->nparams && plan->count < MGPU_MIRROR_MAX_PARAMS; i++) {
        int j = plan->count;
        if (k->param_reduction != NULL && k->param_reduction[i] != 0) {
            if (!begun) {
                mgpu_replicas_begin();
                begun = true;
            }
            plan->privatised[j] = true;
            if (plan_private(k, params, buffer, i, slices, nslices, stream, plan, j))
                plan->param[plan->count++] = i;
            continue;
        }
        CUdeviceptr pointer;
        struct mgpu_pool_block b;
        if (reductions_only || k->param_use[i] != MGPU_PARAM_LOAD ||
            !mgpu_launch_param_buffer(k, i, params, buffer, &pointer, &b) ||
            launch_writes_buffer(k, params, buffer, b.start) || b.shared ||
            slices_read_own_parts(k, params, buffer, i, &b, launch))
            continue; /* a shared buffer: another process may write it unseen */
        if (!begun) {
            mgpu_replicas_begin();
            begun = true;
        }
        plan->privatised[j] = false;
        bool any = false;
        memset(plan->value[j], 0, sizeof plan->value[j]);
        /* Under auto, the entries on the device that holds all of the
         * buffer read it where it is. */
        int sole = mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS ? -1 : mgpu_mirror_sole_device(&b);
        for (int s = 0; s < nslices; s++) {
            int gpu = slices[s].gpu, holder = mgpu_mirror_holder(gpu);
            if (sole >= 0 && mgpu_run_gpus()->device[gpu] == sole)
                continue;
            plan->value[j][gpu] = mgpu_replicas_read(b.start, b.bytes, b.id, pointer, holder,
                                                     k->contexts[holder], k->contexts[0], stream);
            any |= plan->value[j][gpu] != 0;
        }
        if (any)
            plan->param[plan->count++] = i;
    }
    if (begun)
        mgpu_replicas_end(stream);
}

void mgpu_mirror_launch_writes(const struct mgpu_gpu_kernels *k, void *const *params,
                               const void *buffer)
{
    if (!mgpu_replicas_exist())
        return;
    if (k == NULL || k->param_use == NULL || (k->notes & MGPU_NOTE_UNKNOWN_STORE)) {
        mgpu_replicas_written_anywhere();
        return;
    }
    for (unsigned i = 0; i < k->nparams; i++) {
        if (!writes(k->param_use[i]))
            continue;
        if (k->param_sizes[i] != sizeof(CUdeviceptr)) {
            mgpu_replicas_written_anywhere();
            return;
        }
        CUdeviceptr p = 0;
        struct mgpu_pool_block b;
        if (mgpu_launch_param_buffer(k, i, params, buffer, &p, &b)) {
            mgpu_replicas_written(b.start, b.bytes);
        } else if (mgpu_pool_holds(p)) {
            /* In the pool but in no buffer (one past the end, say): the
             * kernel may write back from it into any. */
            mgpu_replicas_written_anywhere();
            return;
        }
    }
}
