/* Owns the events that time launches: a pool of reusable events per context,
 * the launches still in flight, and the timeline kept for the trace; and
 * giving them all back before a context goes away (the hooks of
 * src/hooks/context_hooks.c ask). */
#include "base/kernel_timing.h"

#include "base/kernel_stats.h"
#include "base/log.h"
#include "base/monotonic_clock.h"
#include "base/callback_thread.h"
#include "base/real_driver.h"
#include "base/config.h"

#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONTEXTS 64
#define MAX_SPANS (1u << 22)

struct context_events {
    CUcontext ctx;
    CUevent *free_events;
    size_t free_len, free_cap;
    CUevent base;        /* completed event that anchors the timeline */
    double base_host_us; /* host clock when `base` completed */
};

static pthread_mutex_t timing_lock = PTHREAD_MUTEX_INITIALIZER;
static struct context_events contexts[MAX_CONTEXTS];
static int context_count;
static struct mgpu_launch_timer *pending;
static size_t pending_head, pending_len, pending_cap; /* ring buffer */
static struct mgpu_trace_span *spans;
static size_t span_len, span_cap, spans_dropped;

static int context_index(CUcontext ctx)
{
    for (int i = 0; i < context_count; i++)
        if (contexts[i].ctx == ctx)
            return i;
    if (context_count == MAX_CONTEXTS)
        return -1;
    memset(&contexts[context_count], 0, sizeof contexts[0]);
    contexts[context_count].ctx = ctx;
    return context_count++;
}

static CUevent take_event(struct context_events *c)
{
    if (c->free_len > 0)
        return c->free_events[--c->free_len];
    CUevent ev = NULL;
    if (mgpu_drv.cuEventCreate(&ev, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return NULL;
    return ev;
}

static void give_event(struct context_events *c, CUevent ev)
{
    if (ev == NULL)
        return;
    if (c->free_len == c->free_cap) {
        size_t cap = c->free_cap ? c->free_cap * 2 : 32;
        CUevent *p = realloc(c->free_events, cap * sizeof *p);
        if (p == NULL) {
            mgpu_drv.cuEventDestroy(ev);
            return;
        }
        c->free_events = p;
        c->free_cap = cap;
    }
    c->free_events[c->free_len++] = ev;
}

/* The first timed launch of a context anchors its timeline: one event,
 * waited for once, ties GPU time to the host clock. */
static int ensure_base(struct context_events *c, CUstream stream)
{
    if (c->base != NULL)
        return 0;
    if (!mgpu_cfg.trace_path[0])
        return 0;
    CUevent ev = take_event(c);
    if (ev == NULL || mgpu_drv.cuEventRecord(ev, stream) != CUDA_SUCCESS ||
        mgpu_drv.cuEventSynchronize(ev) != CUDA_SUCCESS) {
        give_event(c, ev);
        return -1;
    }
    c->base = ev;
    c->base_host_us = (double)mgpu_monotonic_ns() / 1e3;
    return 0;
}

void mgpu_timing_begin(struct mgpu_launch_timer *t, int kernel, CUstream stream)
{
    memset(t, 0, sizeof *t);
    t->lane = -1;
    CUcontext current = NULL, owner = NULL;
    CUresult r = mgpu_drv.cuCtxGetCurrent(&current);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuStreamGetCtx(stream, &owner);
    if (r != CUDA_SUCCESS || current == NULL || owner != current) {
        mgpu_debug("launch not timed: %s",
                   r != CUDA_SUCCESS ? mgpu_cu_error_name(r) : "its stream is in another context");
        return;
    }
    pthread_mutex_lock(&timing_lock);
    int ci = context_index(current);
    if (ci >= 0 && ensure_base(&contexts[ci], stream) == 0) {
        struct context_events *c = &contexts[ci];
        t->start = take_event(c);
        t->end = take_event(c);
        if (t->start && t->end && mgpu_drv.cuEventRecord(t->start, stream) == CUDA_SUCCESS) {
            t->active = true;
            t->kernel = kernel;
            t->context = ci;
        } else {
            give_event(c, t->start);
            give_event(c, t->end);
        }
    }
    pthread_mutex_unlock(&timing_lock);
}

void mgpu_timing_begin_slice(struct mgpu_launch_timer *t, int kernel, CUstream stream, int gpu)
{
    mgpu_timing_begin(t, kernel, stream);
    t->lane = gpu;
}

bool mgpu_timing_traced(void)
{
    return mgpu_cfg.trace_path[0] != '\0';
}

void mgpu_timing_begin_own(struct mgpu_launch_timer *t, const char *label, CUstream stream,
                           int gpu)
{
    mgpu_timing_begin(t, -1, stream);
    t->lane = gpu;
    t->label = label;
}

/* Under timing_lock: room for one more span; false when the trace is full. */
static bool span_room(void)
{
    if (span_len == span_cap && span_cap < MAX_SPANS) {
        size_t cap = span_cap ? span_cap * 2 : 1024;
        struct mgpu_trace_span *p = realloc(spans, cap * sizeof *p);
        if (p) {
            spans = p;
            span_cap = cap;
        }
    }
    if (span_len < span_cap)
        return true;
    spans_dropped++;
    return false;
}

void mgpu_timing_host_span(const char *label, int gpu, long long start_ns, long long end_ns)
{
    if (!mgpu_timing_traced())
        return;
    pthread_mutex_lock(&timing_lock);
    if (span_room())
        spans[span_len++] = (struct mgpu_trace_span){
            .kernel = -1,
            .label = label,
            .context = 0,
            .lane = gpu,
            .start_us = (double)start_ns / 1e3,
            .duration_us = (double)(end_ns - start_ns) / 1e3,
        };
    pthread_mutex_unlock(&timing_lock);
}

static void record_completed(const struct mgpu_launch_timer *t)
{
    struct context_events *c = &contexts[t->context];
    float ms = 0;
    if (mgpu_drv.cuEventElapsedTime(&ms, t->start, t->end) == CUDA_SUCCESS) {
        if (t->lane < 0 && t->kernel >= 0)
            mgpu_kernel_stats_add_time(t->kernel, ms);
        float since_base = 0;
        if (mgpu_cfg.trace_path[0] && c->base &&
            mgpu_drv.cuEventElapsedTime(&since_base, c->base, t->start) == CUDA_SUCCESS) {
            if (span_room())
                spans[span_len++] = (struct mgpu_trace_span){
                    .kernel = t->kernel,
                    .label = t->label,
                    .context = t->context,
                    .lane = t->lane,
                    .start_us = c->base_host_us + since_base * 1e3,
                    .duration_us = ms * 1e3,
                };
        }
    }
    give_event(c, t->start);
    give_event(c, t->end);
}

/* Collects launches from the oldest on; with `wait`, waits for each. */
static void drain(bool wait)
{
    while (pending_len > 0) {
        struct mgpu_launch_timer *t = &pending[pending_head];
        CUresult r = wait ? mgpu_drv.cuEventSynchronize(t->end) : mgpu_drv.cuEventQuery(t->end);
        if (r == CUDA_ERROR_NOT_READY)
            break;
        if (r == CUDA_SUCCESS)
            record_completed(t);
        else
            mgpu_debug("a launch's GPU time is lost: %s", mgpu_cu_error_name(r));
        pending_head = (pending_head + 1) % pending_cap;
        pending_len--;
    }
}

static void push_pending(const struct mgpu_launch_timer *t)
{
    if (pending_len == pending_cap) {
        size_t cap = pending_cap ? pending_cap * 2 : 256;
        struct mgpu_launch_timer *p = malloc(cap * sizeof *p);
        if (p == NULL)
            return;
        for (size_t i = 0; i < pending_len; i++)
            p[i] = pending[(pending_head + i) % pending_cap];
        free(pending);
        pending = p;
        pending_cap = cap;
        pending_head = 0;
    }
    pending[(pending_head + pending_len) % pending_cap] = *t;
    pending_len++;
}

void mgpu_timing_end(struct mgpu_launch_timer *t, CUstream stream, CUresult launch_result)
{
    if (!t->active)
        return;
    pthread_mutex_lock(&timing_lock);
    if (launch_result == CUDA_SUCCESS && mgpu_drv.cuEventRecord(t->end, stream) == CUDA_SUCCESS) {
        push_pending(t);
        drain(false);
    } else {
        give_event(&contexts[t->context], t->start);
        give_event(&contexts[t->context], t->end);
    }
    pthread_mutex_unlock(&timing_lock);
}

void mgpu_timing_flush_all(void)
{
    pthread_mutex_lock(&timing_lock);
    drain(true);
    pthread_mutex_unlock(&timing_lock);
}

void mgpu_timing_release_events(void)
{
    /* On the driver's callback thread (the CUDA runtime's exit handlers
     * release contexts there when the program exits in a host function),
     * the wait would wait for the callback itself: the events go with the
     * context. */
    if (!mgpu_stats_enabled || mgpu_on_callback_thread())
        return;
    pthread_mutex_lock(&timing_lock);
    drain(true);
    for (int i = 0; i < context_count; i++) {
        struct context_events *c = &contexts[i];
        for (size_t k = 0; k < c->free_len; k++)
            mgpu_drv.cuEventDestroy(c->free_events[k]);
        if (c->base)
            mgpu_drv.cuEventDestroy(c->base);
        free(c->free_events);
        /* The timeline anchor goes too; a new one is taken at the next launch. */
        CUcontext ctx = c->ctx;
        memset(c, 0, sizeof *c);
        c->ctx = ctx;
    }
    pthread_mutex_unlock(&timing_lock);
}

const struct mgpu_trace_span *mgpu_timing_spans(size_t *count, size_t *dropped)
{
    *count = span_len;
    *dropped = spans_dropped;
    return spans;
}
