/* Owns the launch pipeline (launch.h): whether and how a launch is split
 * or moved (the plan, sched/slice_plan.c; the policy, sched/split_policy.c
 * and mirror/mirror_policy.c), the mirrors its slices read, the split
 * launch itself (sched/split_launch.c), the launch whole otherwise, and
 * what each leaves for the report, the mirrors and the placement after
 * it. */
#include "sched/launch.h"

#include "base/kernel_stats.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "base/real_driver.h"
#include "mirror/mirror_policy.h"
#include "mirror/replicas.h"
#include "modules/program_modules.h"
#include "partition/gpu_contexts.h"
#include "partition/gpu_entries.h"
#include "probes/probe_runtime.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_footprint.h"
#include "sched/footprint_record.h"
#include "sched/launch_params.h"
#include "sched/mirror_reads.h"
#include "sched/placement_follow.h"
#include "sched/run_links.h"
#include "sched/slice_plan.h"
#include "sched/split_launch.h"
#include "sched/split_policy.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A launch as the pipeline follows it. */
struct launch_shape {
    const void *kernel;
    unsigned grid[3], block[3];
    CUstream stream; /* as the non-_ptsz functions take it */
    bool cooperative;
    bool cluster;
    enum mgpu_unsplit_reason why; /* from the rewritten modules */
};

static enum mgpu_unsplit_reason why_not_split(const struct launch_shape *s, bool capturing)
{
    if (s->cooperative)
        return MGPU_UNSPLIT_COOPERATIVE;
    if (s->cluster)
        return MGPU_UNSPLIT_CLUSTER;
    if (capturing)
        return MGPU_UNSPLIT_CAPTURE;
    return s->why;
}

/* A stream being captured (or one the driver cannot tell about) gets
 * nothing split and nothing timed. */
static bool capturing(CUstream stream)
{
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    return mgpu_drv.cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS ||
           capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

struct launch_record {
    int kernel;
    bool capturing;
    struct mgpu_launch_timer timer;
};

static void before_launch(const struct launch_shape *s, struct launch_record *rec)
{
    rec->capturing = capturing(s->stream);
    rec->kernel = mgpu_kernel_stats_find(s->kernel);
    rec->timer.active = false;
    if (!rec->capturing)
        mgpu_timing_begin(&rec->timer, rec->kernel, s->stream);
}

static void after_launch(const struct launch_shape *s, struct launch_record *rec, CUresult r)
{
    mgpu_timing_end(&rec->timer, s->stream, r);
    if (r == CUDA_SUCCESS)
        mgpu_kernel_stats_count_launch(rec->kernel, s->grid, s->block,
                                       why_not_split(s, rec->capturing));
}

/* Whether two of the slices would run on GPU entries of one device
 * (--gpus 0x8, 0,1,0,1). A kernel whose blocks wait for blocks launched
 * before them (ptx/ptx_block_waits.h) is not split so, also under
 * MGPU_SPLIT=always: slices that share a device run side by side, and the
 * later ones' blocks can fill it while the earlier one's wait to start
 * (bench/corpus/cub_sort_scan's look-back scan at --gpus 0x8 never
 * ended). On distinct devices each slice's blocks start on their own. */
static bool slices_share_a_device(const struct mgpu_grid_slice *slices, int nslices)
{
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (e == NULL)
        return true;
    for (int a = 0; a < nslices; a++)
        for (int b = a + 1; b < nslices; b++)
            if (slices[a].gpu < e->count && slices[b].gpu < e->count &&
                e->device[slices[a].gpu] == e->device[slices[b].gpu])
                return true;
    return false;
}

/* Why a launch from the rewritten modules is not split, or, with
 * MGPU_UNSPLIT_NONE, the slices it is split into. */
static enum mgpu_unsplit_reason plan_split(const struct launch_shape *s,
                                           const struct mgpu_module_launch *ml,
                                           const CUlaunchConfig *config,
                                           struct mgpu_grid_slice *slices, int *nslices)
{
    /* Probes make rewritten modules with MGPU_SPLIT=never and with one GPU. */
    if (mgpu_cfg.split == MGPU_SPLIT_NEVER)
        return MGPU_UNSPLIT_SPLIT_OFF;
    if (ml->kernel.ngpus < 2)
        return MGPU_UNSPLIT_ONE_GPU;
    if (s->cooperative)
        return MGPU_UNSPLIT_COOPERATIVE;
    if (s->cluster)
        return MGPU_UNSPLIT_CLUSTER;
    if (ml->kernel.unsplittable != 0)
        return MGPU_UNSPLIT_ANALYSIS;
    if (config != NULL && !mgpu_split_attributes_allow(config, false))
        return MGPU_UNSPLIT_ATTRIBUTE;
    if (capturing(s->stream))
        return MGPU_UNSPLIT_CAPTURE;
    *nslices = mgpu_slice_plan(&ml->kernel, s->grid, s->block[0] * s->block[1] * s->block[2],
                               ml->params, ml->buffer, slices);
    if (*nslices > 1 && (ml->kernel.notes & MGPU_NOTE_BLOCK_WAITS) &&
        slices_share_a_device(slices, *nslices))
        return MGPU_UNSPLIT_ANALYSIS;
    return *nslices > 1 ? MGPU_UNSPLIT_NONE : MGPU_UNSPLIT_SMALL;
}

/* With MGPU_VERBOSE=2, the first split launches' slices. */
static void describe_slices(const struct launch_shape *shape, const struct mgpu_grid_slice *slices,
                            int nslices)
{
    static atomic_int described;
    if (atomic_fetch_add(&described, 1) >= 32)
        return;
    char text[512];
    size_t used = 0;
    int dim = mgpu_grid_split_dim(shape->grid);
    for (int i = 0; i < nslices && used < sizeof text && dim >= 0; i++) {
        const struct mgpu_grid_slice *sl = &slices[i];
        /* A grid-stride loop cut by iterations: its range, and the blocks
         * that walk it. */
        if (sl->iterations)
            used += (size_t)snprintf(
                text + used, sizeof text - used, "%sGPU %d: iterations %llu..%llu (%u blocks)",
                i ? ", " : "", sl->gpu, sl->iteration_begin, sl->iteration_end - 1, sl->dims[dim]);
        else
            used +=
                (size_t)snprintf(text + used, sizeof text - used, "%sGPU %d: %u..%u", i ? ", " : "",
                                 sl->gpu, sl->first[dim], sl->first[dim] + sl->dims[dim] - 1);
    }
    mgpu_debug("split launch of %u x %u x %u blocks along %c: %s", shape->grid[0], shape->grid[1],
               shape->grid[2], "xyz"[dim < 0 ? 0 : dim], text);
}

/* With MGPU_VERBOSE=2, the first split launches' footprints: per slice
 * cut by blocks, the bytes from each pointer it may read and write
 * (ptx/ptx_footprint.h), or why every buffer is whole. */
#define FOOTPRINT_SLOTS_SAID 8
static void describe_footprints(const struct launch_shape *shape,
                                const struct mgpu_module_launch *ml,
                                const struct mgpu_grid_slice *slices, int nslices)
{
    static atomic_int described;
    const struct mgpu_kernel_footprint *fp = ml->kernel.footprint;
    int dim = mgpu_grid_split_dim(shape->grid);
    if (fp == NULL || dim < 0 || mgpu_cfg.verbose < 2 || atomic_fetch_add(&described, 1) >= 32)
        return;
    if (fp->unknown) {
        mgpu_debug("  footprint: every buffer whole (%s)", fp->reason);
        return;
    }
    void *inline_values[32];
    struct mgpu_fp_launch l;
    mgpu_launch_footprint(&ml->kernel, ml->params, ml->buffer, shape->grid, shape->block,
                          inline_values, 32, &l); /* without parameters, where it cannot */
    struct mgpu_fp_range *reads = malloc(2 * (fp->nslots + 1) * sizeof *reads);
    if (reads == NULL)
        return;
    struct mgpu_fp_range *writes = reads + fp->nslots;
    size_t nslots = fp->nslots < FOOTPRINT_SLOTS_SAID ? fp->nslots : FOOTPRINT_SLOTS_SAID;
    for (int i = 0; i < nslices; i++) {
        if (slices[i].iterations)
            continue;
        mgpu_fp_slice(fp, &l, dim, slices[i].first[dim], slices[i].first[dim] + slices[i].dims[dim],
                      reads, writes);
        char text[512];
        size_t used = 0;
        for (size_t s = 0; s < nslots && used < sizeof text; s++) {
            const struct mgpu_fp_range *r[2] = {&reads[s], &writes[s]};
            for (int w = 0; w < 2 && used < sizeof text; w++) {
                if (!r[w]->any)
                    continue;
                if (r[w]->whole)
                    used += (size_t)snprintf(text + used, sizeof text - used, "%sparam %d %s all",
                                             used ? ", " : "", fp->slots[s].param,
                                             w ? "writes" : "reads");
                else
                    used += (size_t)snprintf(text + used, sizeof text - used,
                                             "%sparam %d %s [%lld, %lld)", used ? ", " : "",
                                             fp->slots[s].param, w ? "writes" : "reads", r[w]->lo,
                                             r[w]->hi);
            }
        }
        mgpu_debug("  footprint of GPU %d's slice: %s", slices[i].gpu, used ? text : "nothing");
    }
    free(reads);
}

/* For a launch that cannot be split for `why`: one slice, the whole grid,
 * on the GPU that holds most of its data, when that is not the home GPU
 * and the launch may leave the program's stream. Returns that GPU, or 0. */
static int plan_move(const struct launch_shape *s, const struct mgpu_module_launch *ml,
                     const CUlaunchConfig *config, enum mgpu_unsplit_reason why,
                     struct mgpu_grid_slice *slice)
{
    if (why != MGPU_UNSPLIT_COOPERATIVE && why != MGPU_UNSPLIT_CLUSTER &&
        why != MGPU_UNSPLIT_ANALYSIS)
        return 0;
    if (config != NULL
            ? !mgpu_split_attributes_allow(config, true)
            : s->cooperative && (ml->params == NULL || mgpu_drv.cuLaunchCooperativeKernel == NULL))
        return 0;
    if (capturing(s->stream))
        return 0;
    int gpu = mgpu_slice_plan_data_owner(&ml->kernel, ml->params, ml->buffer);
    if (gpu <= 0)
        return 0;
    *slice = (struct mgpu_grid_slice){.gpu = gpu};
    memcpy(slice->dims, s->grid, sizeof slice->dims);
    return gpu;
}

static void count_split(int kernel, const struct launch_shape *shape,
                        const struct mgpu_grid_slice *slices, int nslices)
{
    int gpus[MGPU_MAX_GPUS];
    for (int i = 0; i < nslices; i++)
        gpus[i] = slices[i].gpu;
    mgpu_kernel_stats_count_split(kernel, shape->grid, shape->block, nslices, gpus);
}

/* Whether a GPU other than the home one holds some of the pool buffers the
 * launch's parameters name. */
static bool data_off_home(const struct mgpu_module_launch *ml)
{
    struct mgpu_pool_block buffers[64];
    size_t n = mgpu_launch_param_buffers(&ml->kernel, ml->params, ml->buffer, buffers, 64);
    for (size_t i = 0; i < n; i++) {
        size_t held[MGPU_MAX_GPUS];
        if (mgpu_pool_bytes_by_gpu(buffers[i].start, buffers[i].bytes, held) < 1)
            continue;
        for (int g = 1; g < MGPU_MAX_GPUS; g++)
            if (held[g] > 0)
                return true;
    }
    return false;
}

/* A split launch's copies, for the mirror policy's question of what
 * making them would take (copies_us). */
struct copies_of {
    const struct mgpu_module_launch *ml;
    const struct mgpu_mirror_launch *launch;
};

static double copies_us(void *arg)
{
    const struct copies_of *c = arg;
    return 1e6 * mgpu_mirror_copies_seconds(&c->ml->kernel, c->ml->params, c->ml->buffer, c->launch,
                                            mgpu_run_links());
}

/* Launches a kernel of a module with rewritten modules split over the GPUs, or whole
 * on the GPU that holds most of its data when it cannot be split, when
 * the cost model wants it. Returns false, with shape->why set, to have the
 * caller launch it whole in the program's stream, timed with *trial when
 * the cost model asks for that. */
static bool split_launch(struct launch_shape *shape, const struct mgpu_module_launch *ml,
                         unsigned shared, const CUlaunchConfig *config,
                         struct mgpu_split_trial *trial, CUresult *result, int *ran_whole_on)
{
    struct mgpu_grid_slice slices[MGPU_MAX_GPUS];
    int nslices = 0;
    enum mgpu_unsplit_reason why = plan_split(shape, ml, config, slices, &nslices);
    int moved_to = why == MGPU_UNSPLIT_NONE ? 0 : plan_move(shape, ml, config, why, &slices[0]);
    if (moved_to > 0)
        nslices = 1;
    bool go = why == MGPU_UNSPLIT_NONE || moved_to > 0;
    /* Not worth it: a split runs whole; a move stays home, for its reason. */
    enum mgpu_unsplit_reason declined = why == MGPU_UNSPLIT_NONE ? MGPU_UNSPLIT_SMALL : why;
    struct mgpu_split_estimate estimate = {.kernel = &ml->kernel,
                                           .params = ml->params,
                                           .buffer = ml->buffer,
                                           .grid = shape->grid,
                                           .block = shape->block,
                                           .slices = slices,
                                           .nslices = nslices,
                                           .privatised = mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS};
    /* The other GPUs first (gpu_contexts.h, program_modules.h): under
     * auto, a launch runs whole, untimed and without asking the policy, as
     * the program would run it, until their contexts are made off the
     * program's way, and then until the module's copies there are loaded
     * on a thread of mgpu's own (a 1 MB module takes tens of milliseconds
     * per GPU); the links' measurement starts once the contexts are made.
     * Under always, or when the launch's data already lie on other GPUs,
     * where a whole launch reads them over the links, the launch waits
     * for them (at most a second). */
    bool may_wait = mgpu_cfg.split != MGPU_SPLIT_AUTO ||
                    (go && !mgpu_module_launch_all_gpus_ready(ml) && data_off_home(ml));
    if (go && !may_wait && !mgpu_module_launch_all_gpus_ready(ml) && !mgpu_gpu_contexts_warmed()) {
        mgpu_debug("kernel %s runs whole this time: the other GPUs' contexts are being made",
                   ml->kernel.name);
        go = false;
        if (why == MGPU_UNSPLIT_NONE)
            declined = MGPU_UNSPLIT_NOT_READY;
    }
    if (go && mgpu_cfg.split == MGPU_SPLIT_AUTO)
        mgpu_run_links_start();
    char why_not_loaded[200];
    int loaded = go ? mgpu_module_launch_all_gpus(ml, shape->stream, may_wait, why_not_loaded,
                                                  sizeof why_not_loaded)
                    : 0;
    if (loaded != 0) {
        static atomic_int said;
        if (loaded < 0 && atomic_fetch_add(&said, 1) < 4)
            mgpu_warn("kernel %s runs whole: %s", ml->kernel.name, why_not_loaded);
        else if (loaded > 0)
            mgpu_debug("kernel %s runs whole this time: its module's copies on the other GPUs "
                       "are %s",
                       ml->kernel.name, why_not_loaded);
        go = false;
        if (loaded > 0 && why == MGPU_UNSPLIT_NONE)
            declined = MGPU_UNSPLIT_NOT_READY;
    }
    if (go && !mgpu_split_policy_choose(shape->kernel, shape->grid, shape->block,
                                        moved_to > 0 ? NULL : &estimate, trial))
        go = false;
    /* A split that pays only with its buffers spread: spread, and cut
     * again where their owners now change. */
    if (go && trial->spread_first &&
        mgpu_follow_spread_for_split(&ml->kernel, ml->params, ml->buffer) > 0 &&
        plan_split(shape, ml, config, slices, &nslices) != MGPU_UNSPLIT_NONE) {
        mgpu_split_trial_end(trial, shape->stream, CUDA_ERROR_NOT_READY); /* not a split time */
        trial->shape = NULL;
        go = false;
    }
    /* The workers, and the slice streams, events and flags of this stream,
     * made before the launch's timing starts (their first making costs
     * milliseconds): a split time must be the launch's alone. */
    if (go && (mgpu_split_launch_start(ml->kernel.ngpus, ml->kernel.contexts) != 0 ||
               mgpu_split_launch_prepare(&ml->kernel, shape->stream) != CUDA_SUCCESS)) {
        mgpu_split_trial_end(trial, shape->stream, CUDA_ERROR_NOT_READY); /* not a split time */
        trial->shape = NULL;
        go = false;
    }
    if (!go) {
        shape->why = declined;
        return false;
    }
    /* Whether it mirrors, and NCCL's communicator's making started when it
     * does (about 0.6 s on 4 x H200, on a thread of mgpu's own, which only
     * MGPU_MIRROR=always waits for; mirrors use device copies meanwhile).
     * Under always the plan looks the buffers up itself; only auto times a
     * shape, and only one with something to mirror. */
    /* A split try of a shape mirrors could serve mirrors, untimed by the
     * mirror policy (split_policy.h). */
    struct mgpu_mirror_trial mirror_trial = {NULL};
    struct mgpu_mirror_launch mirror_launch = {shape->grid, shape->block, slices, nslices};
    bool mirrored =
        trial->mirrored ||
        ((mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS ||
          mgpu_mirror_candidates(&ml->kernel, ml->params, ml->buffer, &mirror_launch)) &&
         mgpu_mirror_policy_choose(shape->kernel, shape->grid, shape->block, trial->privatise,
                                   nslices > 0 && slices[0].iterations, trial->mirrored_split_us,
                                   copies_us, &(struct copies_of){ml, &mirror_launch},
                                   &mirror_trial));
    if (mirrored)
        mgpu_replicas_prepare(ml->kernel.contexts[0]);
    struct mgpu_split_request req = {
        .kernel = &ml->kernel,
        .slices = slices,
        .nslices = nslices,
        .grid = {shape->grid[0], shape->grid[1], shape->grid[2]},
        .block = {shape->block[0], shape->block[1], shape->block[2]},
        .shared_bytes = shared,
        .stream = shape->stream,
        .params = ml->params,
        .buffer = ml->buffer,
        .buffer_size = ml->buffer_size,
        .config = config,
        .cooperative = shape->cooperative,
        .trace_kernel = -1,
        .launch_sequence = ml->grid.launch_sequence,
        .probe_block_threshold = ml->grid.probe_block_threshold,
    };
    if (mgpu_cfg.verbose >= 2) {
        describe_slices(shape, slices, nslices);
        describe_footprints(shape, ml, slices, nslices);
    }
    if (mgpu_footprint_recording())
        mgpu_footprint_record(&ml->kernel, ml->params, ml->buffer, shape->grid, shape->block,
                              ml->grid.launch_sequence, slices, nslices);
    struct launch_record record;
    if (mgpu_stats_enabled)
        before_launch(shape, &record);
    /* With a trace, each slice is timed on its GPU's track too. */
    req.trace_kernel = mgpu_stats_enabled && mgpu_cfg.trace_path[0] ? record.kernel : -1;
    mgpu_split_trial_begin(trial, shape->stream);
    struct mgpu_mirror_plan mirror = {.count = 0, .nprivate = 0};
    mgpu_mirror_trial_begin(&mirror_trial, shape->stream); /* before the refreshes */
    if (mirrored)
        mgpu_mirror_plan_reads(&ml->kernel, ml->params, ml->buffer, &mirror_launch, shape->stream,
                               trial->privatise, &mirror);
    req.mirror = mirror.count > 0 ? &mirror : NULL;
    if (mgpu_stats_enabled && mirror.count > 0) {
        unsigned long long read = 0, privatised = 0;
        for (int j = 0; j < mirror.count; j++)
            if (mirror.param[j] < 64)
                *(mirror.privatised[j] ? &privatised : &read) |= 1ull << mirror.param[j];
        mgpu_kernel_stats_mirrored(record.kernel, read, privatised);
    }
    /* Replicas made and pages moved for this launch, on the probes' map. */
    mgpu_probes_before_slices();
    *result = mgpu_split_launch(&req);
    *ran_whole_on = moved_to > 0 ? moved_to : -1;
    mgpu_mirror_trial_end(&mirror_trial, shape->stream, *result);
    mgpu_split_trial_end(trial, shape->stream, *result);
    if (moved_to > 0 && *result == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) {
        /* A GPU with fewer multiprocessors than the home one: run it home. */
        if (mgpu_stats_enabled)
            mgpu_timing_end(&record.timer, shape->stream, *result);
        trial->shape = NULL;
        *ran_whole_on = 0;
        shape->why = why;
        return false;
    }
    if (mgpu_stats_enabled) {
        mgpu_timing_end(&record.timer, shape->stream, *result);
        if (*result == CUDA_SUCCESS && moved_to > 0)
            mgpu_kernel_stats_count_moved(record.kernel, shape->grid, shape->block, why, moved_to);
        else if (*result == CUDA_SUCCESS)
            count_split(record.kernel, shape, slices, nslices);
    }
    return true;
}

CUresult mgpu_launch(const struct mgpu_launch *l, mgpu_launch_whole_fn whole)
{
    struct launch_shape shape = {.kernel = l->function,
                                 .grid = {l->grid[0], l->grid[1], l->grid[2]},
                                 .block = {l->block[0], l->block[1], l->block[2]},
                                 .stream = l->stream,
                                 .cooperative = l->cooperative,
                                 .cluster = l->cluster};
    struct mgpu_module_launch ml;
    bool from_rewritten = mgpu_module_launch_prepare(
        l->function, shape.stream, shape.grid, shape.block, l->params, l->extra, &ml, &shape.why);
    CUfunction fn = from_rewritten ? ml.fn : l->function;
    void **prm = from_rewritten ? ml.params : l->params;
    void **ext = from_rewritten ? ml.extra : l->extra;
    CUresult launch_result;
    struct mgpu_split_trial trial = {NULL, false, false, false, false, 0.0};
    int ran_whole_on = 0; /* the home GPU, unless split_launch says otherwise */
    if (from_rewritten && split_launch(&shape, &ml, l->shared_bytes, l->config, &trial,
                                       &launch_result, &ran_whole_on)) {
    } else if (!mgpu_stats_enabled && trial.shape == NULL) {
        launch_result = whole(l, fn, prm, ext);
    } else {
        struct launch_record record;
        if (mgpu_stats_enabled)
            before_launch(&shape, &record);
        mgpu_split_trial_begin(&trial, shape.stream);
        launch_result = whole(l, fn, prm, ext);
        mgpu_split_trial_end(&trial, shape.stream, launch_result);
        if (mgpu_stats_enabled)
            after_launch(&shape, &record, launch_result);
    }
    mgpu_mirror_launch_writes(from_rewritten ? &ml.kernel : NULL, from_rewritten ? ml.params : NULL,
                              from_rewritten ? ml.buffer : NULL);
    if (launch_result == CUDA_SUCCESS && mgpu_follow_on())
        mgpu_follow_launch(from_rewritten ? &ml.kernel : NULL, from_rewritten ? ml.params : NULL,
                           from_rewritten ? ml.buffer : NULL, ran_whole_on);
    if (from_rewritten)
        mgpu_module_launch_done(&ml, launch_result);
    return launch_result;
}
