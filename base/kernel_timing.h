/* GPU time of each launch, measured with a pair of events around it on the
 * launch's own stream, for the report and the trace. */
#ifndef MGPU_KERNEL_TIMING_H
#define MGPU_KERNEL_TIMING_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

struct mgpu_launch_timer {
    bool active;
    int kernel;        /* -1 for mgpu's own work */
    const char *label; /* mgpu's own work: a static name; NULL for a kernel */
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
/* Whether a trace is being kept: mgpu's own GPU work is timed only then. */
bool mgpu_timing_traced(void);
/* The same for mgpu's own GPU work on GPU `gpu`'s track (a collective, a
 * refresh, a combine), named `label` (a static string), in `stream` (its
 * context current). */
void mgpu_timing_begin_own(struct mgpu_launch_timer *t, const char *label, CUstream stream,
                           int gpu);
/* mgpu's own work timed on the host (a buffer's move, which waits for the
 * GPUs): a span named `label` (a static string) on GPU `gpu`'s track from
 * start_ns to end_ns of the monotonic clock; kept only with a trace. */
void mgpu_timing_host_span(const char *label, int gpu, long long start_ns, long long end_ns);
/* Records the end event when the launch succeeded, else gives the events back. */
void mgpu_timing_end(struct mgpu_launch_timer *t, CUstream stream, CUresult launch_result);

/* Waits for every timed launch and adds its time to the kernel's record. */
void mgpu_timing_flush_all(void);

/* Before a context may be destroyed: collects everything in flight and
 * gives every pooled event back, while all contexts are still alive. */
void mgpu_timing_release_events(void);

/* One timed launch on the timeline, in microseconds of the host's monotonic
 * clock. */
struct mgpu_trace_span {
    int kernel;        /* -1 for mgpu's own work */
    const char *label; /* its name, or NULL */
    int context;
    int lane; /* the run's GPU of a slice, or -1 */
    double start_us;
    double duration_us;
};
/* Kept only when a trace is asked for; read after mgpu_timing_flush_all(). */
const struct mgpu_trace_span *mgpu_timing_spans(size_t *count, size_t *dropped);

#endif
