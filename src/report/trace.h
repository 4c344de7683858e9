/* The timeline of a run (MGPU_TRACE=FILE, mgpu-run --trace FILE). */
#ifndef MGPU_TRACE_H
#define MGPU_TRACE_H

#include <stddef.h>

/* Writes the timed launches as Chrome trace JSON (chrome://tracing,
 * Perfetto); call after mgpu_timing_flush_all(). Under MPI (`rank` >= 0)
 * the file is PATH's name with ".rankN" before its extension, and the
 * process in it is rank N (its pid), so that `mgpu-info --merge-traces`
 * can put the ranks' files side by side. Returns 0 or -1. */
int mgpu_trace_write(const char *path, int rank);

/* PATH with ".rankN" before its last extension ("out.json" ->
 * "out.rank3.json"), or after it when it has none. Returns 0, or -1 when
 * it does not fit. */
int mgpu_trace_rank_path(const char *path, int rank, char *out, size_t outlen);

#endif
