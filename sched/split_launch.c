/* Owns the submission of split launches (see split_launch.h): the slices'
 * parameters, the fork and the join, and the handoff to the worker
 * threads. One split launch is submitted at a time, under the slice
 * streams' lock, so their events and flags can be reused.
 *
 * The fork and join are sequence flags where the set has them (a fraction
 * of the host cost of events, docs/how-it-works.md): the program's stream
 * writes the fork flag, each other GPU's slice stream waits for it,
 * launches, and writes its join flag; the program's stream waits for all
 * join flags in one batch. Otherwise events do the same. */
#include "sched/split_launch.h"

#include "partition/gpu_workers.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "sched/mirror_reads.h"
#include "ptx/ptx_analysis.h"
#include "base/real_driver.h"
#include "sched/slice_errors.h"
#include "sched/slice_streams.h"
#include "sched/slice_watch.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define INLINE_PARAMS 32
#define INLINE_BUFFER 512

/* What one slice hands the driver. */
struct slice_launch {
    struct mgpu_grid_param grid_words; /* __mgpu_grid */
    void *params_inline[INLINE_PARAMS];
    void **params;
    unsigned char buffer_inline[INLINE_BUFFER];
    void *buffer;
    size_t buffer_size;
    void *extra[5];
    CUdeviceptr mirrored[MGPU_MIRROR_MAX_PARAMS]; /* replica pointers the params point to */
    CUlaunchConfig config;
    CUresult result;
    bool joined;                    /* the join flag or event is on its way */
    struct mgpu_launch_timer timer; /* for the trace */
};

struct split_job {
    const struct mgpu_split_request *req;
    struct mgpu_slice_streams *streams;
    bool flags; /* fork and join on the set's sequence flags */
    uint32_t sequence;
    struct slice_launch launches[MGPU_MAX_GPUS]; /* by slice */
    int slice_of_gpu[MGPU_MAX_GPUS];
};

static struct split_job the_job; /* under mgpu_slice_streams_lock */

bool mgpu_split_attributes_allow(const CUlaunchConfig *config, bool whole)
{
    for (unsigned i = 0; config->attrs != NULL && i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        switch (a->id) {
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
        case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
            break;
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            if (a->value.cooperative && !whole)
                return false;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            if (a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z > 1 && !whole)
                return false;
            break;
        default:
            return false;
        }
    }
    return true;
}

int mgpu_split_launch_start(int ngpus, const CUcontext *contexts)
{
    return mgpu_gpu_workers_start(ngpus, contexts);
}

CUresult mgpu_split_launch_prepare(const struct mgpu_gpu_kernels *k, CUstream stream)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&mgpu_slice_streams_lock);
    mgpu_slice_streams_for(stream, k->contexts[0], k->ngpus, k->contexts, &r);
    pthread_mutex_unlock(&mgpu_slice_streams_lock);
    return r;
}

/* The pointer parameters that read replicas on `gpu`: in the parameter
 * array, pointed to this slice's own words; in a buffer, written over. */
static void redirect_to_replicas(const struct mgpu_split_request *req, int gpu,
                                 struct slice_launch *l)
{
    const struct mgpu_mirror_plan *plan = req->mirror;
    for (int j = 0; plan != NULL && j < plan->count; j++) {
        CUdeviceptr value = plan->value[j][gpu];
        unsigned i = plan->param[j];
        if (value == 0)
            continue;
        if (l->params != NULL) {
            l->mirrored[j] = value;
            l->params[i] = &l->mirrored[j];
        } else {
            memcpy((char *)l->buffer + req->kernel->param_offsets[i], &value, sizeof value);
        }
    }
}

/* The parameters of slice `s`: the module launch's, with this slice's grid
 * words in place of the whole grid's, and its replicas' pointers. */
static bool prepare_slice(const struct mgpu_split_request *req, int s, struct slice_launch *l)
{
    const struct mgpu_grid_slice *slice = &req->slices[s];
    l->params = NULL;
    l->buffer = NULL;
    if (req->work != NULL)
        return true;
    memset(&l->grid_words, 0, sizeof l->grid_words);
    for (int d = 0; d < 3; d++) {
        l->grid_words.first[d] = slice->first[d];
        l->grid_words.grid[d] = req->grid[d];
    }
    l->grid_words.launch_sequence = req->launch_sequence;
    l->grid_words.probe_block_threshold = req->probe_block_threshold;
    if (slice->iterations) {
        l->grid_words.iteration_split = 1;
        l->grid_words.iteration_begin = slice->iteration_begin;
        l->grid_words.iteration_end = slice->iteration_end;
    }
    if (req->params != NULL) {
        unsigned n = req->kernel->nparams;
        l->params = n + 1 <= INLINE_PARAMS ? l->params_inline : malloc((n + 1) * sizeof(void *));
        if (l->params == NULL)
            return false;
        memcpy(l->params, req->params, n * sizeof(void *));
        l->params[n] = &l->grid_words;
        redirect_to_replicas(req, slice->gpu, l);
        return true;
    }
    l->buffer_size = req->buffer_size;
    l->buffer = l->buffer_size <= INLINE_BUFFER ? l->buffer_inline : malloc(l->buffer_size);
    if (l->buffer == NULL)
        return false;
    memcpy(l->buffer, req->buffer, l->buffer_size);
    memcpy((char *)l->buffer + req->kernel->grid_offset, &l->grid_words, sizeof l->grid_words);
    redirect_to_replicas(req, slice->gpu, l);
    l->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    l->extra[1] = l->buffer;
    l->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    l->extra[3] = &l->buffer_size;
    l->extra[4] = CU_LAUNCH_PARAM_END;
    return true;
}

static void release_slice(struct slice_launch *l)
{
    if (l->params != NULL && l->params != l->params_inline)
        free(l->params);
    if (l->buffer != NULL && l->buffer != l->buffer_inline)
        free(l->buffer);
}

static CUresult launch_slice_now(const struct mgpu_split_request *req, int s,
                                 struct slice_launch *l, CUstream stream)
{
    const struct mgpu_grid_slice *slice = &req->slices[s];
    if (req->work != NULL)
        return req->work->run(req->work->arg, s, slice->gpu, stream);
    CUfunction fn = req->kernel->fns[slice->gpu];
    void **extra = l->params != NULL ? NULL : l->extra;
    if (req->config == NULL && req->cooperative)
        return mgpu_drv.cuLaunchCooperativeKernel(
            fn, slice->dims[0], slice->dims[1], slice->dims[2], req->block[0], req->block[1],
            req->block[2], req->shared_bytes, stream, l->params);
    if (req->config == NULL)
        return mgpu_drv.cuLaunchKernel(fn, slice->dims[0], slice->dims[1], slice->dims[2],
                                       req->block[0], req->block[1], req->block[2],
                                       req->shared_bytes, stream, l->params, extra);
    l->config = *req->config;
    l->config.gridDimX = slice->dims[0];
    l->config.gridDimY = slice->dims[1];
    l->config.gridDimZ = slice->dims[2];
    l->config.hStream = stream;
    return mgpu_drv.cuLaunchKernelEx(&l->config, fn, l->params, extra);
}

/* The private copies of slice s's GPU set to where its reductions start
 * (mirror/private_reductions.h), in its stream before its launch. */
static CUresult start_private_copies(const struct mgpu_split_request *req, int s, CUstream stream)
{
    const struct mgpu_mirror_plan *plan = req->mirror;
    CUresult r = CUDA_SUCCESS;
    for (int p = 0; plan != NULL && p < plan->nprivate && r == CUDA_SUCCESS; p++)
        r = mgpu_private_reduction_start(&plan->privates[p], req->slices[s].gpu, stream);
    return r;
}

/* After the join, in the program's stream: the private copies combined
 * into their buffers. Not after a failed launch, whose copies may not
 * have been started. */
static CUresult combine_private_copies(const struct mgpu_split_request *req, CUresult r)
{
    const struct mgpu_mirror_plan *plan = req->mirror;
    for (int p = 0; plan != NULL && p < plan->nprivate && r == CUDA_SUCCESS; p++)
        r = mgpu_private_reduction_combine(&plan->privates[p], req->stream);
    return r;
}

/* Slice s in `stream`, timed on its GPU's track of the trace when one is
 * asked for. */
static CUresult launch_slice(const struct mgpu_split_request *req, int s, struct slice_launch *l,
                             CUstream stream)
{
    CUresult started = start_private_copies(req, s, stream);
    if (started != CUDA_SUCCESS)
        return started;
    if (req->trace_kernel < 0)
        return launch_slice_now(req, s, l, stream);
    mgpu_timing_begin_slice(&l->timer, req->trace_kernel, stream, req->slices[s].gpu);
    CUresult r = launch_slice_now(req, s, l, stream);
    mgpu_timing_end(&l->timer, stream, r);
    return r;
}

/* On GPU g's worker, or on the launching thread for a GPU on the home
 * context: wait for the fork, run the slice, signal the join.
 * The join is signalled even when the launch failed: the program's
 * stream waits for it. A flag write's default memory barrier makes the
 * slice's writes visible before the flag. A join flag that could not be
 * queued is written from the host at once rather than after every slice
 * is queued: the program's stream may already wait for it, and a driver
 * that runs stream work as it is queued (the fake GPU of tests/fake/)
 * waited for ever there in the thread that was to write it. On a GPU the
 * two are the same: the slice may still run in either case. */
static void run_slice_on_gpu(int gpu, void *arg)
{
    struct split_job *job = arg;
    int s = job->slice_of_gpu[gpu];
    struct slice_launch *l = &job->launches[s];
    const struct mgpu_slice_streams *set = job->streams;
    CUstream stream = set->streams[gpu];
    CUresult joined;
    if (job->flags) {
        l->result = mgpu_drv.cuStreamWaitValue32(stream, set->flags_device, job->sequence,
                                                 CU_STREAM_WAIT_VALUE_GEQ);
        if (l->result == CUDA_SUCCESS)
            l->result = launch_slice(job->req, s, l, stream);
        joined = mgpu_drv.cuStreamWriteValue32(stream, set->flags_device + gpu * sizeof(uint32_t),
                                               job->sequence, CU_STREAM_WRITE_VALUE_DEFAULT);
        if (joined != CUDA_SUCCESS)
            set->flags[gpu] = job->sequence;
        l->joined = true;
    } else {
        l->result = mgpu_drv.cuStreamWaitEvent(stream, set->fork, 0);
        if (l->result == CUDA_SUCCESS)
            l->result = launch_slice(job->req, s, l, stream);
        joined = mgpu_drv.cuEventRecord(set->joins[gpu], stream);
        l->joined = joined == CUDA_SUCCESS;
    }
    if (l->result == CUDA_SUCCESS)
        l->result = joined;
}

/* The launch's answer so far, `r`, after slice s on another GPU was
 * queued with `queued`. With a home slice, that slice's answer is the
 * launch's, as the one GPU's would be; another GPU's failure (its context
 * lost to an earlier fault, say) is kept for the next synchronisation,
 * where a kernel's faults are reported. A launch moved whole to another
 * GPU answers with that GPU's result. */
static CUresult slice_result(const struct mgpu_split_request *req, int s, int home_slice,
                             CUresult r, CUresult queued)
{
    if (queued == CUDA_SUCCESS || r != CUDA_SUCCESS)
        return r;
    if (home_slice < 0)
        return queued;
    mgpu_slice_errors_found(req->slices[s].gpu, queued);
    return r;
}

/* Hands the slices of GPUs on other contexts to their workers (to_workers)
 * and returns those on the home context (on_home). */
static void sort_slices(const struct mgpu_slice_streams *set, const bool *wanted,
                        bool to_workers[MGPU_MAX_GPUS], bool on_home[MGPU_MAX_GPUS])
{
    for (int g = 0; g < MGPU_MAX_GPUS; g++) {
        on_home[g] = g < set->ngpus && wanted[g] && set->on_home_context[g];
        to_workers[g] = wanted[g] && !on_home[g];
    }
}

/* The slices on the home context, queued by this thread in GPU order. */
static void run_home_context_slices(struct split_job *job, const bool *on_home)
{
    for (int g = 1; g < job->streams->ngpus; g++)
        if (on_home[g])
            run_slice_on_gpu(g, job);
}

/* With flags nothing on the host has to wait for anything else: the
 * workers queue their waits while this thread writes the fork flag,
 * launches the home slice and queues the wait for the joins, all at once.
 * The slices of GPUs on the home context (on_home_context) are queued by
 * this thread between the fork and the joins' wait, so that in a hardware
 * queue they share with the program's stream every wait comes after the
 * write it waits for (on one H100, --gpus 0x8 hung with their waits queued
 * by workers ahead of the fork). A fork or join that could not be queued
 * is written from the host as soon as that is known, so that no stream
 * waits for ever; the launch then returns the error. (A stream operation fails to queue when its
 * context is lost, and a lost context writes no older flag value over the
 * host's later.) */
static CUresult split_with_flags(struct split_job *job, const bool *wanted, int home_slice)
{
    const struct mgpu_split_request *req = job->req;
    struct mgpu_slice_streams *set = job->streams;
    uint32_t sequence = job->sequence;
    CUstreamBatchMemOpParams waits[MGPU_MAX_GPUS];
    unsigned count = 0;
    for (int g = 1; g < set->ngpus; g++) {
        if (!wanted[g])
            continue;
        memset(&waits[count], 0, sizeof waits[count]);
        waits[count].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        waits[count].waitValue.address = set->flags_device + g * sizeof(uint32_t);
        waits[count].waitValue.value = sequence;
        waits[count].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
        count++;
    }
    bool to_workers[MGPU_MAX_GPUS], on_home[MGPU_MAX_GPUS];
    sort_slices(set, wanted, to_workers, on_home);
    mgpu_gpu_workers_begin(to_workers, run_slice_on_gpu, job);
    CUresult r = mgpu_drv.cuStreamWriteValue32(req->stream, set->flags_device, sequence,
                                               CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS)
        set->flags[0] = sequence;
    run_home_context_slices(job, on_home);
    if (r == CUDA_SUCCESS && home_slice >= 0)
        r = launch_slice(req, home_slice, &job->launches[home_slice], req->stream);
    CUresult joined =
        count > 0 ? mgpu_drv.cuStreamBatchMemOp(req->stream, count, waits, 0) : CUDA_SUCCESS;
    mgpu_gpu_workers_wait();
    for (int s = 0; s < req->nslices; s++)
        if (s != home_slice)
            r = slice_result(req, s, home_slice, r, job->launches[s].result);
    return r == CUDA_SUCCESS ? joined : r;
}

/* With events the fork must be recorded before the workers wait for it,
 * and the joins before the program's stream waits for them. */
static CUresult split_with_events(struct split_job *job, const bool *wanted, int home_slice)
{
    const struct mgpu_split_request *req = job->req;
    struct mgpu_slice_streams *set = job->streams;
    CUresult r = mgpu_drv.cuEventRecord(set->fork, req->stream);
    if (r != CUDA_SUCCESS)
        return r;
    bool to_workers[MGPU_MAX_GPUS], on_home[MGPU_MAX_GPUS];
    sort_slices(set, wanted, to_workers, on_home);
    mgpu_gpu_workers_begin(to_workers, run_slice_on_gpu, job);
    run_home_context_slices(job, on_home);
    if (home_slice >= 0)
        r = launch_slice(req, home_slice, &job->launches[home_slice], req->stream);
    mgpu_gpu_workers_wait();
    for (int s = 0; s < req->nslices; s++) {
        if (s == home_slice)
            continue;
        r = slice_result(req, s, home_slice, r, job->launches[s].result);
        if (!job->launches[s].joined)
            continue; /* a join that never comes must not be waited for */
        CUresult waited =
            mgpu_drv.cuStreamWaitEvent(req->stream, set->joins[req->slices[s].gpu], 0);
        if (r == CUDA_SUCCESS)
            r = waited;
    }
    return r;
}

CUresult mgpu_split_launch(const struct mgpu_split_request *req)
{
    const struct mgpu_gpu_kernels *k = req->kernel;
    const CUcontext *contexts = k != NULL ? k->contexts : req->work->contexts;
    int ngpus = k != NULL ? k->ngpus : req->work->ngpus;
    pthread_mutex_lock(&mgpu_slice_streams_lock);
    struct split_job *job = &the_job;
    job->req = req;
    bool queued = false;
    int prepared = 0;
    while (prepared < req->nslices && prepare_slice(req, prepared, &job->launches[prepared]))
        prepared++;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (prepared == req->nslices)
        job->streams = mgpu_slice_streams_for(req->stream, contexts[0], ngpus, contexts, &r);
    if (prepared < req->nslices || job->streams == NULL)
        goto out;

    bool wanted[MGPU_MAX_GPUS] = {false};
    int home_slice = -1;
    for (int s = 0; s < req->nslices; s++) {
        int gpu = req->slices[s].gpu;
        job->launches[s].joined = false;
        if (gpu == 0) {
            home_slice = s;
            continue;
        }
        wanted[gpu] = true;
        job->slice_of_gpu[gpu] = s;
    }
    /* Launch n of the set: what its fork flag, its join flags and the
     * slice watch count. */
    struct mgpu_slice_streams *set = job->streams;
    job->sequence = ++set->fork_sequence;
    for (int g = 1; g < set->ngpus; g++)
        if (wanted[g])
            set->join_sequence[g] = job->sequence;
    job->flags = set->flags != NULL;
    r = job->flags ? split_with_flags(job, wanted, home_slice)
                   : split_with_events(job, wanted, home_slice);
    r = combine_private_copies(req, r);
    mgpu_slice_errors_launched(contexts, ngpus, k != NULL && (k->notes & MGPU_NOTE_PRINTF),
                               req->slices, req->nslices);
    queued = true;
out:
    for (int s = 0; s < prepared; s++)
        release_slice(&job->launches[s]);
    pthread_mutex_unlock(&mgpu_slice_streams_lock);
    if (queued)
        mgpu_slice_watch_awaiting();
    return r;
}
