/* Where the 2 MiB granules of a buffer live: the placement policies and the
 * arithmetic over them, with no driver in sight, so that the pool, the copy
 * router and the launch splitter agree on one layout and tests can check it
 * without a GPU. */
#ifndef MGPU_PLACEMENT_H
#define MGPU_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#define MGPU_GRANULE_SIZE ((size_t)2 << 20)

enum mgpu_placement {
    MGPU_PLACE_DISTRIBUTED, /* contiguous parts, one per GPU in split order (default) */
    MGPU_PLACE_HOME,        /* everything on the first GPU */
    MGPU_PLACE_INTERLEAVE,  /* granules round-robin */
};

/* "distributed", "home" or "interleave". Returns 0, or -1 for another word. */
int mgpu_placement_parse(const char *text, enum mgpu_placement *out);
const char *mgpu_placement_name(enum mgpu_placement p);

/* The GPU (0 .. ngpus-1, in split order) that owns granule `i` of a buffer
 * of `n` granules. `weights` (ngpus values, NULL for equal ones) are the
 * GPUs' shares of a split grid: under `distributed`, a granule goes to the
 * GPU whose share of the buffer holds the granule's middle, so that slice g
 * of a kernel split by the same weights finds its part on GPU g. */
int mgpu_placement_owner(enum mgpu_placement p, size_t i, size_t n, int ngpus,
                         const double *weights);

/* A stretch of a buffer on one GPU. */
struct mgpu_owner_run {
    size_t offset, bytes; /* within the buffer */
    int gpu;
};

/* Splits bytes [offset, offset + bytes) of a buffer whose granule g is
 * owned by owners[g] into runs of one owner each, in address order. Writes
 * at most `max` runs and returns how many there are (more than `max` when
 * they did not fit). */
size_t mgpu_placement_runs(const int *owners, size_t ngranules, size_t offset, size_t bytes,
                           struct mgpu_owner_run *runs, size_t max);

/* The bytes of [offset, offset + bytes) of a buffer of `ngranules`
 * granules laid out by policy p over ngpus GPUs (equal weights) that each
 * holds, into held[0 .. ngpus-1] (zeroed first): what a buffer placed (or
 * spread again) by the pool would leave each GPU. */
void mgpu_placement_range_bytes(enum mgpu_placement p, size_t ngranules, int ngpus, size_t offset,
                                size_t bytes, size_t *held);

/* Bytes per GPU of a buffer (for the report and cuMemGetInfo). */
void mgpu_placement_bytes_per_gpu(const int *owners, size_t ngranules, int ngpus,
                                  size_t *bytes_per_gpu);

#endif
