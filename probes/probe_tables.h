/* What the probes leave at exit: the built-in tools' tables and every
 * other map, on a stream in the report's style, and the JSON Lines file of
 * MGPU_PROBE_OUT. Plain data in (struct mgpu_probe_results); no driver. */
#ifndef MGPU_PROBE_TABLES_H
#define MGPU_PROBE_TABLES_H

#include "base/config.h"
#include "ptx/ptx_probes.h"

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

/* What the tables and the JSON Lines writer read, as the probes' runtime
 * (probe_runtime.c) gathers it at exit. */
struct mgpu_probe_kernel {
    char *name;   /* mangled */
    char *pretty; /* demangled */
    uint64_t probes; /* bit i: the set's probe i is called in it (the first 64) */
    unsigned sample_blocks; /* its block-sampled probes run in one block in this; 1: none */
    /* the fewest and most threads of its launches' blocks; 0, 0: none launched */
    unsigned block_threads_min, block_threads_max;
};

struct mgpu_probe_results {
    const struct ptx_probe_set *set;
    int ngpus;
    const int *gpu_devices;           /* the device each GPU stands on */
    uint64_t *maps[MGPU_MAX_GPUS];    /* each GPU's maps back to back; NULL: never loaded */
    const uint64_t *map_offset;       /* per map, in 64-bit words */
    const struct mgpu_probe_kernel *kernels;
    unsigned nkernels;
    const uint64_t *launch_host_ns;   /* per sequence number */
    const int32_t *launch_kernel;     /* per sequence number; -1 for a kernel not probed */
    uint64_t launches;                /* sequence numbers given */
    uint64_t launches_kept;           /* of them, with host time and kernel */
    uint64_t run_start_ns;            /* mgpu_run_ns()'s zero on the host clock */
    const char (*unprobed)[200]; /* one line per module that runs unprobed */
    size_t nunprobed;
    int64_t clock_error_ns[MGPU_MAX_GPUS];
    double cycles_per_ns[MGPU_MAX_GPUS];
    uint64_t timer_step_ns[MGPU_MAX_GPUS];
};

/* Map `name` of GPU `gpu`: its words and their number (an array's
 * elements; a ring's header and records), or NULL. */
const uint64_t *mgpu_probe_results_map(const struct mgpu_probe_results *r, const char *name,
                                       int gpu, uint64_t *words);


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
