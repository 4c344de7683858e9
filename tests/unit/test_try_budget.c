/* Unit tests of the budget for trying (base/try_budget.c): the budget is a
 * share of the GPU time the policies counted plus a fixed allowance; a try
 * is allowed while what was charged plus what it is expected to cost fits
 * (a try that may cost more than the whole budget is refused even with
 * nothing charged), refusals are counted per kind, a charge below zero
 * counts nothing, and MGPU_TRY_BUDGET=off allows everything while still
 * charging, as does any MGPU_SPLIT but auto. */
#include "check.h"
#include "base/config.h"
#include "base/try_budget.h"

struct mgpu_config mgpu_cfg;

int main(void)
{
    mgpu_cfg.try_budget_percent = 2.0;
    mgpu_cfg.try_budget_ms = 5.0;
    struct mgpu_try_budget_stats b;

    /* Nothing run yet: 5 ms to spend. */
    CHECK(mgpu_try_budget_allows(MGPU_TRY_SPLIT, 0.0));
    CHECK(mgpu_try_budget_allows(MGPU_TRY_MIRROR, 5000.0));
    CHECK(!mgpu_try_budget_allows(MGPU_TRY_MIRROR, 5001.0));
    CHECK(!mgpu_try_budget_allows(MGPU_TRY_MOVE, 1e9));
    mgpu_try_budget_stats(&b);
    CHECK(b.limited && b.limit_us == 5000.0 && b.put_off == 2 &&
          b.put_off_by[MGPU_TRY_MIRROR] == 1 && b.put_off_by[MGPU_TRY_MOVE] == 1 &&
          b.put_off_by[MGPU_TRY_SPLIT] == 0);

    /* A move of 4 ms and a split that lost 1.5 ms: 5.5 ms charged, over
     * the 5 ms, so even a try expected to cost nothing waits. */
    mgpu_try_budget_spend(MGPU_TRY_MOVE, 4000.0);
    mgpu_try_budget_spend(MGPU_TRY_SPLIT, 1500.0);
    mgpu_try_budget_spend(MGPU_TRY_SPLIT, -300.0); /* faster than the way it replaced */
    mgpu_try_budget_stats(&b);
    CHECK(b.spent_us == 5500.0 && b.spent_by_us[MGPU_TRY_SPLIT] == 1500.0 &&
          b.spent_by_us[MGPU_TRY_MOVE] == 4000.0);
    CHECK(!mgpu_try_budget_allows(MGPU_TRY_GEMM, 0.0));

    /* 25 ms of kernels add 0.5 ms: 5.5 ms, and a try of nothing fits;
     * 50 ms more, 6.5 ms: one of 1 ms fits, one of 1.1 ms does not. */
    mgpu_try_budget_ran(25000.0);
    mgpu_try_budget_ran(-1.0); /* nothing */
    CHECK(mgpu_try_budget_allows(MGPU_TRY_GEMM, 0.0));
    CHECK(mgpu_try_budget_allows(MGPU_TRY_GEMM, -50.0)); /* expected to gain: costs nothing */
    mgpu_try_budget_ran(50000.0);
    CHECK(mgpu_try_budget_allows(MGPU_TRY_SPLIT, 1000.0));
    CHECK(!mgpu_try_budget_allows(MGPU_TRY_SPLIT, 1100.0));
    mgpu_try_budget_stats(&b);
    CHECK(b.ran_us == 75000.0 && b.limit_us == 6500.0 && b.put_off == 4);

    /* Under MGPU_SPLIT=always (for tests) nothing is a try to weigh. */
    mgpu_cfg.split = MGPU_SPLIT_ALWAYS;
    CHECK(mgpu_try_budget_allows(MGPU_TRY_MOVE, 1e12));
    mgpu_try_budget_stats(&b);
    CHECK(!b.limited && b.put_off == 4);
    mgpu_cfg.split = MGPU_SPLIT_AUTO;

    /* Off: everything allowed, and still charged for the report. */
    mgpu_cfg.try_budget_off = true;
    CHECK(mgpu_try_budget_allows(MGPU_TRY_MOVE, 1e12));
    mgpu_try_budget_spend(MGPU_TRY_MIRROR, 100.0);
    mgpu_try_budget_stats(&b);
    CHECK(!b.limited && b.spent_us == 5600.0 && b.put_off == 4);

    mgpu_try_budget_reset();
    mgpu_try_budget_stats(&b);
    CHECK(b.spent_us == 0.0 && b.ran_us == 0.0 && b.put_off == 0);
    return check_failures;
}
