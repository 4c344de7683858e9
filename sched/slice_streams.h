/* The streams and events a split launch forks onto and joins from: for
 * each stream of the program's home context, one internal stream on every
 * other GPU (non-blocking, at the program stream's priority), a fork event
 * in the home context and a join event on each GPU, made the first time
 * the program's stream is split and kept for later launches on it. */
#ifndef MGPU_SLICE_STREAMS_H
#define MGPU_SLICE_STREAMS_H

#include "config.h"

#include <cuda.h>
#include <pthread.h>

struct mgpu_slice_streams {
    CUstream program;                /* the key: the program's stream */
    CUcontext home;                  /* its context */
    int ngpus;                       /* set up for GPUs 1 .. ngpus-1 */
    CUevent fork;                    /* in the home context */
    CUstream streams[MGPU_MAX_GPUS]; /* [g] in GPU g's context; [0] unused */
    CUevent joins[MGPU_MAX_GPUS];    /* [g] in GPU g's context; [0] unused */
};

/* The set for `program` (a stream of `home`, or a special handle: NULL,
 * CU_STREAM_LEGACY, CU_STREAM_PER_THREAD), made on first use with GPU g's
 * objects in contexts[g]. The caller holds mgpu_slice_streams_lock around
 * every use, which is what makes reusing the events safe. Returns NULL with err set
 * when an object cannot be made. */
extern pthread_mutex_t mgpu_slice_streams_lock;

struct mgpu_slice_streams *mgpu_slice_streams_for(CUstream program, CUcontext home, int ngpus,
                                                  const CUcontext *contexts, CUresult *err);

/* The state of GPU g's slice streams, without waiting: CUDA_SUCCESS when
 * all are idle, CUDA_ERROR_NOT_READY while one is busy, or the error of
 * GPU g's context. Takes the caller's lock itself. */
CUresult mgpu_slice_streams_query(int gpu);

#endif
