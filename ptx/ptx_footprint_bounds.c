/* Owns what is read off a footprint (see ptx_footprint.h): its nodes as
 * text, and their bounds at a launch over a slice of blocks, per slot the
 * bytes read and written. No PTX: the runtime's estimate uses this alone. */
#include "ptx/ptx_footprint.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Values beyond this are "unbounded": no buffer is that large, and sums
 * and products of two such stay within a 128-bit intermediate. */
#define FP_LIMIT (1ll << 62)
/* How deep an evaluation follows nodes (each refers to earlier ones). */
#define FP_EVAL_DEPTH 256

static const char *const special_text[MGPU_FP_SPECIAL_COUNT] = {
    "tid.x",   "tid.y",   "tid.z",   "ntid.x",   "ntid.y",   "ntid.z",
    "ctaid.x", "ctaid.y", "ctaid.z", "nctaid.x", "nctaid.y", "nctaid.z"};

/* --- text ---------------------------------------------------------------- */

struct text {
    char *buf;
    size_t size, len;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
    if (t->len >= t->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
    va_end(ap);
    if (w > 0)
        t->len += (size_t)w;
}

static void node_text(const struct mgpu_kernel_footprint *fp, int n, struct text *t, int depth,
                      bool in_product)
{
    if (depth > 32 || t->len >= t->size) {
        put(t, "...");
        return;
    }
    const struct mgpu_fp_node *x = &fp->nodes[n];
    switch ((enum mgpu_fp_op)x->op) {
    case MGPU_FP_TOP:
        put(t, "?");
        return;
    case MGPU_FP_SYMBOL:
        put(t, "&var");
        return;
    case MGPU_FP_CONST:
        put(t, "%lld", x->value);
        return;
    case MGPU_FP_SPECIAL:
        put(t, "%s", special_text[x->value]);
        return;
    case MGPU_FP_PARAM:
        if (x->offset != 0)
            put(t, "param%lld[%u]", x->value, x->offset);
        else
            put(t, "param%lld", x->value);
        return;
    case MGPU_FP_ADD:
    case MGPU_FP_SUB:
        if (in_product)
            put(t, "(");
        node_text(fp, x->a, t, depth + 1, false);
        if (x->op == MGPU_FP_ADD && fp->nodes[x->b].op == MGPU_FP_CONST &&
            fp->nodes[x->b].value < 0)
            put(t, " - %lld", -fp->nodes[x->b].value);
        else {
            put(t, x->op == MGPU_FP_ADD ? " + " : " - ");
            node_text(fp, x->b, t, depth + 1, x->op == MGPU_FP_SUB);
        }
        if (in_product)
            put(t, ")");
        return;
    case MGPU_FP_MUL:
        node_text(fp, x->a, t, depth + 1, true);
        put(t, "*");
        node_text(fp, x->b, t, depth + 1, true);
        return;
    case MGPU_FP_MIN:
    case MGPU_FP_MAX:
    case MGPU_FP_SELECT:
        put(t, "%s(", x->op == MGPU_FP_MIN ? "min" : x->op == MGPU_FP_MAX ? "max" : "either");
        node_text(fp, x->a, t, depth + 1, false);
        put(t, ", ");
        node_text(fp, x->b, t, depth + 1, false);
        put(t, ")");
        return;
    case MGPU_FP_DIV:
    case MGPU_FP_REM:
    case MGPU_FP_AND:
        put(t, "(");
        node_text(fp, x->a, t, depth + 1, true);
        put(t,
            x->op == MGPU_FP_DIV   ? " / %lld)"
            : x->op == MGPU_FP_REM ? " %% %lld)"
                                   : " & %#llx)",
            x->value);
        return;
    case MGPU_FP_WRAP:
        put(t, "%c%u(", x->is_signed ? 's' : 'u', 8u * x->bytes);
        node_text(fp, x->a, t, depth + 1, false);
        put(t, ")");
        return;
    }
}

const char *mgpu_fp_node_text(const struct mgpu_kernel_footprint *fp, int n, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    struct text t = {buf, size, 0};
    buf[0] = '\0';
    node_text(fp, n, &t, 0, false);
    if (t.len >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
    return buf;
}

/* --- intervals at a launch ----------------------------------------------- */

struct bounds {
    bool known; /* false: unbounded */
    long long lo, hi;
};

struct evaluation {
    const struct mgpu_kernel_footprint *fp;
    const struct mgpu_fp_launch *l;
    int dim;
    unsigned begin, end;
    struct bounds *memo;
    unsigned char *state; /* 0 not yet, 1 done */
};

static struct bounds unbounded(void)
{
    return (struct bounds){false, 0, 0};
}

static struct bounds clamp(__int128 lo, __int128 hi)
{
    if (lo < -FP_LIMIT || hi > FP_LIMIT)
        return unbounded();
    return (struct bounds){true, (long long)lo, (long long)hi};
}

static struct bounds exactly(long long v)
{
    return (struct bounds){true, v, v};
}

static bool read_param(const struct mgpu_fp_launch *l, const struct mgpu_fp_node *x, long long *v)
{
    size_t p = (size_t)x->value;
    if (l->params == NULL || p >= l->nparams || l->params[p] == NULL ||
        (l->param_size != NULL && (size_t)x->offset + x->bytes > l->param_size[p]))
        return false;
    const unsigned char *at = (const unsigned char *)l->params[p] + x->offset;
    switch (x->bytes) {
    case 1:
        *v = x->is_signed ? (long long)*(const int8_t *)at : (long long)*at;
        return true;
    case 2: {
        uint16_t u;
        memcpy(&u, at, 2);
        *v = x->is_signed ? (long long)(int16_t)u : (long long)u;
        return true;
    }
    case 4: {
        uint32_t u;
        memcpy(&u, at, 4);
        *v = x->is_signed ? (long long)(int32_t)u : (long long)u;
        return true;
    }
    case 8: {
        int64_t s;
        memcpy(&s, at, 8);
        *v = s;
        return true;
    }
    default:
        return false;
    }
}

static long long divide(long long a, long long c, bool floor)
{
    long long q = a / c;
    if (floor && (a % c) != 0 && a < 0)
        q--;
    return q;
}

static struct bounds eval(struct evaluation *e, int n, int depth);

static struct bounds eval_node(struct evaluation *e, const struct mgpu_fp_node *x, int depth)
{
    const struct mgpu_fp_launch *l = e->l;
    switch ((enum mgpu_fp_op)x->op) {
    case MGPU_FP_TOP:
    case MGPU_FP_SYMBOL:
        return unbounded();
    case MGPU_FP_CONST:
        return exactly(x->value);
    case MGPU_FP_SPECIAL: {
        int d = (int)(x->value % 3);
        switch (x->value / 3) {
        case 0: /* tid */
            return l->block[d] == 0 ? unbounded() : (struct bounds){true, 0, l->block[d] - 1ll};
        case 1: /* ntid */
            return exactly(l->block[d]);
        case 2: /* ctaid */
            if (d == e->dim)
                return e->end <= e->begin ? unbounded()
                                          : (struct bounds){true, e->begin, e->end - 1ll};
            return l->grid[d] == 0 ? unbounded() : (struct bounds){true, 0, l->grid[d] - 1ll};
        default: /* nctaid: the whole grid's, as the rewritten kernels see it */
            return exactly(l->grid[d]);
        }
    }
    case MGPU_FP_PARAM: {
        long long v;
        return read_param(l, x, &v) ? exactly(v) : unbounded();
    }
    default:
        break;
    }
    struct bounds a = eval(e, x->a, depth + 1);
    if (x->op == MGPU_FP_WRAP) {
        __int128 lo, hi;
        if (x->bytes >= 8) {
            if (!x->is_signed && a.known && a.lo < 0)
                return unbounded(); /* a negative number as unsigned: past any buffer */
            return a;
        }
        unsigned bits = 8u * x->bytes;
        lo = x->is_signed ? -((__int128)1 << (bits - 1)) : 0;
        hi = x->is_signed ? ((__int128)1 << (bits - 1)) - 1 : ((__int128)1 << bits) - 1;
        if (a.known && a.lo >= lo && a.hi <= hi)
            return a;
        return clamp(lo, hi);
    }
    if (x->op == MGPU_FP_AND) {
        if (a.known && a.lo >= 0)
            return (struct bounds){true, 0, a.hi < x->value ? a.hi : x->value};
        return (struct bounds){true, 0, x->value};
    }
    if (x->op == MGPU_FP_REM) {
        long long m = x->value - 1;
        if (a.known && a.lo >= 0)
            return (struct bounds){true, 0, a.hi < m ? a.hi : m};
        return x->is_signed ? (struct bounds){true, -m, m} : (struct bounds){true, 0, m};
    }
    if (!a.known)
        return unbounded();
    if (x->op == MGPU_FP_DIV) {
        if (!x->is_signed && a.lo < 0)
            return unbounded();
        return (struct bounds){true, divide(a.lo, x->value, x->floor),
                               divide(a.hi, x->value, x->floor)};
    }
    struct bounds b = eval(e, x->b, depth + 1);
    if (!b.known)
        return unbounded();
    switch ((enum mgpu_fp_op)x->op) {
    case MGPU_FP_ADD:
        return clamp((__int128)a.lo + b.lo, (__int128)a.hi + b.hi);
    case MGPU_FP_SUB:
        return clamp((__int128)a.lo - b.hi, (__int128)a.hi - b.lo);
    case MGPU_FP_MUL: {
        __int128 p[4] = {(__int128)a.lo * b.lo, (__int128)a.lo * b.hi, (__int128)a.hi * b.lo,
                         (__int128)a.hi * b.hi};
        __int128 lo = p[0], hi = p[0];
        for (int i = 1; i < 4; i++) {
            lo = p[i] < lo ? p[i] : lo;
            hi = p[i] > hi ? p[i] : hi;
        }
        return clamp(lo, hi);
    }
    case MGPU_FP_MIN:
        return (struct bounds){true, a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
    case MGPU_FP_MAX:
        return (struct bounds){true, a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
    case MGPU_FP_SELECT:
        return (struct bounds){true, a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
    default:
        return unbounded();
    }
}

static struct bounds eval(struct evaluation *e, int n, int depth)
{
    if (n < 0 || (size_t)n >= e->fp->nnodes || depth > FP_EVAL_DEPTH)
        return unbounded();
    if (e->state[n])
        return e->memo[n];
    struct bounds r = eval_node(e, &e->fp->nodes[n], depth);
    e->memo[n] = r;
    e->state[n] = 1;
    return r;
}

static bool start_evaluation(struct evaluation *e, const struct mgpu_kernel_footprint *fp,
                             const struct mgpu_fp_launch *l, int dim, unsigned begin, unsigned end)
{
    e->fp = fp;
    e->l = l;
    e->dim = dim;
    e->begin = begin;
    e->end = end;
    e->memo = malloc(fp->nnodes * sizeof *e->memo + 1);
    e->state = calloc(fp->nnodes + 1, 1);
    if (e->memo == NULL || e->state == NULL) {
        free(e->memo);
        free(e->state);
        return false;
    }
    return true;
}

bool mgpu_fp_node_bounds(const struct mgpu_kernel_footprint *fp, int n,
                         const struct mgpu_fp_launch *l, int dim, unsigned begin, unsigned end,
                         long long *lo, long long *hi)
{
    struct evaluation e;
    if (!start_evaluation(&e, fp, l, dim, begin, end))
        return false;
    struct bounds r = eval(&e, n, 0);
    free(e.memo);
    free(e.state);
    *lo = r.lo;
    *hi = r.hi;
    return r.known;
}

static void widen(struct mgpu_fp_range *r, long long lo, long long hi)
{
    if (!r->any) {
        r->any = true;
        r->lo = lo;
        r->hi = hi;
        return;
    }
    r->lo = lo < r->lo ? lo : r->lo;
    r->hi = hi > r->hi ? hi : r->hi;
}

void mgpu_fp_slice(const struct mgpu_kernel_footprint *fp, const struct mgpu_fp_launch *l, int dim,
                   unsigned begin, unsigned end, struct mgpu_fp_range *reads,
                   struct mgpu_fp_range *writes)
{
    struct evaluation e;
    bool ok = !fp->unknown && start_evaluation(&e, fp, l, dim, begin, end);
    for (size_t s = 0; s < fp->nslots; s++) {
        unsigned whole = ok ? fp->slots[s].whole : MGPU_FP_LOAD | MGPU_FP_STORE;
        reads[s] = (struct mgpu_fp_range){0};
        writes[s] = (struct mgpu_fp_range){0};
        reads[s].whole = reads[s].any = (whole & (MGPU_FP_LOAD | MGPU_FP_ATOMIC)) != 0;
        writes[s].whole = writes[s].any = (whole & (MGPU_FP_STORE | MGPU_FP_ATOMIC)) != 0;
    }
    if (!ok)
        return;
    for (size_t i = 0; i < fp->naccesses; i++) {
        const struct mgpu_fp_access *a = &fp->accesses[i];
        struct bounds b = eval(&e, a->offset, 0);
        bool read = (a->use & (MGPU_FP_LOAD | MGPU_FP_ATOMIC)) != 0;
        bool write = (a->use & (MGPU_FP_STORE | MGPU_FP_ATOMIC)) != 0;
        struct mgpu_fp_range *r[2] = {read ? &reads[a->slot] : NULL,
                                      write ? &writes[a->slot] : NULL};
        for (int k = 0; k < 2; k++) {
            if (r[k] == NULL || r[k]->whole)
                continue;
            if (!b.known) {
                r[k]->whole = r[k]->any = true;
                continue;
            }
            widen(r[k], b.lo, b.hi + (long long)a->bytes);
        }
    }
    free(e.memo);
    free(e.state);
}
