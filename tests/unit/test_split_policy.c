/* Unit tests of MGPU_SPLIT=auto's decisions (sched/split_policy.c) with the
 * driver's events and the split's estimate stubbed: each timed launch
 * takes the time the test sets, and the estimate says what the test sets.
 * A shape whose estimate cannot beat its whole launch is never tried
 * split; one whose estimate can, or that has none, is tried and kept the
 * faster way, after one try when that took twice the whole launch, and
 * only once it has run 1.2 ms whole (a few launches of a short kernel stay
 * whole); one under 30 us stays whole, and so do, untimed, the smaller grids of its
 * kernel, unless it has a grid-stride loop. Under MGPU_MIRROR=auto, a
 * split that only an estimate without privatised reductions holds back is
 * tried privatised, and privatises whenever it splits. One that only its
 * data on one GPU hold back is tried after they are spread, when the
 * copies, shared over the launches so far, leave it faster than whole. */
#include "check.h"
#include "event_stubs.h"
#include "sched/mirror_reads.h"
#include "sched/placement_follow.h"
#include "base/real_driver.h"
#include "mirror/replicas.h"
#include "base/config.h"
#include "sched/split_policy.h"
#include "base/demangle.h"
#include "base/kernel_stats.h"
#include "base/shape_timings.h"
#include "base/try_budget.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The kernel statistics the report's lines name kernels by: every kernel
 * is "k". */
static char kernel_name[] = "k";
static const struct mgpu_kernel_record kernel_record = {.name = kernel_name};

int mgpu_kernel_stats_find(const void *handle)
{
    (void)handle;
    return 0;
}

const struct mgpu_kernel_record *mgpu_kernel_stats_get(size_t id)
{
    return id == 0 ? &kernel_record : NULL;
}

char *mgpu_demangle(const char *mangled)
{
    return strdup(mangled);
}

struct mgpu_config mgpu_cfg;
struct mgpu_driver_api mgpu_drv;

static double estimated_us;  /* what the estimate says */
static double privatised_us; /* what it says of a privatised split */
static double spread_us;     /* what it says with the buffers spread */
static int estimates;        /* how often it was asked */

double mgpu_split_estimate_us(const struct mgpu_split_estimate *e, double whole_us)
{
    (void)whole_us;
    estimates++;
    return e->spread ? spread_us : e->privatised ? privatised_us : estimated_us;
}

/* Placement: on, and spreading the launch's buffers would take
 * spread_copy_seconds (negative: they cannot move). */
static bool follow_on = true;
static double spread_copy_seconds = -1.0;
static int spread_questions;

bool mgpu_follow_on(void)
{
    return follow_on;
}

double mgpu_follow_spread_seconds(const struct mgpu_gpu_kernels *k, void *const *params,
                                  const void *buffer)
{
    (void)k, (void)params, (void)buffer;
    spread_questions++;
    return spread_copy_seconds;
}

static bool last_privatise;     /* the last launch's trial.privatise */
static bool last_spread_first;  /* and its trial.spread_first */
static bool last_mirrored;      /* trial.mirrored */
static double last_mirrored_us; /* trial.mirrored_split_us */

static bool mirrors_on = true;

bool mgpu_replicas_on(void)
{
    return mirrors_on;
}

static bool privatising_entries = true; /* some entry off the home device */

bool mgpu_mirror_privatising_entries(void)
{
    return privatising_entries;
}

static bool mirrorable; /* the launches have buffers mirrors could serve */

bool mgpu_mirror_candidates(const struct mgpu_gpu_kernels *k, void *const *params,
                            const void *buffer, const struct mgpu_mirror_launch *launch)
{
    (void)k, (void)params, (void)buffer, (void)launch;
    return mirrorable;
}

/* One launch of kernel k over `blocks` blocks of 256 threads; whole launches
 * take whole_us, split ones split_us, when timed. Returns whether it split,
 * and whether it was timed in *timed. `copies` (NULL: none) is what mgpu
 * knows of the kernel from its rewritten modules. */
static bool launch_of(const void *k, const struct mgpu_gpu_kernels *copies, unsigned blocks,
                      double whole_us, double split_us, bool *timed)
{
    unsigned grid[3] = {blocks, 1, 1}, block[3] = {256, 1, 1};
    static struct mgpu_gpu_kernels unknown_kernel;
    struct mgpu_split_estimate estimate = {.kernel = copies != NULL ? copies : &unknown_kernel};
    struct mgpu_split_trial trial;
    bool split = mgpu_split_policy_choose(k, grid, block, &estimate, &trial);
    *timed = trial.shape != NULL;
    last_privatise = trial.privatise;
    last_spread_first = trial.spread_first;
    last_mirrored = trial.mirrored;
    last_mirrored_us = trial.mirrored_split_us;
    stub_elapsed_ms = (float)((split ? split_us : whole_us) / 1000.0);
    mgpu_split_trial_begin(&trial, NULL);
    mgpu_split_trial_end(&trial, NULL, CUDA_SUCCESS);
    return split;
}

static bool launch(const void *k, unsigned blocks, double whole_us, double split_us, bool *timed)
{
    return launch_of(k, NULL, blocks, whole_us, split_us, timed);
}

/* The launches of kernel k (4096 blocks: the prior says whole) before its
 * split may be tried: whole to warm up, whole timed, then whole untimed
 * until the shape has run 1.2 ms whole (MGPU_SPLIT_TRY_AFTER_MICROSECONDS),
 * none privatised, the estimate not asked. Returns the launches made. */
static int before_a_try(const void *k, double whole_us, double split_us)
{
    bool timed;
    int before = estimates;
    CHECK(!launch(k, 4096, whole_us, split_us, &timed) && !timed);
    CHECK(!launch(k, 4096, whole_us, split_us, &timed) && timed);
    int n = 2;
    for (; n * whole_us < MGPU_SPLIT_TRY_AFTER_MICROSECONDS; n++)
        CHECK(!launch(k, 4096, whole_us, split_us, &timed) && !timed && !last_privatise);
    CHECK(estimates == before);
    return n;
}

/* Kernel k (100 us whole, 40 us split), whose split is never tried: a
 * dozen launches before the try would be due, and as many after, whole. */
static void never_tried(const void *k)
{
    bool timed;
    before_a_try(k, 100.0, 40.0);
    for (int i = 0; i < 12; i++)
        CHECK(!launch(k, 4096, 100.0, 40.0, &timed) && !timed && !last_privatise);
}

/* The budget for trying (base/try_budget.h) at 2 % of the kernels' time
 * plus 0.5 ms: a split the estimate says pays (600 us against 1 ms
 * whole) but that takes 3 ms is tried once, charged its 2 ms over whole,
 * and kept whole; the next shape's try, expected to cost nothing, is put
 * off while the 2 ms charged exceed the budget, and made once the
 * program's launches have run 75 ms (2 % of them plus 0.5 ms covers the
 * 2 ms). */
static void budget_for_trying(void)
{
    static const char costly, next;
    bool timed;
    mgpu_cfg.try_budget_off = false;
    mgpu_cfg.try_budget_percent = 2.0;
    mgpu_cfg.try_budget_ms = 0.5;
    mgpu_try_budget_reset();
    estimated_us = 600.0;
    before_a_try(&costly, 1000.0, 3000.0);
    CHECK(launch(&costly, 4096, 1000.0, 3000.0, &timed) && timed);
    CHECK(!launch(&costly, 4096, 1000.0, 3000.0, &timed) && !timed);
    struct mgpu_try_budget_stats b;
    mgpu_try_budget_stats(&b);
    CHECK(b.spent_us == 2000.0 && b.spent_by_us[MGPU_TRY_SPLIT] == 2000.0 && b.put_off == 0);
    int n = before_a_try(&next, 1000.0, 400.0);
    while (!launch(&next, 4096, 1000.0, 400.0, &timed)) {
        CHECK(!timed);
        n++;
    }
    CHECK(timed);
    mgpu_try_budget_stats(&b);
    CHECK(b.put_off > 0 && b.put_off_by[MGPU_TRY_SPLIT] == b.put_off);
    /* Tried as soon as 2 % of what ran covers the 1.5 ms beyond the 0.5. */
    CHECK(b.ran_us >= 75000.0 && b.ran_us <= 77000.0 && n >= 70 && n <= 76);
    /* The split took 400 us: nothing charged; kept after its second try. */
    CHECK(launch(&next, 4096, 1000.0, 400.0, &timed) && timed);
    CHECK(launch(&next, 4096, 1000.0, 400.0, &timed) && !timed);
    mgpu_try_budget_stats(&b);
    CHECK(b.spent_us == 2000.0);
    mgpu_cfg.try_budget_off = true;
}

int main(void)
{
    mgpu_cfg.split = MGPU_SPLIT_AUTO;
    /* The policy's decisions alone; the budget is budget_for_trying's. */
    mgpu_cfg.try_budget_off = true;
    stub_events_install();
    static const char data_at_home, spread, unknown, tiny, big, shrinking, strided, cold;
    static const char atomics, atomics_never;
    bool timed;

    /* 4096 blocks (2^20 threads: the prior says whole). 100 us whole, and
     * an estimate of 250 us split: never tried. */
    estimated_us = 250.0;
    CHECK(before_a_try(&data_at_home, 100.0, 40.0) == 12);
    for (int i = 0; i < 5; i++)
        CHECK(!launch(&data_at_home, 4096, 100.0, 40.0, &timed) && !timed);
    CHECK(estimates == 1);

    /* An estimate of 60 us: tried twice, and kept split (40 us). */
    estimated_us = 60.0;
    estimates = 0;
    before_a_try(&spread, 100.0, 40.0);
    CHECK(launch(&spread, 4096, 100.0, 40.0, &timed) && timed);
    CHECK(launch(&spread, 4096, 100.0, 40.0, &timed) && timed);
    CHECK(launch(&spread, 4096, 100.0, 40.0, &timed) && !timed);
    CHECK(estimates == 1);

    /* The links still being measured (the estimate says NAN): whole and
     * untimed, the estimate asked again at each launch, and the split
     * tried once it can say. */
    static const char links_pending;
    estimated_us = NAN;
    estimates = 0;
    before_a_try(&links_pending, 100.0, 40.0);
    for (int i = 0; i < 3; i++)
        CHECK(!launch(&links_pending, 4096, 100.0, 40.0, &timed) && !timed);
    CHECK(estimates == 3);
    estimated_us = 60.0;
    CHECK(launch(&links_pending, 4096, 100.0, 40.0, &timed) && timed);

    /* No estimate (a negative answer): tried; a split of three times the
     * whole launch is not tried again, and kept whole. */
    estimated_us = -1.0;
    before_a_try(&unknown, 100.0, 300.0);
    CHECK(launch(&unknown, 4096, 100.0, 300.0, &timed) && timed);
    CHECK(!launch(&unknown, 4096, 100.0, 300.0, &timed) && !timed);
    CHECK(!launch(&unknown, 4096, 100.0, 300.0, &timed) && !timed);
    /* A first split of 1.5 times whole, as cold pages may make it: a
     * second try, which decides. */
    before_a_try(&cold, 100.0, 150.0);
    CHECK(launch(&cold, 4096, 100.0, 150.0, &timed) && timed);
    CHECK(launch(&cold, 4096, 100.0, 60.0, &timed) && timed);
    CHECK(launch(&cold, 4096, 100.0, 60.0, &timed) && !timed);

    /* A short kernel run a few times (tests/programs/conv2d: six launches
     * of 45 us) stays whole, though its split would pay: its first try is
     * due after 27 launches (1.2 ms). */
    estimated_us = 30.0;
    estimates = 0;
    static const char few_short;
    CHECK(!launch(&few_short, 4096, 45.0, 30.0, &timed) && !timed);
    CHECK(!launch(&few_short, 4096, 45.0, 30.0, &timed) && timed);
    for (int i = 2; i < 27; i++)
        CHECK(!launch(&few_short, 4096, 45.0, 30.0, &timed) && !timed);
    CHECK(estimates == 0);
    CHECK(launch(&few_short, 4096, 45.0, 30.0, &timed) && timed);
    CHECK(estimates == 1);

    /* Under 30 us whole: stays whole, the estimate not even asked. */
    estimates = 0;
    CHECK(!launch(&tiny, 4096, 20.0, 5.0, &timed) && !timed);
    CHECK(!launch(&tiny, 4096, 20.0, 5.0, &timed) && timed);
    CHECK(!launch(&tiny, 4096, 20.0, 5.0, &timed) && !timed);
    CHECK(estimates == 0);

    /* 65536 blocks (2^24 threads): the prior splits the first two; a
     * measured split time outweighs any estimate. */
    estimated_us = 1e9;
    CHECK(launch(&big, 65536, 1000.0, 300.0, &timed) && !timed);
    CHECK(launch(&big, 65536, 1000.0, 300.0, &timed) && timed);
    CHECK(!launch(&big, 65536, 1000.0, 300.0, &timed) && timed);
    CHECK(launch(&big, 65536, 1000.0, 300.0, &timed) && timed);
    CHECK(launch(&big, 65536, 1000.0, 300.0, &timed) && !timed);
    CHECK(estimates == 0);
    /* Under MGPU_PLACEMENT=auto buffers start on the home GPU: the same
     * grid runs whole until measured (principle 6), its first launch
     * untimed, the second timed whole, then two split tries (1 ms whole:
     * due at once, the estimate asked), and the split kept. */
    static const char big_home;
    mgpu_cfg.placement = MGPU_PLACEMENT_AUTO;
    mgpu_cfg.spread_min = SIZE_MAX;
    estimated_us = 300.0;
    CHECK(!launch(&big_home, 65536, 1000.0, 300.0, &timed) && !timed);
    CHECK(!launch(&big_home, 65536, 1000.0, 300.0, &timed) && timed);
    CHECK(launch(&big_home, 65536, 1000.0, 300.0, &timed) && timed);
    CHECK(launch(&big_home, 65536, 1000.0, 300.0, &timed) && timed);
    CHECK(launch(&big_home, 65536, 1000.0, 300.0, &timed) && !timed);
    CHECK(estimates == 1);
    mgpu_cfg.placement = MGPU_PLACEMENT_DISTRIBUTED;
    mgpu_cfg.spread_min = 0;

    /* Shrinking grids: once 4096 blocks of a kernel took 20 us whole,
     * smaller grids of it run whole untimed from their first launch; a
     * larger one is timed. */
    struct mgpu_gpu_kernels copies = {.stride_bound_param = -1};
    CHECK(!launch_of(&shrinking, &copies, 4096, 20.0, 5.0, &timed) && !timed);
    CHECK(!launch_of(&shrinking, &copies, 4096, 20.0, 5.0, &timed) && timed);
    CHECK(!launch_of(&shrinking, &copies, 4096, 20.0, 5.0, &timed) && !timed);
    for (unsigned blocks = 4000; blocks > 3000; blocks -= 100) {
        CHECK(!launch_of(&shrinking, &copies, blocks, 20.0, 5.0, &timed) && !timed);
        CHECK(!launch_of(&shrinking, &copies, blocks, 20.0, 5.0, &timed) && !timed);
    }
    CHECK(!launch_of(&shrinking, &copies, 8192, 40.0, 5.0, &timed) && !timed);
    CHECK(!launch_of(&shrinking, &copies, 8192, 40.0, 5.0, &timed) && timed);
    /* A kernel with a grid-stride loop does the same work on fewer blocks:
     * each grid timed. */
    struct mgpu_gpu_kernels stride_copies = {.stride_bound_param = 1};
    CHECK(!launch_of(&strided, &stride_copies, 4096, 20.0, 5.0, &timed) && !timed);
    CHECK(!launch_of(&strided, &stride_copies, 4096, 20.0, 5.0, &timed) && timed);
    CHECK(!launch_of(&strided, &stride_copies, 4096, 20.0, 5.0, &timed) && !timed);
    CHECK(!launch_of(&strided, &stride_copies, 2048, 20.0, 5.0, &timed) && !timed);
    CHECK(!launch_of(&strided, &stride_copies, 2048, 20.0, 5.0, &timed) && timed);

    /* Atomics: 250 us split as the program's atomics meet, 60 us with
     * them privatised. Under MGPU_MIRROR=never, never tried; under auto,
     * tried privatised and, kept, privatised at every split. */
    estimated_us = 250.0;
    privatised_us = 60.0;
    mgpu_cfg.mirror = MGPU_MIRROR_NEVER;
    never_tried(&atomics_never);
    mgpu_cfg.mirror = MGPU_MIRROR_AUTO;
    before_a_try(&atomics, 100.0, 40.0);
    /* The first privatised try, which makes the private copies, took three
     * times the whole launch: the second decides. */
    CHECK(launch(&atomics, 4096, 100.0, 300.0, &timed) && timed && last_privatise);
    CHECK(launch(&atomics, 4096, 100.0, 40.0, &timed) && timed && last_privatise);
    CHECK(launch(&atomics, 4096, 100.0, 40.0, &timed) && !timed && last_privatise);
    /* Whole launches do not privatise. */
    CHECK(!launch(&data_at_home, 4096, 100.0, 40.0, &timed) && !last_privatise);
    /* With mirrors off (the program uses NCCL), nothing privatises: not
     * tried. */
    mirrors_on = false;
    static const char atomics_no_mirrors;
    never_tried(&atomics_no_mirrors);
    mirrors_on = true;
    /* Every entry on the home device (one GPU listed several times): no
     * entry would privatise, so neither. */
    privatising_entries = false;
    static const char atomics_one_device;
    never_tried(&atomics_one_device);
    privatising_entries = true;
    mgpu_cfg.mirror = MGPU_MIRROR_NEVER;

    /* Decided with placement: 100 us whole, 250 us split with the data on
     * the home GPU, 30 us with them spread, 60 us of copies to spread them
     * over the 12 launches so far (5 us each): spread before the first
     * try, which splits; the second try does not spread again. */
    estimated_us = 250.0;
    spread_us = 30.0;
    spread_copy_seconds = 60e-6;
    static const char spread_first, copies_too_long, cannot_move, placement_off, spread_loses;
    before_a_try(&spread_first, 100.0, 40.0);
    spread_questions = 0;
    CHECK(launch(&spread_first, 4096, 100.0, 40.0, &timed) && timed && last_spread_first);
    CHECK(launch(&spread_first, 4096, 100.0, 40.0, &timed) && timed && !last_spread_first);
    CHECK(launch(&spread_first, 4096, 100.0, 40.0, &timed) && !timed && !last_spread_first);
    CHECK(spread_questions == 1);
    /* Copies of 1 ms: 83 us a launch over the 12 launches so far, on top
     * of the 30, more than whole: whole, untimed, and asked again once
     * the launches have doubled; at 24, 42 us a launch: spread and tried. */
    spread_copy_seconds = 1e-3;
    spread_questions = 0;
    CHECK(before_a_try(&copies_too_long, 100.0, 40.0) == 12);
    for (int i = 12; i < 24; i++)
        CHECK(!launch(&copies_too_long, 4096, 100.0, 40.0, &timed) && !timed && !last_spread_first);
    CHECK(spread_questions == 1);
    CHECK(launch(&copies_too_long, 4096, 100.0, 40.0, &timed) && timed && last_spread_first);
    CHECK(spread_questions == 2);
    /* Copies of 10 ms: asked at 12, 24, 48 and 96 launches, never enough. */
    static const char copies_much_too_long;
    spread_copy_seconds = 10e-3;
    spread_questions = 0;
    before_a_try(&copies_much_too_long, 100.0, 40.0);
    for (int i = 12; i < 100; i++)
        CHECK(!launch(&copies_much_too_long, 4096, 100.0, 40.0, &timed) && !timed);
    CHECK(spread_questions == 4);
    /* Buffers that cannot move (each moved the most allowed, a second
     * launching thread): not tried. */
    spread_copy_seconds = -1.0;
    never_tried(&cannot_move);
    /* MGPU_PLACEMENT other than auto: not asked. */
    spread_copy_seconds = 60e-6;
    follow_on = false;
    spread_questions = 0;
    never_tried(&placement_off);
    CHECK(spread_questions == 0);
    follow_on = true;
    /* Spread, the split still took three times the whole launch: as the
     * first try after a spread meets pages just moved, a second try, then
     * kept whole from then on, the question not asked again. */
    before_a_try(&spread_loses, 100.0, 300.0);
    spread_questions = 0;
    CHECK(launch(&spread_loses, 4096, 100.0, 300.0, &timed) && timed && last_spread_first);
    CHECK(launch(&spread_loses, 4096, 100.0, 300.0, &timed) && timed && !last_spread_first);
    for (int i = 0; i < 12; i++)
        CHECK(!launch(&spread_loses, 4096, 100.0, 300.0, &timed) && !timed && !last_spread_first);
    CHECK(spread_questions == 1);

    /* Buffers mirrors could serve (a tiled GEMM's B): both split tries
     * mirrored; once split, not a try, and the best of them (40 us) passed
     * on to the mirror policy. Without such buffers, tries unmirrored. */
    static const char mirrors_serve;
    estimated_us = 60.0;
    mgpu_cfg.mirror = MGPU_MIRROR_AUTO;
    mirrorable = true;
    before_a_try(&mirrors_serve, 100.0, 40.0);
    CHECK(launch(&mirrors_serve, 4096, 100.0, 45.0, &timed) && timed && last_mirrored);
    CHECK(launch(&mirrors_serve, 4096, 100.0, 40.0, &timed) && timed && last_mirrored);
    CHECK(launch(&mirrors_serve, 4096, 100.0, 40.0, &timed) && !timed && !last_mirrored &&
          fabs(last_mirrored_us - 40.0) < 0.01);
    /* The first mirrored try makes the replicas (three times the whole
     * launch here): the second decides, as after a spread. */
    static const char mirrors_made_first;
    before_a_try(&mirrors_made_first, 100.0, 40.0);
    CHECK(launch(&mirrors_made_first, 4096, 100.0, 300.0, &timed) && timed && last_mirrored);
    CHECK(launch(&mirrors_made_first, 4096, 100.0, 40.0, &timed) && timed && last_mirrored);
    CHECK(launch(&mirrors_made_first, 4096, 100.0, 40.0, &timed) && !timed);
    mirrorable = false;
    static const char nothing_to_mirror;
    before_a_try(&nothing_to_mirror, 100.0, 40.0);
    CHECK(launch(&nothing_to_mirror, 4096, 100.0, 40.0, &timed) && timed && !last_mirrored);
    CHECK(launch(&nothing_to_mirror, 4096, 100.0, 40.0, &timed) && timed && !last_mirrored);
    CHECK(launch(&nothing_to_mirror, 4096, 100.0, 40.0, &timed) && !timed &&
          last_mirrored_us == 0.0);
    /* Under MGPU_MIRROR=never, never mirrored. */
    mgpu_cfg.mirror = MGPU_MIRROR_NEVER;
    mirrorable = true;
    static const char mirrors_off;
    before_a_try(&mirrors_off, 100.0, 40.0);
    CHECK(launch(&mirrors_off, 4096, 100.0, 40.0, &timed) && timed && !last_mirrored);
    mirrorable = false;

    /* A kernel on managed memory (an estimate of INFINITY): never tried,
     * not even after a spread. */
    static const char on_managed_memory;
    estimated_us = INFINITY;
    spread_questions = 0;
    never_tried(&on_managed_memory);
    CHECK(spread_questions == 0);

    /* The report's lines: the shapes of most GPU time first (launches
     * times their best time), with their times, why a split was not
     * tried, and the way each goes. */
    char lines[8][160];
    size_t n = mgpu_split_policy_describe(lines, 8);
    CHECK(n == 8);
    bool said_spread = false, said_estimate = false, said_tries = false;
    for (size_t i = 0; i < n; i++) {
        CHECK(strncmp(lines[i], "k 4096x1x1 of 256x1x1, ", 23) == 0);
        said_spread |= strstr(lines[i], "not tried: a spread (0.030 ms) waits for 192 launches: "
                                        "whole so far") != NULL;
        said_estimate |= strstr(lines[i], "not tried: estimated 0.250 ms: whole") != NULL;
        said_tries |= strstr(lines[i], "split 0.300 ms (2 tries, after a spread): whole") != NULL;
    }
    CHECK(said_spread && said_estimate && said_tries);
    CHECK(strstr(lines[0], ", 100 launches: ") != NULL); /* copies_much_too_long: the most */

    /* What trying cost: the split tries beyond as many whole launches at
     * their best. `unknown` tried once at 300 us against 100 whole (200
     * over), `cold` twice at 150 and 60 (10 over); tries under the whole
     * time count nothing below zero. */
    struct mgpu_shape_timings t = {.best_us = {100.0, 60.0}, .sum_us = {0.0, 210.0},
                                   .summed = {1, 2}};
    CHECK(mgpu_shape_timings_tries_over_us(&t) == 10.0);
    t.sum_us[1] = 150.0;
    CHECK(mgpu_shape_timings_tries_over_us(&t) == 0.0);
    t.best_us[0] = INFINITY; /* whole never measured: nothing to weigh against */
    t.sum_us[1] = 500.0;
    CHECK(mgpu_shape_timings_tries_over_us(&t) == 0.0);
    unsigned long tries = 0;
    double over = mgpu_split_policy_tries_over_us(&tries);
    CHECK(tries >= 3 && over >= 210.0);
    budget_for_trying();
    return check_failures;
}
