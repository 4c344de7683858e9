/* The streams, events and sequence flags a split launch forks onto and
 * joins from: for each stream of the program's home context, one internal
 * stream on every other GPU (non-blocking, at the program stream's
 * priority), a fork event in the home context and a join event on each
 * GPU, and a row of flags in pinned host memory that every GPU maps: the
 * fork flag, then one join flag per GPU. All are made the first time the
 * program's stream is split and kept for later launches on it.
 *
 * A flag only grows: launch n of a set writes n (modulo 2^32, which the
 * driver's cyclic "greater or equal" wait allows for), so no flag is ever
 * reset. A GPU that faults never writes its join flag; the slice watch
 * (mgpu_slice_streams_watch) writes it instead, so that the program's
 * stream does not wait for ever. */
#ifndef MGPU_SLICE_STREAMS_H
#define MGPU_SLICE_STREAMS_H

#include "base/config.h"

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct mgpu_slice_streams {
    CUstream program;                /* the key: the program's stream */
    CUcontext home;                  /* its context */
    int ngpus;                       /* set up for GPUs 1 .. ngpus-1 */
    CUevent fork;                    /* in the home context */
    CUstream streams[MGPU_MAX_GPUS]; /* [g] in GPU g's context; [0] unused */
    CUevent joins[MGPU_MAX_GPUS];    /* [g] in GPU g's context; [0] unused */
    /* NULL when the flags could not be had: the set forks and joins with
     * its events. [0] is the fork flag, [g] GPU g's join flag. */
    volatile uint32_t *flags;
    CUdeviceptr flags_device; /* the same row, as the GPUs address it */
    /* [g]: GPU g stands on the home device (--gpus 0,0) and its slice
     * stream is in the home context. Such a stream shares the device's
     * hardware queues with the program's stream, where a flag wait queued
     * ahead of the write it waits for would never end, and the driver
     * takes one context's launches one at a time whichever thread makes
     * them: its slices are queued by the launching thread, in order. */
    bool on_home_context[MGPU_MAX_GPUS];
    /* Launches counted the same way with flags or events: the last
     * launch of the set, the last with a slice on GPU g, and the last
     * the slice watch saw done on GPU g (with flags, the flag says). */
    uint32_t fork_sequence;
    uint32_t join_sequence[MGPU_MAX_GPUS];
    uint32_t seen_done[MGPU_MAX_GPUS];
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

/* For the slice watch: asks every slice stream that has slices not yet
 * seen done. A failed one's error goes to `failed` (the watch gives
 * mgpu_slice_errors_found), and
 * with flags, the flags that a faulted context will never write (its
 * join flag; the fork flag of a failed home context) are written for it.
 * Says whether slices are still outstanding. Takes the lock itself. */
bool mgpu_slice_streams_watch(void (*failed)(int gpu, CUresult error));

#endif
