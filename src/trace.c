/* Owns the trace file: one complete event per timed launch, on a track per
 * context (the launches as the program made them), and, for split
 * launches, one per slice on a track per GPU of the run ("GPU 3 (device
 * 0)"), with mgpu's own work there too: mirrors' collectives, refreshes
 * and combines (category "mirror"), buffers' moves (category
 * "placement"); names demangled and escaped for JSON. */
#include "trace.h"

#include "kernel_stats.h"
#include "kernel_timing.h"
#include "log.h"
#include "demangle.h"
#include "gpu_contexts.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Tracks 0.. are contexts, GPU_TRACKS + g the run's GPU g. */
#define GPU_TRACKS 1000

static int track_of(const struct mgpu_trace_span *s)
{
    return s->lane < 0 ? s->context : GPU_TRACKS + s->lane;
}

/* A name for every track that has spans. */
static void write_track_names(FILE *f, const struct mgpu_trace_span *spans, size_t count)
{
    bool named[GPU_TRACKS + MGPU_MAX_GPUS] = {false};
    const struct mgpu_gpu_entries *entries = mgpu_run_gpus();
    for (size_t i = 0; i < count; i++) {
        int track = track_of(&spans[i]);
        if (track < 0 || track >= GPU_TRACKS + MGPU_MAX_GPUS || named[track])
            continue;
        named[track] = true;
        char name[64];
        if (spans[i].lane < 0)
            snprintf(name, sizeof name, "context %d: launches", spans[i].context);
        else if (entries != NULL && spans[i].lane < entries->count)
            mgpu_gpu_entries_label(entries, spans[i].lane, name, sizeof name);
        else
            snprintf(name, sizeof name, "GPU %d", spans[i].lane);
        fprintf(f,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{"
                "\"name\":",
                track);
        write_json_string(f, name);
        fprintf(f, "}}");
    }
}

int mgpu_trace_write(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        mgpu_error("cannot write the trace %s (%s); give a writable path to --trace", path,
                   strerror(errno));
        return -1;
    }
    size_t count, dropped;
    const struct mgpu_trace_span *spans = mgpu_timing_spans(&count, &dropped);
    size_t kernels = mgpu_kernel_stats_count();
    char **names = calloc(kernels ? kernels : 1, sizeof *names);

    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"mgpu\"}}");
    write_track_names(f, spans, count);
    for (size_t i = 0; i < count; i++) {
        const struct mgpu_trace_span *s = &spans[i];
        const char *name = s->label != NULL ? s->label : "?";
        if (s->label == NULL && names != NULL && s->kernel >= 0 && (size_t)s->kernel < kernels) {
            if (names[s->kernel] == NULL)
                names[s->kernel] = mgpu_demangle(mgpu_kernel_stats_get((size_t)s->kernel)->name);
            if (names[s->kernel] != NULL)
                name = names[s->kernel];
        }
        /* mgpu's own work: its label's first word ("mirror: ...") */
        char category[16] = "kernel";
        if (s->label != NULL)
            snprintf(category, sizeof category, "%.*s", (int)strcspn(s->label, ":"), s->label);
        else if (s->lane >= 0)
            snprintf(category, sizeof category, "slice");
        fprintf(f, ",\n{\"name\":");
        write_json_string(f, name);
        fprintf(f,
                ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                category, track_of(s), s->start_us, s->duration_us);
    }
    fprintf(f, "\n],\"otherData\":{\"dropped_spans\":%zu}}\n", dropped);
    int rc = fclose(f) == 0 ? 0 : -1;
    for (size_t i = 0; names != NULL && i < kernels; i++)
        free(names[i]);
    free(names);
    if (rc != 0)
        mgpu_error("writing the trace %s failed; check the disk has room", path);
    else
        mgpu_info("wrote a trace of %zu launches to %s", count, path);
    return rc;
}
