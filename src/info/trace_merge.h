/* Merging the per-rank trace files of an MPI run (issue 22) into one
 * Perfetto / chrome://tracing file: each rank's file (FILE.rankN.json,
 * src/report/trace.h) already carries its rank as the process of its events, so
 * the merge puts their events side by side, one process per rank. Run by
 * `mgpu-info --merge-traces OUT IN...`. Ranks of one node share its clock;
 * across nodes the timelines are each node's own. */
#ifndef MGPU_TRACE_MERGE_H
#define MGPU_TRACE_MERGE_H

#include <stddef.h>

/* Writes `out` from the `n` files in `inputs`. Returns 0, or -1 with a
 * one-line message naming the file: one that is not an mgpu trace, two of
 * one process (rank), or a file that cannot be read or written. */
int mgpu_trace_merge(const char *out, const char *const *inputs, int n, char *err, size_t errlen);

#endif
