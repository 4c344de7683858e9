/* Unit tests of MGPU_MIRROR=auto's decisions (mirror/mirror_policy.c) with
 * the driver's events stubbed: each timed launch takes the time the test
 * sets. A shape whose split launch is short is never tried with mirrors; a
 * longer one is timed with them and kept mirrored only if that is faster;
 * one the split policy wants privatised is mirrored untimed; a grid-stride
 * loop cut by iterations is never tried (unless privatised, or always). */
#include "check.h"
#include "event_stubs.h"
#include "mirror/mirror_policy.h"
#include "base/real_driver.h"
#include "base/config.h"
#include "base/try_budget.h"

#include <math.h>

struct mgpu_config mgpu_cfg;
struct mgpu_driver_api mgpu_drv;

/* One launch of the shape (kernel k, a grid of `blocks`), timed at `us`
 * if the policy times it; returns whether it mirrored, and whether it was
 * timed in *timed. */
static double seed_us; /* the split policy's mirrored tries, passed on */
static double copies;  /* what making the launch's copies would take */

static double copies_us(void *arg)
{
    (void)arg;
    return copies;
}

static bool launch_cut(const void *k, unsigned blocks, double us, bool privatise,
                       bool by_iterations, bool *timed)
{
    unsigned grid[3] = {blocks, 1, 1}, block[3] = {256, 1, 1};
    struct mgpu_mirror_trial trial;
    bool mirrored = mgpu_mirror_policy_choose(k, grid, block, privatise, by_iterations, seed_us,
                                              copies_us, NULL, &trial);
    *timed = trial.shape != NULL;
    stub_elapsed_ms = (float)(us / 1000.0);
    mgpu_mirror_trial_begin(&trial, NULL);
    mgpu_mirror_trial_end(&trial, NULL, CUDA_SUCCESS);
    return mirrored;
}

static bool launch_for(const void *k, unsigned blocks, double us, bool privatise, bool *timed)
{
    return launch_cut(k, blocks, us, privatise, false, timed);
}

static bool launch(const void *k, unsigned blocks, double us, bool *timed)
{
    return launch_for(k, blocks, us, false, timed);
}

int main(void)
{
    mgpu_cfg.mirror = MGPU_MIRROR_AUTO;
    mgpu_cfg.try_budget_off = true; /* the policy alone */
    stub_events_install();
    static const char short_kernel, long_kernel, slower_kernel, atomics_kernel;
    bool timed;

    /* 20 us without mirrors: the first launch is untimed, the second timed
     * without, and from then on never with. */
    CHECK(!launch(&short_kernel, 4096, 20.0, &timed) && !timed);
    CHECK(!launch(&short_kernel, 4096, 20.0, &timed) && timed);
    for (int i = 0; i < 5; i++)
        CHECK(!launch(&short_kernel, 4096, 20.0, &timed) && !timed);

    /* 400 us without, 100 us with: tried twice with mirrors, then kept. */
    CHECK(!launch(&long_kernel, 4096, 400.0, &timed) && !timed);
    CHECK(!launch(&long_kernel, 4096, 400.0, &timed) && timed);
    CHECK(launch(&long_kernel, 4096, 100.0, &timed) && timed);
    CHECK(launch(&long_kernel, 4096, 100.0, &timed) && timed);
    CHECK(launch(&long_kernel, 4096, 100.0, &timed) && !timed);

    /* 400 us without, 500 us with: tried, then left without. */
    CHECK(!launch(&slower_kernel, 4096, 400.0, &timed) && !timed);
    CHECK(!launch(&slower_kernel, 4096, 400.0, &timed) && timed);
    CHECK(launch(&slower_kernel, 4096, 500.0, &timed) && timed);
    CHECK(launch(&slower_kernel, 4096, 500.0, &timed) && timed);
    CHECK(!launch(&slower_kernel, 4096, 500.0, &timed) && !timed);

    /* Privatised for the split policy: mirrored from the first launch on,
     * never timed here, even when short. */
    for (int i = 0; i < 4; i++)
        CHECK(launch_for(&atomics_kernel, 4096, 20.0, true, &timed) && !timed);

    /* A grid-stride loop cut by iterations, as long as long_kernel: never
     * mirrored nor timed under auto; privatised, mirrored; under always,
     * mirrored. */
    static const char stride_kernel, stride_atomics_kernel;
    for (int i = 0; i < 6; i++)
        CHECK(!launch_cut(&stride_kernel, 4096, 400.0, false, true, &timed) && !timed);
    CHECK(launch_cut(&stride_atomics_kernel, 4096, 400.0, true, true, &timed) && !timed);
    mgpu_cfg.mirror = MGPU_MIRROR_ALWAYS;
    CHECK(launch_cut(&stride_kernel, 4096, 400.0, false, true, &timed) && !timed);
    mgpu_cfg.mirror = MGPU_MIRROR_AUTO;

    /* A shape split after the split policy's mirrored tries (best 100 us):
     * warm already, one launch timed without (400 us), then mirrored; one
     * whose launch without (200 us) beats its mirrored tries (300 us), as
     * a small buffer rewritten before each launch makes them, left
     * without. */
    static const char seeded_kernel, seeded_slower_kernel;
    seed_us = 100.0;
    CHECK(!launch(&seeded_kernel, 4096, 400.0, &timed) && timed);
    for (int i = 0; i < 3; i++)
        CHECK(launch(&seeded_kernel, 4096, 100.0, &timed) && !timed);
    seed_us = 300.0;
    CHECK(!launch(&seeded_slower_kernel, 4096, 200.0, &timed) && timed);
    for (int i = 0; i < 3; i++)
        CHECK(!launch(&seeded_slower_kernel, 4096, 200.0, &timed) && !timed);
    seed_us = 0.0;

    struct mgpu_mirror_policy_stats stats;
    mgpu_mirror_policy_stats(&stats);
    CHECK(stats.decided == 5 && stats.mirrored == 2 && stats.privatised == 2);

    /* Under the budget for trying (2 % plus 5 ms): a mirrored try whose
     * copies would take 8 ms waits, unmirrored and untimed, until the
     * program's kernels have run 150 ms; then it is tried. */
    static const char dear_kernel;
    mgpu_cfg.try_budget_off = false;
    mgpu_cfg.try_budget_percent = 2.0;
    mgpu_cfg.try_budget_ms = 5.0;
    mgpu_try_budget_reset(); /* the tries above were charged too */
    copies = 8000.0;
    CHECK(!launch(&dear_kernel, 4096, 400.0, &timed) && !timed);
    CHECK(!launch(&dear_kernel, 4096, 400.0, &timed) && timed);
    for (int i = 0; i < 4; i++)
        CHECK(!launch(&dear_kernel, 4096, 400.0, &timed) && !timed);
    mgpu_try_budget_ran(150000.0);
    CHECK(launch(&dear_kernel, 4096, 5000.0, &timed) && timed);
    /* It lost 4.6 ms: charged, and its second try waits again. */
    CHECK(!launch(&dear_kernel, 4096, 400.0, &timed) && !timed);
    struct mgpu_try_budget_stats b;
    mgpu_try_budget_stats(&b);
    CHECK(fabs(b.spent_by_us[MGPU_TRY_MIRROR] - 4600.0) < 0.01 &&
          b.put_off_by[MGPU_TRY_MIRROR] == 5);
    return check_failures;
}
