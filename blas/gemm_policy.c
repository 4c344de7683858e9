/* Owns the cut-or-not decisions for GEMMs under MGPU_SPLIT=auto (see
 * gemm_policy.h): a table of GEMM shapes, each with its best measured
 * whole and split times and at most one timing in flight. */
#include "blas/gemm_policy.h"

#include "base/config.h"
#include "base/log.h"
#include "base/real_driver.h"
#include "base/shape_timings.h"
#include "base/try_budget.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TABLE_SIZE 1024 /* a power of two */
/* The first cut call of a shape makes the handles, workspaces and, for
 * mirrors, NCCL's communicator on the other GPUs: on 4 x H100 the first
 * cut of an 8192^3 SGEMM took 1058 ms, 1005 of them NCCL's, against
 * 21.7 ms whole. The best of two decides, however slow the first. */
#define SPLIT_SAMPLES 2

struct shape {
    struct mgpu_shape_key key;
    struct mgpu_shape_timings t; /* the ways: [0] whole, [1] split */
    bool kept_whole;             /* the estimate said a split cannot pay, at asked_at calls */
    unsigned long calls, asked_at;
};

static pthread_mutex_t policy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shape table[TABLE_SIZE];

/* The shape's key: the routine's name (a static string) as the kernel,
 * m, n, k as the grid, and the batch, transposes, types and library as
 * the block. Sizes past 2^32 share keys modulo 2^32, which only merges
 * timings of calls that far apart in size. */
static void key_of(const struct mgpu_blas_library *lib, const struct mgpu_gemm_call *call,
                   unsigned grid[3], unsigned block[3])
{
    grid[0] = (unsigned)call->m;
    grid[1] = (unsigned)call->n;
    grid[2] = (unsigned)call->k;
    block[0] = (unsigned)call->batch;
    block[1] = (unsigned)(call->transa & 0xf) | (unsigned)(call->transb & 0xf) << 4 |
               (unsigned)(call->a_type & 0xff) << 8 | (unsigned)(call->c_type & 0xff) << 16 |
               (unsigned)(call->compute_type & 0xff) << 24;
    block[2] = (unsigned)((uintptr_t)lib >> 4) ^ (unsigned)call->form << 28;
}

/* Under policy_lock: the way is known. */
static bool decided(const struct shape *s)
{
    const struct mgpu_shape_timings *t = &s->t;
    return s->kept_whole || t->best_us[0] < MGPU_GEMM_MIN_MICROSECONDS ||
           (t->samples[0] >= 1 && t->samples[1] >= SPLIT_SAMPLES);
}

static enum mgpu_gemm_policy_whole why_whole(const struct shape *s)
{
    if (s->kept_whole)
        return MGPU_GEMM_WHOLE_ESTIMATE;
    if (s->t.best_us[0] < MGPU_GEMM_MIN_MICROSECONDS)
        return MGPU_GEMM_WHOLE_SHORT;
    return decided(s) ? MGPU_GEMM_WHOLE_MEASURED : MGPU_GEMM_WHOLE_FIRST;
}

/* Under policy_lock, for a shape called before: the way this call goes,
 * and whether it is timed. */
static bool decide(struct shape *s, const struct mgpu_gemm_call *call,
                   mgpu_gemm_estimate_fn estimate, void *estimate_arg,
                   struct mgpu_gemm_trial *trial)
{
    double whole = s->t.best_us[0], split_us = s->t.best_us[1];
    if (s->kept_whole && s->calls >= 2 * s->asked_at)
        s->kept_whole = false; /* asked again as its calls double */
    if (decided(s))
        return split_us < whole;
    if (s->t.in_flight) /* waited for, and still out: whole, untimed */
        return false;
    bool split = isfinite(whole);
    double guess = -1.0;
    if (split && !isfinite(split_us)) {
        guess = estimate != NULL ? estimate(estimate_arg, whole, s->calls) : -1.0;
        if (isnan(guess)) /* not yet known (the links being measured): whole, untimed */
            return false;
        if (guess >= whole) {
            if (s->asked_at == 0)
                mgpu_info("%s %lldx%lldx%lld stays whole: cut, its parts would wait for copies "
                          "over the links for about %.1f us against %.1f us whole (asked again "
                          "as its calls double)",
                          call->name, call->m, call->n, call->k, guess, whole);
            s->kept_whole = true;
            s->asked_at = s->calls;
            return false;
        }
    }
    /* A cut timed before its way is known is a try: only within the budget
     * for trying, expected to lose what it lost last time or what the
     * estimate says. */
    if (split &&
        !mgpu_try_budget_allows(MGPU_TRY_GEMM, (isfinite(split_us) ? split_us : guess) - whole))
        return false;
    if (!mgpu_shape_timings_arm(&s->t, split))
        return false;
    trial->shape = s;
    return split;
}

bool mgpu_gemm_policy_choose(const struct mgpu_blas_library *lib, const struct mgpu_gemm_call *call,
                             mgpu_gemm_estimate_fn estimate, void *estimate_arg,
                             struct mgpu_gemm_trial *trial, enum mgpu_gemm_policy_whole *why)
{
    trial->shape = NULL;
    trial->split = true;
    *why = MGPU_GEMM_WHOLE_SPLITS;
    if (mgpu_cfg.split == MGPU_SPLIT_ALWAYS)
        return true;
    unsigned grid[3], block[3];
    key_of(lib, call, grid, block);
    bool fresh, split = false;
    pthread_mutex_lock(&policy_lock);
    struct shape *s =
        mgpu_shape_record(table, TABLE_SIZE, sizeof *table, call->name, grid, block, &fresh);
    if (s == NULL) {
        /* A thousand shapes measured: the rest run whole, as on one GPU. */
        pthread_mutex_unlock(&policy_lock);
        trial->split = false;
        *why = MGPU_GEMM_WHOLE_FIRST;
        return false;
    }
    if (fresh)
        mgpu_shape_timings_reset(&s->t, MGPU_TRY_GEMM);
    s->calls++;
    if (!s->t.warmed) {
        s->t.warmed = true;
    } else {
        mgpu_shape_timings_collect(&s->t);
        if (s->t.in_flight && !decided(s))
            mgpu_shape_timings_await(&s->t, &policy_lock);
        split = decide(s, call, estimate, estimate_arg, trial);
        mgpu_shape_timings_ran(&s->t, split); /* the program's time, for the budget */
    }
    if (!split)
        *why = why_whole(s);
    pthread_mutex_unlock(&policy_lock);
    trial->split = split;
    return split;
}

void mgpu_gemm_trial_begin(struct mgpu_gemm_trial *trial, CUstream stream)
{
    struct shape *s = trial->shape;
    if (s != NULL && !mgpu_shape_timings_begin(&s->t, &policy_lock, stream))
        trial->shape = NULL;
}

void mgpu_gemm_trial_end(struct mgpu_gemm_trial *trial, CUstream stream, CUresult ran)
{
    struct shape *s = trial->shape;
    if (s != NULL)
        mgpu_shape_timings_end(&s->t, &policy_lock, stream, ran);
    trial->shape = NULL;
}

double mgpu_gemm_policy_tries_over_us(unsigned long *tries)
{
    pthread_mutex_lock(&policy_lock);
    double over = mgpu_shape_table_tries_over_us(table, TABLE_SIZE, sizeof table[0],
                                                 offsetof(struct shape, t), tries);
    pthread_mutex_unlock(&policy_lock);
    return over;
}

size_t mgpu_gemm_policy_describe(char (*lines)[160], size_t max)
{
    size_t used = 0;
    pthread_mutex_lock(&policy_lock);
    for (size_t i = 0; i < TABLE_SIZE && used < max; i++) {
        struct shape *s = &table[i];
        if (s->key.kernel == NULL || s->t.samples[0] == 0)
            continue;
        mgpu_shape_timings_collect(&s->t);
        const char *way = s->t.samples[1] == 0 ? "whole"
                          : decided(s) ? (s->t.best_us[1] < s->t.best_us[0] ? "cut" : "whole")
                                       : "being measured";
        char cut[48] = "never tried";
        if (s->t.samples[1] > 0)
            snprintf(cut, sizeof cut, "%.3f ms (%d tr%s)", s->t.best_us[1] / 1e3, s->t.samples[1],
                     s->t.samples[1] == 1 ? "y" : "ies");
        else if (s->kept_whole)
            snprintf(cut, sizeof cut, "never tried (the estimate)");
        snprintf(lines[used++], 160, "  measured: %.40s %ux%ux%u: whole %.3f ms, cut %s: %s",
                 (const char *)s->key.kernel, s->key.grid[0], s->key.grid[1], s->key.grid[2],
                 s->t.best_us[0] / 1e3, cut, way);
    }
    pthread_mutex_unlock(&policy_lock);
    return used;
}
