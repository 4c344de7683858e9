/* Owns the trace file: one complete event per timed launch, on a track per
 * context (the launches as the program made them), and, for split
 * launches, one per slice on a track per GPU of the run ("GPU 3 (device
 * 0)"), with mgpu's own work there too: mirrors' collectives, refreshes
 * and combines (category "mirror"), buffers' moves (category
 * "placement"); names demangled and escaped for JSON. */
#include "src/report/trace.h"

#include "base/kernel_stats.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "base/demangle.h"
#include "partition/gpu_contexts.h"
#include "base/json_string.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Tracks 0.. are contexts, GPU_TRACKS + g the run's GPU g. */
#define GPU_TRACKS 1000

static int track_of(const struct mgpu_trace_span *s)
{
    return s->lane < 0 ? s->context : GPU_TRACKS + s->lane;
}

/* A name for every track that has spans. */
static void write_track_names(FILE *f, const struct mgpu_trace_span *spans, size_t count, int pid)
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
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{"
                "\"name\":",
                pid, track);
        mgpu_json_string(f, name);
        fprintf(f, "}}");
    }
}

int mgpu_trace_rank_path(const char *path, int rank, char *out, size_t outlen)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (dot == NULL || (slash != NULL && dot < slash) || dot == path ||
        (slash != NULL && dot == slash + 1))
        dot = path + strlen(path); /* no extension */
    int n = snprintf(out, outlen, "%.*s.rank%d%s", (int)(dot - path), path, rank, dot);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int mgpu_trace_write(const char *path, int rank)
{
    char ranked[4096];
    if (rank >= 0) {
        if (mgpu_trace_rank_path(path, rank, ranked, sizeof ranked) != 0) {
            mgpu_error("the trace path %s is too long for its rank's name; give a shorter one",
                       path);
            return -1;
        }
        path = ranked;
    }
    int pid = rank >= 0 ? rank : 0;
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
    char process[96] = "mgpu";
    if (rank >= 0) {
        char host[64] = "?";
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "?");
        host[sizeof host - 1] = '\0';
        snprintf(process, sizeof process, "mgpu rank %d on %s", rank, host);
    }
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":", pid);
    mgpu_json_string(f, process);
    fprintf(f, "}}");
    write_track_names(f, spans, count, pid);
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
        mgpu_json_string(f, name);
        fprintf(f,
                ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                category, pid, track_of(s), s->start_us, s->duration_us);
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
