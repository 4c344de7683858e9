/* Owns the mirror-or-not decisions of MGPU_MIRROR=auto (see
 * mirror_policy.h): a table of launch shapes, each with its best measured
 * times without and with mirrors and at most one timing in flight. */
#include "mirror/mirror_policy.h"

#include "base/config.h"
#include "base/shape_timings.h"
#include "base/try_budget.h"

#include <pthread.h>
#include <stddef.h>

#define TABLE_SIZE 4096 /* a power of two */
#define MIRRORED_SAMPLES 2

struct shape {
    struct mgpu_shape_key key;
    struct mgpu_shape_timings t; /* the ways: [0] without mirrors, [1] with */
    bool counted;                /* in the stats, once decided */
    bool seeded;                 /* its mirrored samples from the split policy's tries */
    bool privatised;             /* for the split policy: in the stats */
};

static pthread_mutex_t policy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shape table[TABLE_SIZE];
static struct mgpu_mirror_policy_stats stats;

static bool decided(const struct shape *s)
{
    return s->t.samples[0] >= 1 &&
           (s->t.best_us[0] < MGPU_MIRROR_MIN_MICROSECONDS || s->t.samples[1] >= MIRRORED_SAMPLES);
}

static bool faster_mirrored(const struct shape *s)
{
    return s->t.best_us[1] < s->t.best_us[0] * MGPU_MIRROR_GAIN;
}

/* Under policy_lock: takes in a finished timing. */
static void collect(struct shape *s)
{
    mgpu_shape_timings_collect(&s->t);
    if (decided(s) && !s->counted) {
        s->counted = true;
        stats.decided++;
        stats.mirrored += faster_mirrored(s);
    }
}

/* Under policy_lock, for a shape launched before: whether this launch
 * mirrors, and whether it is timed: without once, then with. */
static bool decide(struct shape *s, mgpu_mirror_copies_fn copies_us, void *arg,
                   struct mgpu_mirror_trial *trial)
{
    if (decided(s))
        return faster_mirrored(s);
    if (s->t.in_flight)
        return false;
    bool mirrored = s->t.samples[0] >= 1;
    /* A mirrored try: expected to lose what the last one lost, or its
     * copies' making; within the budget for trying only. */
    if (mirrored) {
        double expected = s->t.samples[1] > 0 ? s->t.best_us[1] - s->t.best_us[0]
                          : copies_us != NULL ? copies_us(arg)
                                              : 0.0;
        if (!mgpu_try_budget_allows(MGPU_TRY_MIRROR, expected))
            return false;
    }
    if (!mgpu_shape_timings_arm(&s->t, mirrored))
        return false;
    trial->shape = s;
    return mirrored;
}

bool mgpu_mirror_policy_choose(const void *kernel, const unsigned grid[3], const unsigned block[3],
                               bool privatise, bool by_iterations, double mirrored_us,
                               mgpu_mirror_copies_fn copies_us, void *arg,
                               struct mgpu_mirror_trial *trial)
{
    trial->shape = NULL;
    if (mgpu_cfg.mirror != MGPU_MIRROR_AUTO)
        return mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS;
    if (by_iterations && !privatise)
        return false;
    pthread_mutex_lock(&policy_lock);
    bool fresh, mirrored = false;
    struct shape *s =
        mgpu_shape_record(table, TABLE_SIZE, sizeof *table, kernel, grid, block, &fresh);
    if (s != NULL && fresh)
        mgpu_shape_timings_reset(&s->t, MGPU_TRY_MIRROR);
    if (s != NULL && mirrored_us > 0.0 && !s->seeded && s->t.samples[1] == 0) {
        s->seeded = true;
        s->t.warmed = true;
        s->t.samples[1] = MIRRORED_SAMPLES;
        s->t.best_us[1] = mirrored_us;
    }
    if (privatise) {
        if (s != NULL && !s->privatised) {
            s->privatised = true;
            stats.privatised++;
        }
        mirrored = true;
    } else if (s != NULL && !s->t.warmed) {
        s->t.warmed = true;
    } else if (s != NULL) {
        collect(s);
        mirrored = decide(s, copies_us, arg, trial);
    }
    pthread_mutex_unlock(&policy_lock);
    return mirrored;
}

void mgpu_mirror_trial_begin(struct mgpu_mirror_trial *trial, CUstream stream)
{
    struct shape *s = trial->shape;
    if (s != NULL && !mgpu_shape_timings_begin(&s->t, &policy_lock, stream))
        trial->shape = NULL;
}

void mgpu_mirror_trial_end(struct mgpu_mirror_trial *trial, CUstream stream, CUresult launched)
{
    struct shape *s = trial->shape;
    if (s != NULL)
        mgpu_shape_timings_end(&s->t, &policy_lock, stream, launched);
}

double mgpu_mirror_policy_tries_over_us(unsigned long *tries)
{
    pthread_mutex_lock(&policy_lock);
    double over = mgpu_shape_table_tries_over_us(table, TABLE_SIZE, sizeof table[0],
                                                 offsetof(struct shape, t), tries);
    pthread_mutex_unlock(&policy_lock);
    return over;
}

void mgpu_mirror_policy_stats(struct mgpu_mirror_policy_stats *out)
{
    pthread_mutex_lock(&policy_lock);
    for (size_t i = 0; i < TABLE_SIZE; i++)
        if (table[i].t.in_flight && table[i].key.kernel != NULL)
            collect(&table[i]); /* a timing the last launches left out */
    *out = stats;
    pthread_mutex_unlock(&policy_lock);
}
