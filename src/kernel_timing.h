/* GPU time of each launch, measured with a pair of events around it on the
 * launch's own stream, for the report and the trace. */
#ifndef MGPU_KERNEL_TIMING_H
#define MGPU_KERNEL_TIMING_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

struct mgpu_launch_timer {
    bool active;
    int kernel;
    int context;
    int lane; /* the run's GPU of a slice; -1 for a launch as the program made it */
    CUevent start, end;
};

/* Records the start event when the stream's context is current; the stream
 * must not be capturing. `stream` is as the non-_ptsz driver functions take
 * it (CU_STREAM_PER_THREAD for the per-thread default stream). */
void mgpu_timing_begin(struct mgpu_launch_timer *t, int kernel, CUstream stream);
/* The same for one slice of a split launch, on GPU `gpu`'s slice stream
 * (its context current), for the trace only: the launch as a whole is
 * timed on the program's stream and counted there. */
void mgpu_timing_begin_slice(struct mgpu_launch_timer *t, int kernel, CUstream stream, int gpu);
/* Records the end event when the launch succeeded, else gives the events back. */
void mgpu_timing_end(struct mgpu_launch_timer *t, CUstream stream, CUresult launch_result);

/* Waits for every timed launch and adds its time to the kernel's record. */
void mgpu_timing_flush_all(void);

/* One timed launch on the timeline, in microseconds of the host's monotonic
 * clock. */
struct mgpu_trace_span {
    int kernel;
    int context;
    int lane; /* the run's GPU of a slice, or -1 */
    double start_us;
    double duration_us;
};
/* Kept only when a trace is asked for; read after mgpu_timing_flush_all(). */
const struct mgpu_trace_span *mgpu_timing_spans(size_t *count, size_t *dropped);

#endif
