/* Owns the split-or-not decisions of MGPU_SPLIT=auto (see split_policy.h):
 * a table of launch shapes, each with its best measured whole and split
 * times and at most one timing in flight. */
#include "sched/split_policy.h"

#include "base/log.h"
#include "sched/mirror_reads.h"
#include "sched/placement_follow.h"
#include "base/real_driver.h"
#include "mirror/replicas.h"
#include "base/config.h"
#include "base/shape_timings.h"
#include "base/demangle.h"
#include "base/kernel_stats.h"
#include "base/try_budget.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define TABLE_SIZE 4096 /* a power of two */
/* The first split launch of a shape may meet cold caches and page tables
 * on the other GPUs: the best of two decides, unless the first took twice
 * the whole launch or more, beyond what cold pages cost (transpose_naive,
 * 50 us whole on the home GPU of 4 x H200: 0.4 to 1.3 ms split four ways).
 * A privatised split's first try also makes its private copies, a
 * mirrored one its replicas, and one after a spread for it meets pages
 * just moved: two always decide. */
#define SPLIT_SAMPLES 2
#define SPLIT_CLEARLY_SLOWER 2.0

struct shape {
    struct mgpu_shape_key key;
    struct mgpu_shape_timings t; /* the ways: [0] whole, [1] split */
    /* never tried split: the estimate said it cannot pay, or a larger grid
     * of the kernel ran whole under MGPU_SPLIT_MIN_MICROSECONDS */
    bool kept_whole;
    /* split, privatises its reductions (MGPU_MIRROR=auto): the estimate
     * found its split bound by atomics that privatised copies avoid */
    bool privatise;
    /* the spread-first question was answered for good (split_after_spread),
     * and whether the answer was to spread */
    bool spread_asked, spread_for_split;
    /* a spread that would pay once its copies are shared over more
     * launches is asked again when the shape has made this many */
    unsigned spread_ask_at;
    /* its next split launch spreads its buffers first */
    bool spread_first;
    /* launches of the shape so far, whichever way they went */
    unsigned launches;
    /* its split tries were made mirrored (mirrors_could_serve) */
    bool mirrored_tries;
    /* its last split try was put off by the budget for trying */
    bool put_off;
    /* For the report: the estimate's last answers, in microseconds (NAN:
     * not asked), with the data where they lay and with them spread. */
    double estimate_us, spread_estimate_us;
    /* In a kernel's own record (grid 0 x 0 x 0, with the block of its
     * shapes): the most threads of a shape of it measured whole under
     * MGPU_SPLIT_MIN_MICROSECONDS. */
    double short_threads;
};

static const unsigned kernel_grid[3] = {0, 0, 0};

static pthread_mutex_t policy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shape table[TABLE_SIZE];

/* Under policy_lock. NULL when the table is full. */
static struct shape *find_shape(const void *kernel, const unsigned grid[3], const unsigned block[3])
{
    bool fresh;
    struct shape *s =
        mgpu_shape_record(table, TABLE_SIZE, sizeof *table, kernel, grid, block, &fresh);
    if (s != NULL && fresh) {
        mgpu_shape_timings_reset(&s->t, MGPU_TRY_SPLIT);
        s->estimate_us = s->spread_estimate_us = NAN;
    }
    return s;
}

static double threads_of(const unsigned grid[3], const unsigned block[3])
{
    return (double)grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2];
}

/* Under policy_lock: the way is known once the whole launch is too short
 * to split, or both ways have their samples. */
static bool decided(const struct shape *s)
{
    const struct mgpu_shape_timings *t = &s->t;
    return s->kept_whole || t->best_us[0] < MGPU_SPLIT_MIN_MICROSECONDS ||
           (t->samples[0] >= 1 && t->samples[1] >= SPLIT_SAMPLES) ||
           (t->samples[0] >= 1 && t->samples[1] >= 1 && !s->privatise && !s->spread_for_split &&
            !s->mirrored_tries && t->best_us[1] >= SPLIT_CLEARLY_SLOWER * t->best_us[0]);
}

/* Under policy_lock: the record of a kernel with this block; NULL when the
 * table is full. */
static struct shape *kernel_record(const void *kernel, const unsigned block[3])
{
    bool fresh;
    return mgpu_shape_record(table, TABLE_SIZE, sizeof *table, kernel, kernel_grid, block, &fresh);
}

/* Under policy_lock. A kernel's grids that shrink as a program goes on
 * (tests/programs/gaussian's 998 launches, LU, a BFS frontier's levels):
 * a grid no larger than one of the same kernel and block that ran whole
 * under MGPU_SPLIT_MIN_MICROSECONDS runs whole untimed, neither timed nor
 * waited for, where each would otherwise drain the stream once. Not for a
 * kernel with a grid-stride loop, whose smaller grid does the same work. */
static bool shorter_than_measured(const void *kernel, const struct shape *s, double threads,
                                  const struct mgpu_split_estimate *estimate)
{
    if (estimate == NULL || estimate->kernel == NULL || estimate->kernel->stride_bound_param >= 0 ||
        s->t.samples[1] > 0 || s->t.in_flight)
        return false;
    struct shape *k = kernel_record(kernel, s->key.block);
    return k != NULL && threads <= k->short_threads;
}

/* Under policy_lock: shape s's whole time, if measured, into its kernel's
 * record. */
static void note_short(const void *kernel, const struct shape *s, double threads)
{
    if (!(s->t.samples[0] > 0 && s->t.best_us[0] < MGPU_SPLIT_MIN_MICROSECONDS))
        return;
    struct shape *k = kernel_record(kernel, s->key.block);
    if (k != NULL && threads > k->short_threads)
        k->short_threads = threads;
}

/* What the estimate says of a first split try. */
enum verdict { PAYS, NOT_YET, NEVER };

/* Under policy_lock: whether a split that the estimate holds back with the
 * data where they lie would pay after the launch's large buffers on one
 * GPU were spread: the estimate with them spread, plus the model's time
 * for their copies shared over the shape's launches so far. A spread that
 * would beat the whole launch but for its copies is asked again each time
 * the shape's launches have doubled: the whole launches run meanwhile are
 * what the program would have run anyway, and a spread made once they
 * have lost as much as its copies cost costs at most twice what knowing
 * the launches to come would have (a loop of 64 sweeps of a 512 MiB
 * stencil: spread at the fourth to eighth, not at the second). Sets
 * s->spread_first when it pays. */
static enum verdict split_after_spread(struct shape *s, double whole_us,
                                       const struct mgpu_split_estimate *estimate, double as_is_us)
{
    if (s->spread_asked || estimate->kernel == NULL)
        return NEVER;
    if (s->launches < s->spread_ask_at)
        return NOT_YET;
    double copy_seconds =
        mgpu_follow_spread_seconds(estimate->kernel, estimate->params, estimate->buffer);
    struct mgpu_split_estimate spread = *estimate;
    spread.spread = true;
    double spread_us = copy_seconds < 0.0 ? -1.0 : mgpu_split_estimate_us(&spread, whole_us);
    s->spread_estimate_us = spread_us;
    if (spread_us < 0.0 || spread_us >= whole_us) {
        s->spread_asked = true;
        return NEVER;
    }
    unsigned launches = s->launches > 0 ? s->launches : 1;
    double copy_share_us = copy_seconds * 1e6 / launches;
    if (spread_us + copy_share_us >= whole_us) {
        s->spread_ask_at = 2 * launches;
        return NOT_YET;
    }
    /* The spread is a try too, one the launches so far would have paid
     * for (above), so expected to cost nothing beyond them; while the
     * tries have spent more than the budget it waits, asked again a quarter
     * more launches on (placement's move asks the same). */
    if (!mgpu_try_budget_allows(MGPU_TRY_MOVE, 0.0)) {
        s->spread_ask_at = launches + launches / 4 + 1;
        return NOT_YET;
    }
    s->spread_asked = true;
    s->spread_first = s->spread_for_split = true;
    mgpu_info("split: a grid of %u x %u x %u blocks of %u x %u x %u is tried split after its "
              "buffers are spread: about %.1f us split so, %.1f us with them where they lie, "
              "%.1f us whole, and %.1f us of copies over %u launches",
              s->key.grid[0], s->key.grid[1], s->key.grid[2], s->key.block[0], s->key.block[1],
              s->key.block[2], spread_us, as_is_us, whole_us, copy_seconds * 1e6, s->launches);
    return PAYS;
}

/* Under policy_lock: whether a first split try of a shape whose whole
 * launch took whole_us pays, may pay later (a spread whose copies more
 * launches would share), or never, as the estimate says (said with -v for
 * the first shapes it keeps whole). Under MGPU_MIRROR=auto, a split that only
 * its atomics hold back is tried with its reductions privatised, and is
 * marked to be so whenever it splits: timed without them, such a split
 * would be kept whole before the mirror policy's tries could show what
 * privatised copies gain (tests/programs/atomic_sum, 2 x H200: 0.77 ms
 * whole, two split tries of about 1.2 ms). Not while mirrors are off (the
 * program uses NCCL itself), nor when every entry stands on the home
 * device: nothing would privatise them. */
static enum verdict split_may_pay(struct shape *s, double whole_us,
                                  const struct mgpu_split_estimate *estimate)
{
    static int told;
    if (s->spread_first)
        return PAYS;
    /* A spread asked of too early, until it is asked again. */
    if (s->launches < s->spread_ask_at)
        return NOT_YET;
    double split_us = estimate != NULL ? mgpu_split_estimate_us(estimate, whole_us) : -1.0;
    s->estimate_us = split_us;
    /* The links still being measured, off the program's way: whole, and
     * asked again at the next launch. */
    if (isnan(split_us))
        return NOT_YET;
    if (split_us < 0.0 || split_us < whole_us)
        return PAYS;
    if (isinf(split_us)) {
        if (told++ < 16)
            mgpu_info("split: a grid of %u x %u x %u blocks of %u x %u x %u stays whole: it uses "
                      "managed memory, whose pages each GPU's slice would fault over to it",
                      s->key.grid[0], s->key.grid[1], s->key.grid[2], s->key.block[0],
                      s->key.block[1], s->key.block[2]);
        return NEVER;
    }
    if (mgpu_cfg.mirror == MGPU_MIRROR_AUTO && !estimate->privatised && mgpu_replicas_on() &&
        mgpu_mirror_privatising_entries()) {
        struct mgpu_split_estimate privatised = *estimate;
        privatised.privatised = true;
        double private_us = mgpu_split_estimate_us(&privatised, whole_us);
        if (private_us >= 0.0 && private_us < whole_us) {
            s->estimate_us = private_us;
            s->privatise = true;
            return PAYS;
        }
    }
    enum verdict spread =
        mgpu_follow_on() ? split_after_spread(s, whole_us, estimate, split_us) : NEVER;
    if (spread != NEVER)
        return spread;
    if (told++ < 16)
        mgpu_info("split: a grid of %u x %u x %u blocks of %u x %u x %u stays whole: split, its "
                  "slices would read their data from other GPUs for about %.1f us against %.1f us "
                  "whole",
                  s->key.grid[0], s->key.grid[1], s->key.grid[2], s->key.block[0], s->key.block[1],
                  s->key.block[2], split_us, whole_us);
    return NEVER;
}

/* Whether mirrors could serve some buffer of the launch the estimate is
 * of (MGPU_MIRROR=auto; not a grid-stride loop cut by iterations, which
 * the mirror policy never mirrors): asked at a shape's first split try. */
static bool mirrors_could_serve(const struct mgpu_split_estimate *e)
{
    if (mgpu_cfg.mirror != MGPU_MIRROR_AUTO || e->kernel == NULL ||
        (e->nslices > 0 && e->slices[0].iterations))
        return false;
    struct mgpu_mirror_launch launch = {e->grid, e->block, e->slices, e->nslices};
    return mgpu_mirror_candidates(e->kernel, e->params, e->buffer, &launch);
}

/* Under policy_lock: whether a split try of shape s, whose whole launch
 * took whole_us, fits in the budget for trying (base/try_budget.h). */
static bool try_fits(const struct shape *s, double whole_us)
{
    double expected = s->t.best_us[1];
    if (!isfinite(expected))
        expected = s->spread_for_split && isfinite(s->spread_estimate_us) ? s->spread_estimate_us
                   : isfinite(s->estimate_us)                             ? s->estimate_us
                                                                          : whole_us;
    return mgpu_try_budget_allows(MGPU_TRY_SPLIT, expected - whole_us);
}

/* Under policy_lock, for a shape launched before: the way this launch
 * goes, and whether it is to be timed. */
static bool decide(struct shape *s, bool prior, const struct mgpu_split_estimate *estimate,
                   struct mgpu_split_trial *trial)
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
    /* A split the prior did not want waits until the shape has run long
     * enough whole that its tries cannot cost much of the program's time. */
    if (split && !prior && !isfinite(sliced) &&
        s->launches * whole < MGPU_SPLIT_TRY_AFTER_MICROSECONDS)
        return false;
    /* A split never timed yet is tried only where the estimate lets it. */
    if (split && isfinite(whole) && !isfinite(sliced)) {
        enum verdict v = split_may_pay(s, whole, estimate);
        if (v != PAYS) {
            s->kept_whole = v == NEVER;
            return false;
        }
    }
    /* A split timed before its way is known is a try: only within the
     * budget for trying, expected to lose what it lost last time, or what
     * the estimate says (nothing where it says the split pays). */
    s->put_off = split && isfinite(whole) && !try_fits(s, whole);
    if (s->put_off)
        return false;
    if (!mgpu_shape_timings_arm(&s->t, split))
        return prior;
    trial->shape = s;
    return split;
}

bool mgpu_split_policy_choose(const void *kernel, const unsigned grid[3], const unsigned block[3],
                              const struct mgpu_split_estimate *estimate,
                              struct mgpu_split_trial *trial)
{
    trial->shape = NULL;
    trial->split = true;
    trial->privatise = false;
    trial->spread_first = false;
    trial->mirrored = false;
    trial->mirrored_split_us = 0.0;
    if (mgpu_cfg.split == MGPU_SPLIT_ALWAYS)
        return true;
    pthread_mutex_lock(&policy_lock);
    struct shape *s = find_shape(kernel, grid, block);
    double threads = threads_of(grid, block);
    /* Under MGPU_PLACEMENT=auto buffers start on the home GPU (unless
     * MGPU_SPREAD_MIN is set), where a split would read them from there:
     * with nothing measured yet, the launch runs as the plain program's
     * would, whole. */
    bool home_first = mgpu_cfg.placement == MGPU_PLACEMENT_AUTO && mgpu_cfg.spread_min == SIZE_MAX;
    bool prior = !home_first && threads >= MGPU_SPLIT_PRIOR_THREADS, split = prior;
    if (s != NULL && !s->kept_whole && shorter_than_measured(kernel, s, threads, estimate)) {
        s->kept_whole = true;
        s->t.warmed = true;
    }
    /* The first launch of a shape pays one-off costs (the driver loads a
     * module's function at its first launch, caches and page tables are
     * cold) that can make a kernel of microseconds time as milliseconds:
     * it follows the prior untimed. */
    if (s != NULL && !s->t.warmed) {
        s->t.warmed = true;
        s->launches = 1;
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
        if (s->t.in_flight && !decided(s))
            mgpu_shape_timings_await(&s->t, &policy_lock);
        note_short(kernel, s, threads);
        split = decide(s, prior, estimate, trial);
        if (split && trial->shape != NULL && !s->privatise && estimate != NULL &&
            s->t.samples[1] == 0 && mirrors_could_serve(estimate))
            s->mirrored_tries = true;
        trial->mirrored = split && trial->shape != NULL && s->mirrored_tries;
        trial->mirrored_split_us =
            split && trial->shape == NULL && s->mirrored_tries ? s->t.best_us[1] : 0.0;
        trial->privatise = split && s->privatise;
        trial->spread_first = split && s->spread_first;
        if (split)
            s->spread_first = false;
        s->launches++;
        mgpu_shape_timings_ran(&s->t, split); /* the program's time, for the budget */
    }
    pthread_mutex_unlock(&policy_lock);
    trial->split = split;
    return split;
}

void mgpu_split_trial_begin(struct mgpu_split_trial *trial, CUstream stream)
{
    struct shape *s = trial->shape;
    if (s != NULL && !mgpu_shape_timings_begin(&s->t, &policy_lock, stream))
        trial->shape = NULL;
}

void mgpu_split_trial_end(struct mgpu_split_trial *trial, CUstream stream, CUresult launched)
{
    struct shape *s = trial->shape;
    if (s != NULL)
        mgpu_shape_timings_end(&s->t, &policy_lock, stream, launched);
}

/* Under policy_lock: the way shape s goes now, in words. */
static const char *way_of(const struct shape *s)
{
    if (s->t.best_us[0] < MGPU_SPLIT_MIN_MICROSECONDS || s->kept_whole)
        return "whole";
    if (decided(s))
        return s->t.best_us[1] < s->t.best_us[0] ? "split" : "whole";
    return s->t.samples[1] > 0 || s->t.in_flight ? "being measured" : "whole so far";
}

/* Under policy_lock: why shape s's split was never timed, in words. */
static void untried_why(const struct shape *s, char *out, size_t n)
{
    if (s->t.best_us[0] < MGPU_SPLIT_MIN_MICROSECONDS)
        snprintf(out, n, "not tried: under %.0f us whole", MGPU_SPLIT_MIN_MICROSECONDS);
    else if (s->put_off)
        snprintf(out, n, "not tried: over the budget for trying");
    else if (s->launches < s->spread_ask_at)
        snprintf(out, n, "not tried: a spread (%.3f ms) waits for %u launches",
                 s->spread_estimate_us / 1e3, s->spread_ask_at);
    else if (s->kept_whole && isfinite(s->estimate_us) && s->estimate_us >= 0.0)
        snprintf(out, n, "not tried: estimated %.3f ms", s->estimate_us / 1e3);
    else if (s->kept_whole)
        snprintf(out, n, "not tried: a smaller grid's whole time or managed memory");
    else
        snprintf(out, n, "not tried yet");
}

double mgpu_split_policy_tries_over_us(unsigned long *tries)
{
    pthread_mutex_lock(&policy_lock);
    double over = mgpu_shape_table_tries_over_us(table, TABLE_SIZE, sizeof table[0],
                                                 offsetof(struct shape, t), tries);
    pthread_mutex_unlock(&policy_lock);
    return over;
}

size_t mgpu_split_policy_describe(char (*lines)[160], size_t max)
{
    enum { MOST = 16 };
    const struct shape *top[MOST];
    double weight[MOST];
    size_t ntop = 0, used = 0;
    if (max > MOST)
        max = MOST;
    pthread_mutex_lock(&policy_lock);
    for (size_t i = 0; i < TABLE_SIZE; i++) {
        struct shape *s = &table[i];
        if (s->key.kernel == NULL || s->key.grid[0] == 0 || s->launches == 0)
            continue;
        mgpu_shape_timings_collect(&s->t);
        double best = isfinite(s->t.best_us[0]) ? s->t.best_us[0] : 0.0;
        if (isfinite(s->t.best_us[1]) && s->t.best_us[1] < best)
            best = s->t.best_us[1];
        double w = best * s->launches;
        if (w <= 0.0)
            continue;
        size_t at = ntop < max ? ntop++ : max;
        if (at == max) {
            if (max == 0 || w <= weight[max - 1])
                continue;
            at = max - 1;
        }
        while (at > 0 && weight[at - 1] < w) {
            top[at] = top[at - 1];
            weight[at] = weight[at - 1];
            at--;
        }
        top[at] = s;
        weight[at] = w;
    }
    for (size_t k = 0; k < ntop; k++) {
        const struct shape *s = top[k];
        char split[96];
        if (s->t.samples[1] > 0)
            snprintf(split, sizeof split, "split %.3f ms (%d tr%s%s)", s->t.best_us[1] / 1e3,
                     s->t.samples[1], s->t.samples[1] == 1 ? "y" : "ies",
                     s->mirrored_tries     ? ", mirrored"
                     : s->spread_for_split ? ", after a spread"
                                           : "");
        else
            untried_why(s, split, sizeof split);
        int id = mgpu_kernel_stats_find(s->key.kernel);
        const struct mgpu_kernel_record *rec = id >= 0 ? mgpu_kernel_stats_get((size_t)id) : NULL;
        char *name = rec != NULL && rec->name != NULL ? mgpu_demangle(rec->name) : NULL;
        const char *shown = name != NULL ? name : rec != NULL && rec->name ? rec->name : "?";
        char kernel[40];
        size_t len = strcspn(shown, "(");
        snprintf(kernel, sizeof kernel, "%.*s", (int)(len < 39 ? len : 39), shown);
        int written = snprintf(
            lines[used], 160, "%s %ux%ux%u of %ux%ux%u, %u launches: whole %.3f ms, %.60s: %s",
            kernel, s->key.grid[0], s->key.grid[1], s->key.grid[2], s->key.block[0],
            s->key.block[1], s->key.block[2], s->launches, s->t.best_us[0] / 1e3, split, way_of(s));
        if (written > 0)
            used++; /* a line past 160 characters is cut there */
        free(name);
    }
    pthread_mutex_unlock(&policy_lock);
    return used;
}
