/* What the probes leave at exit: the built-in tools' tables and every
 * other map, on a stream in the report's style, and the JSON Lines file of
 * MGPU_PROBE_OUT. Plain data in (struct mgpu_probe_results); no driver. */
#ifndef MGPU_PROBE_TABLES_H
#define MGPU_PROBE_TABLES_H

#include "probes/probe_runtime.h"

#include <stdio.h>

void mgpu_probe_tables_print(const struct mgpu_probe_results *r, FILE *out);

/* Returns 0, or -1 after saying why on stderr. */
int mgpu_probe_jsonl_write(const struct mgpu_probe_results *r, const char *path);

/* The kernel of launch `sequence`, or -1 when the host table does not
 * have it (a kernel not probed, or a launch past the table). */
int32_t mgpu_probe_launch_kernel(const struct mgpu_probe_results *r, uint64_t sequence);
/* The records a ring map holds: the pushes, at most its capacity. */
uint64_t mgpu_probe_ring_records(const struct ptx_probe_map *map, const uint64_t *ring);

/* launch-latency's and block-time's maps of slices: per launch slot (the
 * launch's number mod the slots) and multiprocessor, a 64-bit word of the
 * launch's number (high 24 bits) and a time of mgpu_run_ns() (low 40
 * bits; inverted for the first start, so that atomicMax keeps it). */
#define MGPU_PROBE_SLICE_SMS 256
#define MGPU_PROBE_SLICE_TIME_BITS 40
struct mgpu_probe_slice {
    uint64_t sequence;
    uint64_t first_ns, last_ns; /* on the host's clock */
};
/* GPU g's slices, one per launch slot that holds one whole; returns how
 * many (at most the maps' slots). */
size_t mgpu_probe_slices(const struct mgpu_probe_results *r, const char *first_map,
                         const char *last_map, int g, struct mgpu_probe_slice *out);
/* The most slices mgpu_probe_slices can return for these maps. */
size_t mgpu_probe_slice_capacity(const struct mgpu_probe_results *r, const char *first_map);

/* The buckets of block-time's duration histograms: exact below 8, then 8
 * per power of two (a bucket's width is an eighth of its start). */
#define MGPU_PROBE_HIST_BUCKETS 496
#define MGPU_PROBE_HIST_COPIES 8
#define MGPU_PROBE_TOOL_KERNELS 64
unsigned long long mgpu_probe_hist_low(unsigned bucket);

/* memory-locality's map ml_counts: [((copy * KERNELS + kernel) * SLOTS +
 * slot) * CLASSES + class], COPIES copies summed (by multiprocessor), slot
 * 0 for an access whose parameter mgpu's analysis could not name and 1 + i
 * for parameter i; class 0 outside the pool, 1 a replica, 2 + g the pages
 * of GPU g. */
#define MGPU_PROBE_LOCALITY_COPIES 8
#define MGPU_PROBE_LOCALITY_SLOTS 17
#define MGPU_PROBE_LOCALITY_CLASSES (2 + 64)
#define MGPU_PROBE_LOCALITY_OUTSIDE 0
#define MGPU_PROBE_LOCALITY_REPLICA 1
unsigned mgpu_probe_hist_bucket(unsigned long long value);

#endif
