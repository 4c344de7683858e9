/* The budget for trying (issue 45, item 4): what mgpu's learning may cost a
 * program. Every try of a way the program would not have run (a split
 * trial, a mirrored trial, a GEMM cut trial, a placement move) is charged
 * here with what it cost over the program's own way; a try starts only
 * while what the tries have cost so far, plus what this one is expected to
 * lose, fits in MGPU_TRY_BUDGET (default 2 % of the program's GPU time so
 * far plus 5 ms). The program's GPU time is what the policies have
 * measured of its launches (each launch counted at the best time of the
 * way it ran), the same with or without --report. A try whose cost is
 * known only after it (a trial slower than expected) can overrun the
 * budget by its own loss; no try starts after that until the program's
 * GPU time has caught up. Only MGPU_SPLIT=auto tries: under always and
 * never, everything is allowed (and still charged). Thread-safe; no
 * driver. */
#ifndef MGPU_TRY_BUDGET_H
#define MGPU_TRY_BUDGET_H

#include <stdbool.h>

/* What a try is, for the report's tally. */
enum mgpu_try_kind {
    MGPU_TRY_SPLIT,
    MGPU_TRY_MIRROR,
    MGPU_TRY_GEMM,
    MGPU_TRY_MOVE,
    MGPU_TRY_KINDS
};

/* One launch of the program ran (or will run) for about `us` of GPU time. */
void mgpu_try_budget_ran(double us);

/* Whether a try of `kind` expected to cost `expected_us` (0 where nothing
 * says it will lose) may start now. A refusal is counted, and said once
 * with -v. Always true under MGPU_TRY_BUDGET=off, and unless
 * MGPU_SPLIT=auto. */
bool mgpu_try_budget_allows(enum mgpu_try_kind kind, double expected_us);

/* A try of `kind` cost `us` beyond the program's own way (nothing if not
 * positive). */
void mgpu_try_budget_spend(enum mgpu_try_kind kind, double us);

struct mgpu_try_budget_stats {
    bool limited;    /* false under MGPU_TRY_BUDGET=off */
    double ran_us;   /* the program's GPU time so far, as measured */
    double spent_us; /* what the tries cost */
    double limit_us; /* the budget now */
    double spent_by_us[MGPU_TRY_KINDS];
    unsigned long put_off; /* tries refused */
    unsigned long put_off_by[MGPU_TRY_KINDS];
};
void mgpu_try_budget_stats(struct mgpu_try_budget_stats *out);

/* For tests: everything back to nothing. */
void mgpu_try_budget_reset(void);

#endif
