/* Owns the submission of split launches (see split_launch.h): the slices'
 * parameters, the fork and the join, and the handoff to the worker
 * threads. One split launch is submitted at a time, under the slice
 * streams' lock, so their events can be reused. */
#include "split_launch.h"

#include "gpu_workers.h"
#include "real_driver.h"
#include "slice_errors.h"
#include "slice_streams.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define INLINE_PARAMS 32
#define INLINE_BUFFER 512

/* What one slice hands the driver. */
struct slice_launch {
    unsigned grid_words[6]; /* __mgpu_grid: first block, then the whole grid */
    void *params_inline[INLINE_PARAMS];
    void **params;
    unsigned char buffer_inline[INLINE_BUFFER];
    void *buffer;
    size_t buffer_size;
    void *extra[5];
    CUlaunchConfig config;
    CUresult result;
};

struct split_job {
    const struct mgpu_split_request *req;
    struct mgpu_slice_streams *streams;
    struct slice_launch launches[MGPU_MAX_GPUS]; /* by slice */
    int slice_of_gpu[MGPU_MAX_GPUS];
};

static struct split_job the_job; /* under mgpu_slice_streams_lock */

bool mgpu_split_attributes_allow(const CUlaunchConfig *config)
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
            if (a->value.cooperative)
                return false;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            if (a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z > 1)
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

CUresult mgpu_split_launch_prepare(const struct mgpu_kernel_copies *k, CUstream stream)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&mgpu_slice_streams_lock);
    mgpu_slice_streams_for(stream, k->contexts[0], k->ngpus, k->contexts, &r);
    pthread_mutex_unlock(&mgpu_slice_streams_lock);
    return r;
}

/* The parameters of slice `s`: the copy launch's, with this slice's grid
 * words in place of the whole grid's. */
static bool prepare_slice(const struct mgpu_split_request *req, int s, struct slice_launch *l)
{
    const struct mgpu_grid_slice *slice = &req->slices[s];
    for (int d = 0; d < 3; d++) {
        l->grid_words[d] = slice->first[d];
        l->grid_words[3 + d] = req->grid[d];
    }
    l->params = NULL;
    l->buffer = NULL;
    if (req->params != NULL) {
        unsigned n = req->kernel->nparams;
        l->params = n + 1 <= INLINE_PARAMS ? l->params_inline : malloc((n + 1) * sizeof(void *));
        if (l->params == NULL)
            return false;
        memcpy(l->params, req->params, n * sizeof(void *));
        l->params[n] = l->grid_words;
        return true;
    }
    l->buffer_size = req->buffer_size;
    l->buffer = l->buffer_size <= INLINE_BUFFER ? l->buffer_inline : malloc(l->buffer_size);
    if (l->buffer == NULL)
        return false;
    memcpy(l->buffer, req->buffer, l->buffer_size);
    memcpy((char *)l->buffer + req->kernel->grid_offset, l->grid_words, sizeof l->grid_words);
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

static CUresult launch_slice(const struct mgpu_split_request *req, int s, struct slice_launch *l,
                             CUstream stream)
{
    const struct mgpu_grid_slice *slice = &req->slices[s];
    CUfunction fn = req->kernel->fns[slice->gpu];
    void **extra = l->params != NULL ? NULL : l->extra;
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

/* On GPU g's worker: wait for the fork, run the slice, record the join. */
static void run_slice_on_worker(int gpu, void *arg)
{
    struct split_job *job = arg;
    int s = job->slice_of_gpu[gpu];
    struct slice_launch *l = &job->launches[s];
    CUstream stream = job->streams->streams[gpu];
    l->result = mgpu_drv.cuStreamWaitEvent(stream, job->streams->fork, 0);
    if (l->result == CUDA_SUCCESS)
        l->result = launch_slice(job->req, s, l, stream);
    CUresult joined = mgpu_drv.cuEventRecord(job->streams->joins[gpu], stream);
    if (l->result == CUDA_SUCCESS)
        l->result = joined;
}

CUresult mgpu_split_launch(const struct mgpu_split_request *req)
{
    const struct mgpu_kernel_copies *k = req->kernel;
    pthread_mutex_lock(&mgpu_slice_streams_lock);
    struct split_job *job = &the_job;
    job->req = req;
    int prepared = 0;
    while (prepared < req->nslices && prepare_slice(req, prepared, &job->launches[prepared]))
        prepared++;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (prepared == req->nslices)
        job->streams =
            mgpu_slice_streams_for(req->stream, k->contexts[0], k->ngpus, k->contexts, &r);
    if (prepared == req->nslices && job->streams != NULL)
        r = mgpu_drv.cuEventRecord(job->streams->fork, req->stream);
    if (r != CUDA_SUCCESS)
        goto out;

    bool wanted[MGPU_MAX_GPUS] = {false};
    int home_slice = -1;
    for (int s = 0; s < req->nslices; s++) {
        int gpu = req->slices[s].gpu;
        if (gpu == 0) {
            home_slice = s;
            continue;
        }
        wanted[gpu] = true;
        job->slice_of_gpu[gpu] = s;
    }
    mgpu_gpu_workers_begin(wanted, run_slice_on_worker, job);
    if (home_slice >= 0)
        r = launch_slice(req, home_slice, &job->launches[home_slice], req->stream);
    mgpu_gpu_workers_wait();
    for (int s = 0; s < req->nslices; s++) {
        if (s == home_slice)
            continue;
        CUresult waited =
            mgpu_drv.cuStreamWaitEvent(req->stream, job->streams->joins[req->slices[s].gpu], 0);
        if (r == CUDA_SUCCESS)
            r = job->launches[s].result;
        if (r == CUDA_SUCCESS)
            r = waited;
    }
    mgpu_slice_errors_launched(k, req->slices, req->nslices);
out:
    for (int s = 0; s < prepared; s++)
        release_slice(&job->launches[s]);
    pthread_mutex_unlock(&mgpu_slice_streams_lock);
    return r;
}
