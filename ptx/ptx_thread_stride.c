/* Owns the step between neighbouring threads' global accesses (see
 * ptx_thread_stride.h): each register's value as an expression in %tid.x,
 * followed through a kernel's body, and each access's sectors per byte. */
#include "ptx/ptx_thread_stride.h"

#include "ptx/ptx_edit.h"
#include "ptx/ptx_probe_access.h"

#include <stdlib.h>
#include <string.h>

/* A value as the threads of a warp hold it, next to each other in x. */
enum lane_kind {
    LANE_UNSET,  /* a register not written yet */
    LANE_SAME,   /* the same in neighbouring threads */
    LANE_STEP,   /* %tid.x times `step`, plus the same in all */
    LANE_SCALED, /* %tid.x times a value known at run time, plus the same in all */
    LANE_OTHER,  /* anything else: loaded, divided, two different writes */
};

struct lane_value {
    enum lane_kind kind;
    long long step; /* LANE_STEP */
    bool known;     /* LANE_SAME: an immediate, `number` */
    long long number;
    /* LANE_STEP, LANE_SCALED: `offset` bytes past the value of register
     * `anchor` (-1: none yet), so that %rd9 = %rd8 + 16 is known to lie
     * 16 bytes past %rd8 in every thread */
    long anchor;
    long long offset;
};

static const struct lane_value same = {LANE_SAME, 0, false, 0, -1, 0};
static const struct lane_value other = {LANE_OTHER, 0, false, 0, -1, 0};
static const struct lane_value scaled = {LANE_SCALED, 0, false, 0, -1, 0};

struct lanes {
    struct ptx_name_set registers;
    struct lane_value *values;
    size_t cap;
};

/* Steps beyond this are all "a sector apart" or more; kept within it, no
 * product of steps and immediates overflows. */
#define STEP_LIMIT (1ll << 20)

static struct lane_value step_of(long long step)
{
    step = step > STEP_LIMIT ? STEP_LIMIT : step < -STEP_LIMIT ? -STEP_LIMIT : step;
    return (struct lane_value){LANE_STEP, step, false, 0, -1, 0};
}

/* Whether s is an immediate; *known when it is an integer, in *number. */
static bool is_immediate(struct ptx_str s, bool *known, long long *number)
{
    *known = false;
    if (s.n == 0 || !((s.p[0] >= '0' && s.p[0] <= '9') || s.p[0] == '-'))
        return false;
    /* 0f/0d: a float's bits, never an index */
    if (s.n > 1 && s.p[0] == '0' && ((s.p[1] | 0x20) == 'f' || (s.p[1] | 0x20) == 'd'))
        return true;
    char text[32];
    if (s.n >= sizeof text)
        return true;
    memcpy(text, s.p, s.n);
    text[s.n] = '\0';
    char *end;
    *number = strtoll(text, &end, 0);
    *known = end != text && (*end == '\0' || *end == 'U' || *end == 'u');
    return true;
}

/* The value of an operand (a register, a special register, an immediate,
 * a symbol's address); an address in brackets or a list is other. */
static struct lane_value operand(const struct lanes *l, struct ptx_str s)
{
    if (s.n == 0 || s.p[0] == '[' || s.p[0] == '{' || s.p[0] == '(')
        return other;
    if (s.p[0] != '%') {
        struct lane_value v = same;
        if (is_immediate(s, &v.known, &v.number))
            return v;
        return same; /* a symbol's address */
    }
    if (ptx_str_is(s, "%tid.x"))
        return step_of(1);
    static const char *const uniform[] = {"%tid.y",
                                          "%tid.z",
                                          "%ntid.",
                                          "%ctaid.",
                                          "%nctaid.",
                                          "%gridid",
                                          "%nsmid",
                                          "%nwarpid",
                                          "%envreg",
                                          "%cluster_",
                                          "%is_explicit_cluster"};
    for (size_t i = 0; i < sizeof uniform / sizeof *uniform; i++)
        if (ptx_str_starts_with(s, uniform[i]))
            return same;
    long id = ptx_name_set_find(&l->registers, s);
    return id >= 0 && l->values[id].kind != LANE_UNSET ? l->values[id] : other;
}

/* v moved by a known constant: the same anchor, `by` further. */
static struct lane_value moved(struct lane_value v, const struct lane_value *by)
{
    if (v.anchor >= 0 && by->known && by->number > -STEP_LIMIT && by->number < STEP_LIMIT)
        v.offset += by->number;
    else
        v.anchor = -1;
    return v;
}

static struct lane_value add(struct lane_value a, struct lane_value b, bool subtract)
{
    if (a.kind == LANE_OTHER || b.kind == LANE_OTHER)
        return other;
    if (b.kind == LANE_SAME) {
        if (a.kind == LANE_SAME)
            return same;
        struct lane_value by = b;
        by.number = subtract ? -b.number : b.number;
        return moved(a, &by);
    }
    if (a.kind == LANE_SAME) {
        if (subtract)
            return b.kind == LANE_STEP ? step_of(-b.step) : scaled;
        return moved(b, &a);
    }
    if (a.kind == LANE_STEP && b.kind == LANE_STEP)
        return step_of(subtract ? a.step - b.step : a.step + b.step);
    /* a pitch plus a step: the pitch's rows are what neighbours differ by */
    if ((a.kind == LANE_SCALED && b.kind == LANE_STEP) ||
        (a.kind == LANE_STEP && b.kind == LANE_SCALED))
        return scaled;
    return other;
}

static struct lane_value multiply(struct lane_value a, struct lane_value b)
{
    if (a.kind == LANE_SAME && b.kind == LANE_SAME)
        return same;
    if (a.kind == LANE_SAME) {
        struct lane_value t = a;
        a = b;
        b = t;
    }
    if (b.kind != LANE_SAME || (a.kind != LANE_STEP && a.kind != LANE_SCALED))
        return other;
    if (a.kind == LANE_SCALED || !b.known)
        return scaled;
    long long factor = b.number > STEP_LIMIT    ? STEP_LIMIT
                       : b.number < -STEP_LIMIT ? -STEP_LIMIT
                                                : b.number;
    return step_of(a.step * factor);
}

static struct lane_value shift_left(struct lane_value a, struct lane_value b)
{
    if (b.kind != LANE_SAME)
        return other;
    if (a.kind == LANE_SAME)
        return same;
    if (a.kind == LANE_SCALED || (a.kind == LANE_STEP && !b.known))
        return scaled;
    if (a.kind == LANE_STEP && b.number >= 0 && b.number < 32)
        return step_of(a.step * (1ll << b.number));
    return other;
}

/* Opcodes whose first operand is not a register they write. */
static bool writes_first_operand(struct ptx_str op)
{
    static const char *const none[] = {
        "st",      "red",       "bar",       "barrier",  "bra",   "ret",  "exit", "membar",
        "fence",   "prefetch",  "prefetchu", "trap",     "brkpt", "call", "cp",   "griddepcontrol",
        "pmevent", "nanosleep", "mbarrier",  "stmatrix", NULL};
    return !ptx_str_in(op, none);
}

/* The value instruction `ins` writes to its first operand. */
static struct lane_value evaluate(const struct lanes *l, const struct ptx_instruction *ins)
{
    struct ptx_str op = ins->opcode;
    const struct ptx_str *o = ins->ops;
    uint32_t n = ins->nops;
    if ((ptx_str_is(op, "mov") || ptx_str_is(op, "cvt") || ptx_str_is(op, "cvta")) && n == 2)
        return operand(l, o[1]);
    if ((ptx_str_is(op, "add") || ptx_str_is(op, "sub")) && n == 3 &&
        !ptx_instruction_has_mod(ins, "cc"))
        return add(operand(l, o[1]), operand(l, o[2]), ptx_str_is(op, "sub"));
    bool high = ptx_instruction_has_mod(ins, "hi");
    if ((ptx_str_is(op, "mul") || ptx_str_is(op, "mul24")) && n == 3 && !high)
        return multiply(operand(l, o[1]), operand(l, o[2]));
    if ((ptx_str_is(op, "mad") || ptx_str_is(op, "mad24")) && n == 4 && !high &&
        !ptx_instruction_has_mod(ins, "cc"))
        return add(multiply(operand(l, o[1]), operand(l, o[2])), operand(l, o[3]), false);
    if (ptx_str_is(op, "shl") && n == 3)
        return shift_left(operand(l, o[1]), operand(l, o[2]));
    if (ptx_str_is(op, "atom"))
        return other;
    if (ptx_str_is(op, "ld") || ptx_str_is(op, "ldu")) {
        enum ptx_space space = ptx_instruction_space(ins);
        bool uniform_space = space == PTX_SPACE_PARAM || space == PTX_SPACE_CONST;
        if (!uniform_space || n != 2 || o[1].n < 2)
            return other;
        struct ptx_str base, offset;
        ptx_address_parts(o[1], &base, &offset);
        return operand(l, base).kind == LANE_SAME ? same : other;
    }
    for (uint32_t i = 1; i < n; i++)
        if (operand(l, o[i]).kind != LANE_SAME)
            return other;
    return same;
}

/* Register `name` written with v: a second write must agree with the first. */
static int write(struct lanes *l, struct ptx_str name, struct lane_value v)
{
    if (name.n == 0 || name.p[0] != '%')
        return 0;
    long id = ptx_name_set_add(&l->registers, name);
    if (id < 0)
        return -1;
    if ((size_t)id >= l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        while (cap <= (size_t)id)
            cap *= 2;
        struct lane_value *grown = realloc(l->values, cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        for (size_t i = l->cap; i < cap; i++)
            grown[i] = (struct lane_value){LANE_UNSET, 0, false, 0, -1, 0};
        l->values = grown;
        l->cap = cap;
    }
    /* a value with no anchor yet is its own */
    if ((v.kind == LANE_STEP || v.kind == LANE_SCALED) && v.anchor < 0) {
        v.anchor = id;
        v.offset = 0;
    }
    struct lane_value *old = &l->values[id];
    if (old->kind == LANE_UNSET) {
        *old = v;
    } else if (old->kind != v.kind || old->step != v.step ||
               (v.kind == LANE_SAME && (old->known != v.known || old->number != v.number))) {
        *old = old->kind == LANE_SAME && v.kind == LANE_SAME ? same : other;
    } else if (old->anchor != v.anchor || old->offset != v.offset) {
        old->anchor = id; /* a loop's index: its own anchor */
        old->offset = 0;
    }
    return 0;
}

struct unfollowed {
    struct lanes *l;
    int rc;
};

/* For ptx_for_each_name: a register whose value is not followed. */
static void write_unfollowed(struct ptx_str name, void *ctx)
{
    struct unfollowed *u = ctx;
    if (u->rc == 0)
        u->rc = write(u->l, name, other);
}

/* An access through parameter `param` whose neighbouring threads lie
 * `apart` bytes apart (at most a sector), `offset` bytes past the value of
 * register `anchor`. */
struct spread_access {
    int param;
    long anchor; /* the register whose value the address is `offset` past */
    unsigned apart, bytes;
    long long offset;
};

/* "%rd4" of "[%rd4+8]": the register or symbol an address adds to; its
 * constant offset in *offset (0 when not a known integer). */
static struct ptx_str address_base_offset(struct ptx_str bracketed, long long *offset)
{
    struct ptx_str base, tail;
    ptx_address_parts(bracketed, &base, &tail);
    bool known = false;
    long long v = 0;
    *offset = is_immediate(tail, &known, &v) && known && v > -STEP_LIMIT && v < STEP_LIMIT ? v : 0;
    return base;
}

/* Access a's neighbours' distance, and where it lies from its anchor, into
 * *out; false when the neighbours lie within its own size (or where that
 * is not known). */
static bool spread_of(const struct lanes *l, const struct ptx_access *a, struct spread_access *out)
{
    if (a->bytes == 0 || a->bytes >= PTX_SECTOR_BYTES)
        return false;
    long long offset;
    struct lane_value v = operand(l, address_base_offset(a->address, &offset));
    long long apart;
    if (v.kind == LANE_SCALED)
        apart = PTX_SECTOR_BYTES;
    else if (v.kind == LANE_STEP)
        apart = v.step < 0 ? -v.step : v.step;
    else
        return false;
    if (apart > PTX_SECTOR_BYTES)
        apart = PTX_SECTOR_BYTES;
    if (apart <= a->bytes)
        return false;
    out->anchor = v.anchor;
    out->offset = v.offset + offset;
    out->apart = (unsigned)apart;
    out->bytes = a->bytes;
    return true;
}

/* Bytes a link carries per byte used by access `at` of list. Neighbouring
 * threads lie `apart` bytes apart, so what a warp's accesses past the same
 * anchor use of each gap is the union of their bytes modulo `apart` (a
 * thread's blocked load of consecutive items fills it, a transpose's column
 * stores do not). */
static unsigned scatter_of(const struct spread_access *list, size_t n, size_t at)
{
    const struct spread_access *a = &list[at];
    if (a->anchor < 0)
        return a->apart / a->bytes;
    unsigned char used[PTX_SECTOR_BYTES] = {0};
    for (size_t i = 0; i < n; i++) {
        const struct spread_access *b = &list[i];
        if (b->param != a->param || b->apart != a->apart || b->anchor != a->anchor)
            continue;
        long long from = b->offset % a->apart;
        for (unsigned byte = 0; byte < b->bytes; byte++)
            used[(unsigned long long)(from + a->apart + byte) % a->apart] = 1;
    }
    unsigned covered = 0;
    for (unsigned i = 0; i < a->apart; i++)
        covered += used[i];
    return covered > 0 && a->apart > covered ? a->apart / covered : 1;
}

int ptx_thread_scatter(const struct ptx_function *f, const int *access_param,
                       unsigned char *scatter)
{
    for (size_t p = 0; p < f->nparams; p++)
        scatter[p] = 1;
    struct lanes l;
    memset(&l, 0, sizeof l);
    struct spread_access *spread = NULL;
    size_t nspread = 0, capspread = 0;
    int rc = 0;
    /* Twice through: a loop's registers read in the first pass before
     * their back edge's write settle in the second, where accesses count. */
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        for (size_t i = 0; i < f->nbody && rc == 0; i++) {
            const struct ptx_stmt *s = f->body[i];
            if (s->kind != PTX_INSTRUCTION)
                continue;
            const struct ptx_instruction *ins = &s->u.ins;
            struct ptx_access a;
            struct spread_access sa;
            if (pass == 1 && access_param != NULL && access_param[i] >= 0 &&
                (size_t)access_param[i] < f->nparams && ptx_access_of(s, &a) &&
                spread_of(&l, &a, &sa)) {
                if (nspread == capspread) {
                    size_t cap = capspread ? 2 * capspread : 16;
                    struct spread_access *grown = realloc(spread, cap * sizeof *grown);
                    if (grown == NULL) {
                        rc = -1;
                        break;
                    }
                    spread = grown;
                    capspread = cap;
                }
                sa.param = access_param[i];
                spread[nspread++] = sa;
            }
            if (ins->nops == 0)
                continue;
            if (ptx_str_is(ins->opcode, "call") && ins->ops[0].n > 0 && ins->ops[0].p[0] == '(') {
                /* what a call returns is not followed */
                struct unfollowed u = {&l, 0};
                ptx_for_each_name(ins->ops[0], write_unfollowed, &u);
                rc = u.rc;
                continue;
            }
            if (!writes_first_operand(ins->opcode))
                continue;
            struct ptx_str dst = ins->ops[0];
            /* setp's "%p1|%p2", a vector's "{%f1, %f2}": no index */
            if (dst.n == 0 || dst.p[0] != '%' || memchr(dst.p, '|', dst.n) != NULL)
                continue;
            rc = write(&l, dst, evaluate(&l, ins));
        }
    }
    /* Quadratic in the spread accesses of one kernel, which are few; past
     * a few thousand, each counts alone. */
    for (size_t i = 0; i < nspread && rc == 0; i++) {
        unsigned k =
            nspread <= 4096 ? scatter_of(spread, nspread, i) : spread[i].apart / spread[i].bytes;
        if (k > scatter[spread[i].param])
            scatter[spread[i].param] = (unsigned char)k;
    }
    free(spread);
    ptx_name_set_free(&l.registers);
    free(l.values);
    return rc;
}
