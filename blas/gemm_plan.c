/* Owns the cutting of one GEMM into per-GPU parts (see gemm_plan.h). */
#include "blas/gemm_plan.h"

#include <string.h>

/* Column samples read when following C's owners: enough to find every
 * owner's range of a buffer cut into at most MGPU_MAX_GPUS parts, each
 * boundary then found exactly by bisection. */
#define OWNER_SAMPLES 1024

const char *mgpu_gemm_cut_name(enum mgpu_gemm_cut cut)
{
    switch (cut) {
    case MGPU_GEMM_BY_COLUMNS:
        return "columns";
    case MGPU_GEMM_BY_ROWS:
        return "rows";
    case MGPU_GEMM_BY_BATCH:
        return "batch";
    default:
        return "whole";
    }
}

static void plan_whole(struct mgpu_gemm_plan *out, long long total)
{
    memset(out, 0, sizeof *out);
    out->cut = MGPU_GEMM_WHOLE;
    out->nparts = 1;
    out->parts[0].gpu = 0;
    out->parts[0].begin = 0;
    out->parts[0].end = total;
}

/* total items over min(ngpus, total) GPUs in nearly equal runs, the inner
 * boundaries rounded to multiples of `align` where every part keeps at
 * least `align` items. */
static void plan_even(struct mgpu_gemm_plan *out, enum mgpu_gemm_cut cut, long long total,
                      int ngpus, long long align)
{
    int parts = total < ngpus ? (int)total : ngpus;
    if (align < 1 || total < (long long)parts * align)
        align = 1;
    out->cut = cut;
    out->nparts = 0;
    out->by_owner = false;
    long long begin = 0;
    for (int g = 0; g < parts; g++) {
        long long end = g + 1 == parts ? total : total * (g + 1) / parts;
        if (g + 1 < parts)
            end = (end + align / 2) / align * align;
        if (end <= begin)
            continue;
        out->parts[out->nparts].gpu = g;
        out->parts[out->nparts].begin = begin;
        out->parts[out->nparts].end = end;
        out->nparts++;
        begin = end;
    }
}

struct column_owners {
    const struct mgpu_gemm_shape *s;
    uint64_t c;
    mgpu_gemm_owner_fn owner;
    void *arg;
};

static int owner_of_column(const struct column_owners *co, long long j)
{
    return co->owner(co->c + (uint64_t)j * (uint64_t)co->s->ldc * co->s->c_bytes, co->arg);
}

/* The first column in (lo, hi] whose owner is `target`, where column lo's
 * owner comes before target and column hi's is target. */
static long long first_column_of(const struct column_owners *co, long long lo, long long hi,
                                 int target)
{
    while (hi - lo > 1) {
        long long mid = lo + (hi - lo) / 2;
        int o = owner_of_column(co, mid);
        if (o < 0)
            return -1;
        if (o >= target)
            hi = mid;
        else
            lo = mid;
    }
    return owner_of_column(co, hi) == target ? hi : -1;
}

/* Cuts C's columns where their owners change, when the owners rise
 * monotonically through at least two GPUs and no part is more than half
 * again the even share (a buffer spread over the GPUs, as the pool lays
 * out a large one). Returns false otherwise. */
static bool plan_by_owner(const struct column_owners *co, int ngpus, struct mgpu_gemm_plan *out)
{
    long long n = co->s->n;
    long long step = n / OWNER_SAMPLES > 1 ? n / OWNER_SAMPLES : 1;
    int previous = owner_of_column(co, 0);
    if (previous < 0 || previous >= ngpus)
        return false;
    out->cut = MGPU_GEMM_BY_COLUMNS;
    out->by_owner = true;
    out->nparts = 1;
    out->parts[0].gpu = previous;
    out->parts[0].begin = 0;
    long long last = 0;
    for (long long j = step; j < n + step; j += step) {
        long long col = j < n ? j : n - 1;
        int o = owner_of_column(co, col);
        if (o < 0 || o >= ngpus || o < previous)
            return false;
        if (o != previous) {
            long long first = first_column_of(co, last, col, o);
            if (first < 0 || out->nparts == MGPU_MAX_GPUS)
                return false;
            out->parts[out->nparts - 1].end = first;
            out->parts[out->nparts].gpu = o;
            out->parts[out->nparts].begin = first;
            out->nparts++;
            previous = o;
        }
        last = col;
        if (col == n - 1)
            break;
    }
    out->parts[out->nparts - 1].end = n;
    if (out->nparts < 2)
        return false;
    long long share = (n + ngpus - 1) / ngpus;
    for (int p = 0; p < out->nparts; p++)
        if (out->parts[p].end - out->parts[p].begin > share + share / 2)
            return false;
    return true;
}

void mgpu_gemm_plan_make(const struct mgpu_gemm_shape *s, int ngpus, uint64_t c,
                         mgpu_gemm_owner_fn owner, void *owner_arg, struct mgpu_gemm_plan *out)
{
    plan_whole(out, s->n);
    if (ngpus < 2 || s->m <= 0 || s->n <= 0 || s->k < 0 || s->batch <= 0)
        return;
    if (ngpus > MGPU_MAX_GPUS)
        ngpus = MGPU_MAX_GPUS;
    if (s->batch >= ngpus) {
        plan_even(out, MGPU_GEMM_BY_BATCH, s->batch, ngpus, 1);
        return;
    }
    if (s->pointer_arrays)
        return; /* the pointers sit in device memory: only whole matrices can be handed out */
    if (s->n >= ngpus) {
        struct column_owners co = {s, c, owner, owner_arg};
        if (owner != NULL && c != 0 && s->batch == 1 && plan_by_owner(&co, ngpus, out))
            return;
        plan_even(out, MGPU_GEMM_BY_COLUMNS, s->n, ngpus, 1);
        return;
    }
    if (s->m >= ngpus) {
        plan_even(out, MGPU_GEMM_BY_ROWS, s->m, ngpus, 8);
        return;
    }
    plan_whole(out, s->n);
}

void mgpu_gemm_part_shape(const struct mgpu_gemm_shape *s, const struct mgpu_gemm_plan *plan, int p,
                          struct mgpu_gemm_part_shape *out)
{
    const struct mgpu_gemm_part *part = &plan->parts[p];
    long long first = part->begin, count = part->end - part->begin;
    memset(out, 0, sizeof *out);
    out->m = s->m;
    out->n = s->n;
    out->batch = s->batch;
    switch (plan->cut) {
    case MGPU_GEMM_BY_COLUMNS:
        out->n = count;
        out->c_offset = first * s->ldc;
        out->b_offset = s->transb == MGPU_GEMM_OP_N ? first * s->ldb : first;
        break;
    case MGPU_GEMM_BY_ROWS:
        out->m = count;
        out->c_offset = first;
        out->a_offset = s->transa == MGPU_GEMM_OP_N ? first : first * s->lda;
        break;
    case MGPU_GEMM_BY_BATCH:
        out->batch = count;
        out->a_offset = out->b_offset = out->c_offset = first;
        break;
    default:
        break;
    }
}
