/* What the MGPU_SPLIT=auto and MGPU_MIRROR=auto policies share: launch
 * shapes (kernel, grid, block) as keys of fixed open-addressing tables,
 * and per shape the timings of a launch two ways (whole or split; without
 * or with mirrors), the best of each, with at most one timing in flight,
 * measured with a pair of events on the launch's stream. Not thread-safe
 * unless said: the policy holds its lock. */
#ifndef MGPU_SHAPE_TIMINGS_H
#define MGPU_SHAPE_TIMINGS_H

#include "base/try_budget.h"

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct mgpu_shape_key {
    const void *kernel; /* NULL: free slot */
    unsigned grid[3], block[3];
};

/* The record of the shape in `records` (`count` of them, a power of two,
 * `stride` bytes apart, each starting with its key), claimed for it if it
 * had none (*fresh then true, the key set, the rest as it was: zero);
 * NULL when the table is full. */
void *mgpu_shape_record(void *records, size_t count, size_t stride, const void *kernel,
                        const unsigned grid[3], const unsigned block[3], bool *fresh);

struct mgpu_shape_timings {
    double best_us[2]; /* per way: INFINITY until measured */
    int samples[2];
    double sum_us[2]; /* of the samples measured here (not seeded) */
    int summed[2];
    bool warmed; /* launched once, untimed */
    bool in_flight;
    bool in_flight_way;
    enum mgpu_try_kind try_kind; /* what a timing of way 1 is, for the budget */
    CUevent start, stop;
};

/* A fresh record's timings: nothing measured; a timing of way 1 is a try
 * of `kind` (base/try_budget.h). */
void mgpu_shape_timings_reset(struct mgpu_shape_timings *t, enum mgpu_try_kind kind);
/* Takes in the timing in flight if it is done; a sample of way 1 that took
 * longer than way 0 at its best is charged to the budget for trying. */
void mgpu_shape_timings_collect(struct mgpu_shape_timings *t);
/* One launch of the shape went `way`: its time, the best of that way
 * (of way 0 while way 1 is untimed), counted as the program's for the
 * budget for trying; nothing while neither is measured. */
void mgpu_shape_timings_ran(const struct mgpu_shape_timings *t, bool way);
/* What the measured launches of way 1 (a split, a mirrored split) took
 * beyond as many of way 0 at its best: the cost of trying the other way,
 * 0 while way 0 is not measured. */
double mgpu_shape_timings_tries_over_us(const struct mgpu_shape_timings *t);
/* The same summed over a policy's table (as mgpu_shape_record's: `count`
 * records `stride` bytes apart, each starting with its key, its timings
 * `timings_at` bytes in), each timing in flight taken in first if done;
 * the tries of way 1 into *tries. Under the policy's lock. */
double mgpu_shape_table_tries_over_us(void *records, size_t count, size_t stride,
                                      size_t timings_at, unsigned long *tries);
/* A timing of `way` in flight from now; false (nothing in flight) when its
 * events cannot be made. */
bool mgpu_shape_timings_arm(struct mgpu_shape_timings *t, bool way);
/* Without the lock (`lock` is the policy's): the events around the launch
 * in `stream`. begin returns false when the timing is given up (its start
 * could not be recorded); end gives it up when the launch failed. */
bool mgpu_shape_timings_begin(struct mgpu_shape_timings *t, pthread_mutex_t *lock, CUstream stream);
void mgpu_shape_timings_end(struct mgpu_shape_timings *t, pthread_mutex_t *lock, CUstream stream,
                            CUresult launched);
/* Under `lock` (the policy's), with a timing in flight: waits for it with
 * the lock released, until it is in or a second passed (a stream held up
 * by the host, say, waiting for a value this thread writes later), then
 * takes it in. A policy waits for its timing rather than guess: the host
 * is often far ahead of the GPUs, and the calls it queues meanwhile would
 * all go the guessed way. */
void mgpu_shape_timings_await(struct mgpu_shape_timings *t, pthread_mutex_t *lock);

#endif
