/* Owns the merge of per-rank trace files (see trace_merge.h). It relies on
 * the layout src/report/trace.c writes: a first line that opens the event list,
 * one event per line (each after the first led by a comma), the list
 * closed by a line that starts with "]". */
#include "src/info/trace_merge.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER "{\"displayTimeUnit\":\"ms\",\"traceEvents\":["
#define LINE_MAX_BYTES (1 << 16)

/* The process (rank) of a file: the pid of its first event. */
static int process_of(const char *line)
{
    const char *p = strstr(line, "\"pid\":");
    return p != NULL ? atoi(p + 6) : -1;
}

/* Copies the events of `path` to `out`; *first tells whether none was
 * written yet. Returns 0, or -1 with err. */
static int copy_events(const char *path, FILE *out, int *first, int *pid, char *err, size_t errlen)
{
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        snprintf(err, errlen, "cannot read %s (%s)", path, strerror(errno));
        return -1;
    }
    static char line[LINE_MAX_BYTES];
    int rc = 0, lines = 0;
    bool closed = false;
    *pid = -1;
    while (fgets(line, sizeof line, in) != NULL) {
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (lines++ == 0) {
            if (strcmp(line, HEADER) != 0) {
                snprintf(err, errlen, "%s is not an mgpu trace (written with --trace)", path);
                rc = -1;
                break;
            }
            continue;
        }
        if (line[0] == ']') {
            closed = true;
            break;
        }
        if (len > 0 && line[len - 1] == ',') /* the separator before the next event */
            line[--len] = '\0';
        const char *event = line[0] == ',' ? line + 1 : line;
        if (*event == '\0')
            continue;
        if (*pid < 0)
            *pid = process_of(event);
        fprintf(out, "%s%s", *first ? "\n" : ",\n", event);
        *first = 0;
    }
    if (rc == 0 && !closed) {
        snprintf(err, errlen, "%s ends before its events do (cut short?)", path);
        rc = -1;
    }
    fclose(in);
    return rc;
}

int mgpu_trace_merge(const char *out, const char *const *inputs, int n, char *err, size_t errlen)
{
    if (n < 1) {
        snprintf(err, errlen, "no trace files to merge; give OUT.json then the ranks' files");
        return -1;
    }
    FILE *f = fopen(out, "w");
    if (f == NULL) {
        snprintf(err, errlen, "cannot write %s (%s)", out, strerror(errno));
        return -1;
    }
    fprintf(f, HEADER);
    int first = 1, rc = 0;
    int *pids = calloc((size_t)n, sizeof *pids);
    for (int i = 0; i < n && rc == 0 && pids != NULL; i++) {
        rc = copy_events(inputs[i], f, &first, &pids[i], err, errlen);
        for (int j = 0; j < i && rc == 0; j++)
            if (pids[j] == pids[i]) {
                snprintf(err, errlen,
                         "%s and %s are both process %d: merge the files of different ranks",
                         inputs[j], inputs[i], pids[i]);
                rc = -1;
            }
    }
    if (pids == NULL) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    free(pids);
    fprintf(f, "\n],\"otherData\":{\"merged_files\":%d}}\n", n);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "writing %s failed; check the disk has room", out);
        rc = -1;
    }
    if (rc != 0)
        remove(out);
    return rc;
}
