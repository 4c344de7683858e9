/* The timeline of a run (MGPU_TRACE=FILE, mgpu-run --trace FILE). */
#ifndef MGPU_TRACE_H
#define MGPU_TRACE_H

/* Writes the timed launches as Chrome trace JSON (chrome://tracing,
 * Perfetto); call after mgpu_timing_flush_all(). Returns 0 or -1. */
int mgpu_trace_write(const char *path);

#endif
