/* Owns the split-or-not decisions of MGPU_SPLIT=auto (see split_policy.h):
 * a table of launch shapes, each with its best measured whole and split
 * times and at most one timing in flight. */
#include "split_policy.h"

#include "log.h"
#include "monotonic_clock.h"
#include "real_driver.h"
#include "runtime.h"
#include "shape_timings.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#define TABLE_SIZE 4096 /* a power of two */
/* The first split launch of a shape may meet cold caches and page tables
 * on the other GPUs: the best of two decides. */
#define SPLIT_SAMPLES 2
#define PROBE_WAIT_MAX_MS 1000.0

struct shape {
    struct mgpu_shape_key key;
    struct mgpu_shape_timings t; /* the ways: [0] whole, [1] split */
    bool kept_whole;             /* the estimate said a split cannot pay: never tried */
};

static pthread_mutex_t policy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shape table[TABLE_SIZE];

/* Under policy_lock. NULL when the table is full. */
static struct shape *find_shape(const void *kernel, const unsigned grid[3], const unsigned block[3])
{
    bool fresh;
    struct shape *s =
        mgpu_shape_record(table, TABLE_SIZE, sizeof *table, kernel, grid, block, &fresh);
    if (s != NULL && fresh)
        mgpu_shape_timings_reset(&s->t);
    return s;
}

static bool prior_guess(const unsigned grid[3], const unsigned block[3])
{
    double threads = (double)grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2];
    return threads >= MGPU_SPLIT_PRIOR_THREADS;
}

/* Under policy_lock: the way is known once the whole launch is too short
 * to split, or both ways have their samples. */
static bool decided(const struct shape *s)
{
    return s->kept_whole || s->t.best_us[0] < MGPU_SPLIT_MIN_MICROSECONDS ||
           (s->t.samples[0] >= 1 && s->t.samples[1] >= SPLIT_SAMPLES);
}

/* Without policy_lock: until the timing recorded with `stop` is in, or
 * PROBE_WAIT_MAX_MS passed (a stream held up by the host, say, waiting for
 * a value this thread writes later). */
static void wait_for_timing(CUevent stop)
{
    struct timespec pause = {0, 20000};
    long long deadline = mgpu_monotonic_ns() + (long long)(PROBE_WAIT_MAX_MS * 1e6);
    while (mgpu_drv.cuEventQuery(stop) == CUDA_ERROR_NOT_READY) {
        if (mgpu_monotonic_ns() > deadline)
            return;
        nanosleep(&pause, NULL);
    }
}

/* Under policy_lock: whether a first split try of a shape whose whole
 * launch took whole_us may pay, as the estimate says (said with -v for the
 * first shapes it keeps whole). */
static bool split_may_pay(const struct shape *s, double whole_us,
                          const struct mgpu_split_estimate *estimate)
{
    static int told;
    double split_us = estimate != NULL ? mgpu_split_estimate_us(estimate, whole_us) : -1.0;
    if (split_us < 0.0 || split_us < whole_us)
        return true;
    if (told++ < 16)
        mgpu_info("split: a grid of %u x %u x %u blocks of %u x %u x %u stays whole: split, its "
                  "slices would read their data from other GPUs for about %.1f us against %.1f us "
                  "whole",
                  s->key.grid[0], s->key.grid[1], s->key.grid[2], s->key.block[0],
                  s->key.block[1], s->key.block[2], split_us, whole_us);
    return false;
}

/* Under policy_lock, for a shape launched before: the way this launch
 * goes, and whether it is to be timed. */
static bool decide(struct shape *s, bool prior, const struct mgpu_split_estimate *estimate,
                   struct mgpu_split_probe *probe)
{
    double whole = s->t.best_us[0], sliced = s->t.best_us[1];
    if (whole < MGPU_SPLIT_MIN_MICROSECONDS)
        return false;
    if (decided(s))
        return sliced < whole;
    /* The timing waited for is not back yet: the guess, untimed. */
    if (s->t.in_flight)
        return prior;
    bool split = isfinite(whole) ? true : isfinite(sliced) ? false : prior;
    /* A split never timed yet is tried only where the estimate lets it. */
    if (split && isfinite(whole) && !isfinite(sliced) && !split_may_pay(s, whole, estimate)) {
        s->kept_whole = true;
        return false;
    }
    if (!mgpu_shape_timings_arm(&s->t, split))
        return prior;
    probe->shape = s;
    return split;
}

bool mgpu_split_policy_choose(const void *kernel, const unsigned grid[3], const unsigned block[3],
                              const struct mgpu_split_estimate *estimate,
                              struct mgpu_split_probe *probe)
{
    probe->shape = NULL;
    probe->split = true;
    if (mgpu_cfg.split == MGPU_SPLIT_ALWAYS)
        return true;
    pthread_mutex_lock(&policy_lock);
    struct shape *s = find_shape(kernel, grid, block);
    bool prior = prior_guess(grid, block), split = prior;
    /* The first launch of a shape pays one-off costs (the driver loads a
     * module's function at its first launch, caches and page tables are
     * cold) that can make a kernel of microseconds time as milliseconds:
     * it follows the prior untimed. */
    if (s != NULL && !s->t.warmed) {
        s->t.warmed = true;
        s = NULL;
    }
    if (s != NULL) {
        mgpu_shape_timings_collect(&s->t);
        /* A timing is still out: wait for it rather than guess. The host
         * is often far ahead of the GPUs (a loop queues all its launches
         * before the first one ends), so the launches queued meanwhile
         * would all go the guessed way: a kernel that splits badly (a
         * grid-stride loop touches every GPU's memory from every block)
         * would run slower than on one GPU throughout, and one that splits
         * well would stay whole. A few waits per shape, each until the
         * work already queued ends. */
        if (s->t.in_flight && !decided(s)) {
            CUevent stop = s->t.stop;
            pthread_mutex_unlock(&policy_lock);
            wait_for_timing(stop);
            pthread_mutex_lock(&policy_lock);
            mgpu_shape_timings_collect(&s->t);
        }
        split = decide(s, prior, estimate, probe);
    }
    pthread_mutex_unlock(&policy_lock);
    probe->split = split;
    return split;
}

void mgpu_split_probe_begin(struct mgpu_split_probe *probe, CUstream stream)
{
    struct shape *s = probe->shape;
    if (s != NULL && !mgpu_shape_timings_begin(&s->t, &policy_lock, stream))
        probe->shape = NULL;
}

void mgpu_split_probe_end(struct mgpu_split_probe *probe, CUstream stream, CUresult launched)
{
    struct shape *s = probe->shape;
    if (s != NULL)
        mgpu_shape_timings_end(&s->t, &policy_lock, stream, launched);
}
