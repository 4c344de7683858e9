/* Owns the budget for trying (see try_budget.h): the program's GPU time
 * as the policies measured it, what the tries cost, and the refusals. */
#include "base/try_budget.h"

#include "base/config.h"
#include "base/log.h"

#include <pthread.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_try_budget_stats ledger;

static const char *const kind_names[MGPU_TRY_KINDS] = {"a split trial", "a mirrored trial",
                                                       "a GEMM cut trial", "a placement move"};

/* Under lock. */
static double limit_us(void)
{
    return mgpu_cfg.try_budget_percent / 100.0 * ledger.ran_us + mgpu_cfg.try_budget_ms * 1e3;
}

void mgpu_try_budget_ran(double us)
{
    if (!(us > 0.0))
        return;
    pthread_mutex_lock(&lock);
    ledger.ran_us += us;
    pthread_mutex_unlock(&lock);
}

bool mgpu_try_budget_allows(enum mgpu_try_kind kind, double expected_us)
{
    if (mgpu_cfg.try_budget_off || mgpu_cfg.split != MGPU_SPLIT_AUTO)
        return true;
    if (!(expected_us > 0.0))
        expected_us = 0.0;
    pthread_mutex_lock(&lock);
    double limit = limit_us();
    bool allowed = ledger.spent_us + expected_us <= limit;
    unsigned long refusals = 0;
    if (!allowed) {
        refusals = ++ledger.put_off;
        ledger.put_off_by[kind]++;
    }
    double spent = ledger.spent_us, ran = ledger.ran_us;
    pthread_mutex_unlock(&lock);
    if (refusals == 1)
        mgpu_info("trying: %s is put off: tries have cost %.3f ms and this one may cost %.3f ms, "
                  "over the budget of %.3f ms (MGPU_TRY_BUDGET: %g %% of the %.3f ms the "
                  "program's kernels have run, plus %g ms); tried again as the program runs on",
                  kind_names[kind], spent / 1e3, expected_us / 1e3, limit / 1e3,
                  mgpu_cfg.try_budget_percent, ran / 1e3, mgpu_cfg.try_budget_ms);
    return allowed;
}

void mgpu_try_budget_spend(enum mgpu_try_kind kind, double us)
{
    if (!(us > 0.0))
        return;
    pthread_mutex_lock(&lock);
    ledger.spent_us += us;
    ledger.spent_by_us[kind] += us;
    pthread_mutex_unlock(&lock);
}

void mgpu_try_budget_stats(struct mgpu_try_budget_stats *out)
{
    pthread_mutex_lock(&lock);
    *out = ledger;
    out->limited = !mgpu_cfg.try_budget_off && mgpu_cfg.split == MGPU_SPLIT_AUTO;
    out->limit_us = limit_us();
    pthread_mutex_unlock(&lock);
}

void mgpu_try_budget_reset(void)
{
    pthread_mutex_lock(&lock);
    memset(&ledger, 0, sizeof ledger);
    pthread_mutex_unlock(&lock);
}
