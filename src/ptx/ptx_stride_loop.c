/* Owns finding a kernel's grid-stride loop and rewriting it to run a range
 * of iterations per GPU (see ptx_stride_loop.h). */
#include "ptx/ptx_stride_loop.h"

#include "ptx/ptx_edit.h"
#include "ptx/ptx_passes.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum value {
    V_OTHER,
    V_CTAID,
    V_NTID,
    V_TID,
    V_NCTAID,
    V_CTAID_NTID, /* blockIdx.x * blockDim.x */
    V_GTID,       /* blockIdx.x * blockDim.x + threadIdx.x */
    V_STEP,       /* gridDim.x * blockDim.x */
    V_PARAM,
};

/* Instructions whose first operand is read, not written. */
static const char *const no_destination[] = {"st",   "bar",    "barrier", "bra",  "brx",
                                             "ret",  "exit",   "red",     "call", "prefetch",
                                             "trap", "membar", "fence",   NULL};
/* What a loop body must not hold: control flow, barriers, warp-level
 * operations (they assume the threads that run together), calls. */
static const char *const body_forbidden[] = {
    "bra",      "brx",  "ret",      "exit",           "call",       "bar",
    "barrier",  "shfl", "vote",     "match",          "activemask", "redux",
    "elect",    "trap", "wgmma",    "wmma",           "mma",        "ldmatrix",
    "stmatrix", "cp",   "mbarrier", "griddepcontrol", NULL};
/* Special registers a body must not read: they tie an iteration to the
 * thread that runs it. */
static const char *const special_prefixes[] = {"%tid",
                                               "%ntid",
                                               "%ctaid",
                                               "%nctaid",
                                               "%laneid",
                                               "%warpid",
                                               "%nwarpid",
                                               "%smid",
                                               "%nsmid",
                                               "%gridid",
                                               "%cluster",
                                               "%lanemask",
                                               "%clock",
                                               "%globaltimer",
                                               "%is_explicit_cluster",
                                               "%dynamic_smem_size",
                                               "%total_smem_size",
                                               NULL};

static bool is_register(struct ptx_str s)
{
    if (s.n < 2 || s.p[0] != '%')
        return false;
    for (size_t i = 1; i < s.n; i++) {
        char c = s.p[i];
        if (!(c == '_' || c == '$' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
              (c >= 'A' && c <= 'Z')))
            return false;
    }
    return true;
}

static const struct ptx_instruction *instruction_at(const struct ptx_function *f, size_t i)
{
    return f->body[i]->kind == PTX_INSTRUCTION ? &f->body[i]->u.ins : NULL;
}

/* The register an instruction writes, or an empty string. */
static struct ptx_str destination(const struct ptx_instruction *ins)
{
    struct ptx_str none = {"", 0};
    if (ins->nops == 0 || ptx_str_in(ins->opcode, no_destination) || !is_register(ins->ops[0]))
        return none;
    return ins->ops[0];
}

struct name_check {
    struct ptx_str name;
    bool found;
};

static void find_name(struct ptx_str name, void *ctx)
{
    struct name_check *c = ctx;
    if (ptx_str_equal(name, c->name))
        c->found = true;
}

/* Whether the first operand is what the instruction writes: one register,
 * a vector ({%f1, %f2}) or a predicate pair (%p1|%p2), not an address. */
static bool writes_first_operand(const struct ptx_instruction *ins)
{
    return ins->nops > 0 && ins->ops[0].n > 0 && ins->ops[0].p[0] != '[' &&
           !ptx_str_in(ins->opcode, no_destination);
}

static bool writes(const struct ptx_instruction *ins, struct ptx_str reg)
{
    struct name_check c = {reg, false};
    if (writes_first_operand(ins))
        ptx_for_each_name(ins->ops[0], find_name, &c);
    return c.found;
}

/* Where `reg` is written: the count, and the last place. */
static int definitions(const struct ptx_function *f, struct ptx_str reg, size_t *where)
{
    int count = 0;
    for (size_t i = 0; i < f->nbody; i++) {
        const struct ptx_instruction *ins = instruction_at(f, i);
        if (ins != NULL && writes(ins, reg)) {
            count++;
            *where = i;
        }
    }
    return count;
}

static bool type_is(const struct ptx_instruction *ins, const char *const *types)
{
    return ins->nmods > 0 && ptx_str_in(ins->mods[ins->nmods - 1], types);
}

static const char *const integer_types[] = {"u32", "s32", "u64", "s64", "b32", "b64", NULL};

static int param_index(const struct ptx_function *f, struct ptx_str operand)
{
    if (operand.n < 3 || operand.p[0] != '[' || operand.p[operand.n - 1] != ']')
        return -1;
    struct ptx_str name = {operand.p + 1, operand.n - 2};
    for (size_t i = 0; i < f->nparams; i++)
        if (ptx_str_equal(f->params[i].name, name))
            return (int)i;
    return -1;
}

static enum value value_of(const struct ptx_function *f, struct ptx_str operand, int depth,
                           int *param);

static bool pair_is(enum value a, enum value b, enum value x, enum value y)
{
    return (a == x && b == y) || (a == y && b == x);
}

/* What an instruction computes, as far as the loop's shape needs to know;
 * *param is set for a load of a kernel parameter. */
static enum value instruction_value(const struct ptx_function *f, const struct ptx_instruction *ins,
                                    int depth, int *param)
{
    if (ins->guard.n != 0 || depth > 12)
        return V_OTHER;
    struct ptx_str op = ins->opcode;
    int unused = -1;
    if ((ptx_str_is(op, "mov") || ptx_str_is(op, "cvt")) && ins->nops == 2)
        return value_of(f, ins->ops[1], depth + 1, param);
    if (ptx_str_is(op, "ld") && ptx_instruction_has_mod(ins, "param") && ins->nops == 2 &&
        type_is(ins, integer_types)) {
        *param = param_index(f, ins->ops[1]);
        return *param >= 0 ? V_PARAM : V_OTHER;
    }
    bool low_or_wide = ptx_instruction_has_mod(ins, "lo") || ptx_instruction_has_mod(ins, "wide");
    if (ptx_str_is(op, "mul") && ins->nops == 3 && low_or_wide) {
        enum value a = value_of(f, ins->ops[1], depth + 1, &unused);
        enum value b = value_of(f, ins->ops[2], depth + 1, &unused);
        if (pair_is(a, b, V_CTAID, V_NTID))
            return V_CTAID_NTID;
        if (pair_is(a, b, V_NCTAID, V_NTID))
            return V_STEP;
        return V_OTHER;
    }
    if (ptx_str_is(op, "add") && ins->nops == 3 && type_is(ins, integer_types)) {
        enum value a = value_of(f, ins->ops[1], depth + 1, &unused);
        enum value b = value_of(f, ins->ops[2], depth + 1, &unused);
        return pair_is(a, b, V_CTAID_NTID, V_TID) ? V_GTID : V_OTHER;
    }
    if (ptx_str_is(op, "mad") && ins->nops == 4 && low_or_wide) {
        enum value a = value_of(f, ins->ops[1], depth + 1, &unused);
        enum value b = value_of(f, ins->ops[2], depth + 1, &unused);
        enum value c = value_of(f, ins->ops[3], depth + 1, &unused);
        return pair_is(a, b, V_CTAID, V_NTID) && c == V_TID ? V_GTID : V_OTHER;
    }
    return V_OTHER;
}

/* What a special register, or a register written exactly once, holds. */
static enum value value_of(const struct ptx_function *f, struct ptx_str operand, int depth,
                           int *param)
{
    if (ptx_str_is(operand, "%ctaid.x"))
        return V_CTAID;
    if (ptx_str_is(operand, "%ntid.x"))
        return V_NTID;
    if (ptx_str_is(operand, "%tid.x"))
        return V_TID;
    if (ptx_str_is(operand, "%nctaid.x"))
        return V_NCTAID;
    size_t at = 0;
    if (!is_register(operand) || definitions(f, operand, &at) != 1)
        return V_OTHER;
    return instruction_value(f, instruction_at(f, at), depth, param);
}

/* Whether instruction `ins` reads `reg` (operands after a destination,
 * every operand otherwise, and its guard). */
static bool reads(const struct ptx_instruction *ins, struct ptx_str reg)
{
    struct name_check c = {reg, false};
    ptx_for_each_name(ins->guard, find_name, &c);
    uint32_t first = writes_first_operand(ins) ? 1 : 0;
    for (uint32_t i = first; i < ins->nops && !c.found; i++)
        ptx_for_each_name(ins->ops[i], find_name, &c);
    return c.found;
}

static bool reads_special(const struct ptx_instruction *ins)
{
    for (uint32_t i = 0; i < ins->nops; i++)
        for (int s = 0; special_prefixes[s] != NULL; s++) {
            size_t n = strlen(special_prefixes[s]);
            for (size_t k = 0; k + n <= ins->ops[i].n; k++)
                if (memcmp(ins->ops[i].p + k, special_prefixes[s], n) == 0)
                    return true;
        }
    return false;
}

struct loop_shape {
    size_t head, update, branch; /* the label, i += step, the back edge */
    struct ptx_str predicate;
};

/* The loop around instruction `u` (i += step): a label before it that only
 * the branch after it targets, one basic block in between. */
static bool find_loop(const struct ptx_function *f, size_t u, struct loop_shape *shape)
{
    size_t b = u + 1;
    for (; b < f->nbody; b++) {
        const struct ptx_stmt *s = f->body[b];
        if (s->kind == PTX_LABEL || s->kind == PTX_BLOCK_OPEN || s->kind == PTX_BLOCK_CLOSE)
            return false;
        if (s->kind == PTX_INSTRUCTION && ptx_str_is(s->u.ins.opcode, "bra"))
            break;
    }
    if (b >= f->nbody)
        return false;
    const struct ptx_instruction *bra = &f->body[b]->u.ins;
    if (bra->guard.n == 0 || bra->nops != 1)
        return false;
    size_t h = u;
    bool labelled = false;
    while (h > 0 && !labelled) {
        const struct ptx_stmt *s = f->body[--h];
        if (s->kind == PTX_BLOCK_OPEN || s->kind == PTX_BLOCK_CLOSE)
            return false;
        labelled = s->kind == PTX_LABEL;
    }
    if (!labelled || !ptx_str_equal(f->body[h]->u.text, bra->ops[0]))
        return false;
    /* No other branch into the loop. */
    for (size_t i = 0; i < f->nbody; i++) {
        const struct ptx_instruction *ins = instruction_at(f, i);
        if (i != b && ins != NULL && ins->nops > 0 &&
            (ptx_str_is(ins->opcode, "bra") || ptx_str_is(ins->opcode, "brx")) &&
            ptx_str_equal(ins->ops[ins->nops - 1], bra->ops[0]))
            return false;
    }
    shape->head = h;
    shape->update = u;
    shape->branch = b;
    shape->predicate = bra->guard;
    return true;
}

static size_t label_index(const struct ptx_function *f, struct ptx_str name)
{
    for (size_t i = 0; i < f->nbody; i++)
        if (f->body[i]->kind == PTX_LABEL && ptx_str_equal(f->body[i]->u.text, name))
            return i;
    return SIZE_MAX;
}

/* Whether comparison `ins` is `i < bound` (or `i >= bound` when `negated`,
 * for a branch taken on its opposite). */
static bool compares_below_bound(const struct ptx_instruction *ins,
                                 const struct ptx_stride_loop *loop, bool lt)
{
    return ins != NULL && ptx_str_is(ins->opcode, "setp") && ins->nops == 3 && ins->nmods == 2 &&
           ins->guard.n == 0 && ptx_str_equal(ins->ops[1], loop->index) &&
           ptx_str_equal(ins->ops[2], loop->bound) && ptx_str_is(ins->mods[0], lt ? "lt" : "ge");
}

/* The loop runs only while i < bound: the back edge is taken on that
 * comparison, and before the loop a comparison of the first i skips it
 * (to a label past the loop). With the bound lowered to a slice's end,
 * both then keep a thread inside the slice's iterations. */
static bool bounds_both_ways_in(const struct ptx_function *f, const struct loop_shape *shape,
                                const struct ptx_stride_loop *loop, struct ptx_str back_predicate,
                                bool back_edge_negated)
{
    size_t at = 0;
    if (definitions(f, back_predicate, &at) != 1 || at <= shape->update || at >= shape->branch ||
        !compares_below_bound(instruction_at(f, at), loop, !back_edge_negated))
        return false;
    for (size_t g = 0; g < shape->head; g++) {
        const struct ptx_instruction *guard = instruction_at(f, g);
        bool lt = compares_below_bound(guard, loop, true);
        if (!lt && !compares_below_bound(guard, loop, false))
            continue;
        for (size_t b = g + 1; b < shape->head; b++) {
            const struct ptx_instruction *bra = instruction_at(f, b);
            if (bra == NULL || !ptx_str_is(bra->opcode, "bra") || bra->nops != 1)
                continue;
            struct ptx_str p = bra->guard;
            bool negated = p.n > 0 && p.p[0] == '!';
            struct ptx_str name = negated ? (struct ptx_str){p.p + 1, p.n - 1} : p;
            size_t target = label_index(f, bra->ops[0]);
            if (ptx_str_equal(name, guard->ops[0]) && negated == lt && target != SIZE_MAX &&
                target > shape->branch)
                return true;
        }
    }
    return false;
}

#define WRITTEN_MAX 8

struct written {
    struct ptx_str names[WRITTEN_MAX];
    int count; /* WRITTEN_MAX + 1 when there were more */
};

static void add_written(struct ptx_str name, void *ctx)
{
    struct written *w = ctx;
    if (w->count < WRITTEN_MAX)
        w->names[w->count] = name;
    if (w->count <= WRITTEN_MAX)
        w->count++;
}

/* Whether `reg`, written at body instruction `at`, is read only after that
 * and before the iteration ends (or, the back edge's predicate, by the
 * back edge). */
static bool stays_in_iteration(const struct ptx_function *f, const struct loop_shape *shape,
                               size_t at, struct ptx_str reg, struct ptx_str back_predicate)
{
    for (size_t j = 0; j < f->nbody; j++) {
        const struct ptx_instruction *other = instruction_at(f, j);
        if (other == NULL || !reads(other, reg))
            continue;
        bool before_in_body = j > shape->head && j <= at;
        bool outside = j <= shape->head || j >= shape->branch;
        bool back_edge = j == shape->branch && ptx_str_equal(reg, back_predicate);
        if (before_in_body || (outside && !back_edge))
            return false;
    }
    return true;
}

/* Every instruction reading i outside the body is a comparison with the
 * same bound; in the body no register but i is read before it is written
 * or read after the loop; nothing in the body ties an iteration to a
 * thread. */
static bool loop_is_independent(const struct ptx_function *f, const struct loop_shape *shape,
                                struct ptx_stride_loop *loop)
{
    struct ptx_str negated = shape->predicate;
    bool back_edge_negated = negated.n > 0 && negated.p[0] == '!';
    struct ptx_str back_predicate =
        back_edge_negated ? (struct ptx_str){negated.p + 1, negated.n - 1} : negated;
    int compares = 0;
    for (size_t i = 0; i < f->nbody; i++) {
        const struct ptx_instruction *ins = instruction_at(f, i);
        if (ins == NULL)
            continue;
        bool in_body = i > shape->head && i < shape->branch;
        if (in_body && (ptx_str_in(ins->opcode, body_forbidden) || reads_special(ins)))
            return false;
        if (i != shape->update && reads(ins, loop->step))
            return false;
        if (ptx_str_is(ins->opcode, "setp") && ins->nops == 3 &&
            ptx_str_equal(ins->ops[1], loop->index)) {
            if (ins->nmods != 2 || !type_is(ins, integer_types) ||
                !(ptx_str_is(ins->mods[0], "lt") || ptx_str_is(ins->mods[0], "ge")))
                return false;
            if (compares++ == 0) {
                loop->bound = ins->ops[2];
                loop->compare_type = ins->mods[1];
            } else if (!ptx_str_equal(loop->bound, ins->ops[2]) ||
                       !ptx_str_equal(loop->compare_type, ins->mods[1])) {
                return false;
            }
            continue;
        }
        if (!in_body && i != shape->update && reads(ins, loop->index) &&
            !ptx_str_equal(destination(ins), loop->index))
            return false;
    }
    if (compares == 0 || !bounds_both_ways_in(f, shape, loop, back_predicate, back_edge_negated))
        return false;
    /* Registers carried from one iteration to the next, or out. */
    for (size_t i = shape->head + 1; i < shape->branch; i++) {
        const struct ptx_instruction *ins = instruction_at(f, i);
        struct written w = {.count = 0};
        if (ins == NULL || !writes_first_operand(ins))
            continue;
        ptx_for_each_name(ins->ops[0], add_written, &w);
        if (w.count > WRITTEN_MAX)
            return false;
        for (int k = 0; k < w.count; k++)
            if (!ptx_str_equal(w.names[k], loop->index) &&
                !stays_in_iteration(f, shape, i, w.names[k], back_predicate))
                return false;
    }
    return true;
}

bool ptx_find_stride_loop(const struct ptx_function *f, struct ptx_stride_loop *out)
{
    if (!f->is_entry || !f->has_body)
        return false;
    int found = 0;
    struct ptx_stride_loop loop;
    for (size_t u = 0; u < f->nbody; u++) {
        const struct ptx_instruction *ins = instruction_at(f, u);
        if (ins == NULL || !ptx_str_is(ins->opcode, "add") || ins->nops != 3 || ins->guard.n != 0 ||
            !type_is(ins, integer_types) || !ptx_str_equal(ins->ops[0], ins->ops[1]) ||
            !is_register(ins->ops[2]))
            continue;
        struct ptx_stride_loop candidate = {0};
        candidate.index = ins->ops[0];
        candidate.step = ins->ops[2];
        int unused = -1;
        if (value_of(f, candidate.step, 0, &unused) != V_STEP)
            continue;
        /* i: written here and once before the loop, as the thread's index. */
        size_t init = 0, count = 0;
        for (size_t i = 0; i < f->nbody; i++) {
            const struct ptx_instruction *d = instruction_at(f, i);
            if (d != NULL && i != u && writes(d, candidate.index)) {
                init = i;
                count++;
            }
        }
        struct loop_shape shape;
        if (count != 1 || init > u || !find_loop(f, u, &shape) || init > shape.head)
            continue;
        int unused_param = -1;
        bool is_gtid = instruction_value(f, instruction_at(f, init), 0, &unused_param) == V_GTID;
        if (!is_gtid)
            continue;
        const struct ptx_str t = ins->mods[ins->nmods - 1];
        candidate.width = (t.n == 3 && t.p[1] == '6') ? 64 : 32;
        if (!loop_is_independent(f, &shape, &candidate))
            continue;
        struct ptx_str ct = candidate.compare_type;
        unsigned compare_width = (ct.n == 3 && ct.p[1] == '6') ? 64 : 32;
        candidate.is_signed = ct.p[0] == 's';
        candidate.bound_param = -1;
        if (compare_width != candidate.width ||
            value_of(f, candidate.bound, 0, &candidate.bound_param) != V_PARAM)
            continue;
        /* The runtime reads n from the parameter: a 32-bit loop bounded by
         * a narrowed 64-bit one would not count what the runtime counts. */
        size_t bound_size = f->params[candidate.bound_param].size;
        if (bound_size != 4 && (bound_size != 8 || candidate.width != 64))
            continue;
        loop = candidate;
        found++;
    }
    if (found != 1)
        return false;
    *out = loop;
    return true;
}

/* Rewriting: the three places, each given text that reads __mgpu_grid. */

#define ON_PREFIX                                                                                  \
    ".reg .pred %%__mgpu_on;\n.reg .b32 %%__mgpu_w;\n"                                             \
    "ld.param.u32 %%__mgpu_w, [" MGPU_PTX_GRID_PARAM "+%u];\n"                                     \
    "setp.ne.u32 %%__mgpu_on, %%__mgpu_w, 0;\n"

/* After i's first value: i - the slice's first thread + its first iteration. */
static char *init_text(struct ptx_module *m, const struct ptx_stride_loop *l)
{
    const char *i = ptx_format(m, "%.*s", (int)l->index.n, l->index.p);
    if (l->width == 64)
        return ptx_format(m,
                          "{\n" ON_PREFIX ".reg .b32 %%__mgpu_nt;\n.reg .b64 %%__mgpu_d;\n"
                          "ld.param.u32 %%__mgpu_w, [" MGPU_PTX_GRID_PARAM "+0];\n"
                          "mov.u32 %%__mgpu_nt, %%ntid.x;\n"
                          "mul.wide.u32 %%__mgpu_d, %%__mgpu_w, %%__mgpu_nt;\n"
                          "@%%__mgpu_on sub.s64 %s, %s, %%__mgpu_d;\n"
                          "ld.param.u64 %%__mgpu_d, [" MGPU_PTX_GRID_PARAM "+%u];\n"
                          "@%%__mgpu_on add.s64 %s, %s, %%__mgpu_d;\n}",
                          MGPU_PTX_GRID_SPLIT_OFFSET, i, i, MGPU_PTX_GRID_BEGIN_OFFSET, i, i);
    return ptx_format(m,
                      "{\n" ON_PREFIX ".reg .b32 %%__mgpu_nt;\n"
                      "ld.param.u32 %%__mgpu_w, [" MGPU_PTX_GRID_PARAM "+0];\n"
                      "mov.u32 %%__mgpu_nt, %%ntid.x;\n"
                      "mul.lo.u32 %%__mgpu_w, %%__mgpu_w, %%__mgpu_nt;\n"
                      "@%%__mgpu_on sub.s32 %s, %s, %%__mgpu_w;\n"
                      "ld.param.u32 %%__mgpu_w, [" MGPU_PTX_GRID_PARAM "+%u];\n"
                      "@%%__mgpu_on add.s32 %s, %s, %%__mgpu_w;\n}",
                      MGPU_PTX_GRID_SPLIT_OFFSET, i, i, MGPU_PTX_GRID_BEGIN_OFFSET, i, i);
}

/* After the step's definition: the slice's threads (the grid a slice is
 * launched with is the slice). */
static char *step_text(struct ptx_module *m, const struct ptx_stride_loop *l)
{
    return ptx_format(m,
                      "{\n" ON_PREFIX ".reg .b32 %%__mgpu_nb;\n.reg .b32 %%__mgpu_nt;\n"
                      "mov.u32 %%__mgpu_nb, %%nctaid.x;\n"
                      "mov.u32 %%__mgpu_nt, %%ntid.x;\n"
                      "@%%__mgpu_on %s %.*s, %%__mgpu_nb, %%__mgpu_nt;\n}",
                      MGPU_PTX_GRID_SPLIT_OFFSET, l->width == 64 ? "mul.wide.u32" : "mul.lo.u32",
                      (int)l->step.n, l->step.p);
}

/* Before a comparison of i: the bound, lowered to the slice's end. */
static char *bound_text(struct ptx_module *m, const struct ptx_stride_loop *l)
{
    unsigned bits = l->width;
    return ptx_format(m,
                      "{\n" ON_PREFIX ".reg .b%u %%__mgpu_end;\n"
                      "ld.param.u%u %%__mgpu_end, [" MGPU_PTX_GRID_PARAM "+%u];\n"
                      "min.%.*s %%__mgpu_end, %%__mgpu_end, %.*s;\n"
                      "selp.b%u %%__mgpu_end, %%__mgpu_end, %.*s, %%__mgpu_on;\n",
                      MGPU_PTX_GRID_SPLIT_OFFSET, bits, bits, MGPU_PTX_GRID_END_OFFSET,
                      (int)l->compare_type.n, l->compare_type.p, (int)l->bound.n, l->bound.p, bits,
                      (int)l->bound.n, l->bound.p);
}

static bool is_update(const struct ptx_instruction *ins, const struct ptx_stride_loop *l)
{
    return ptx_str_is(ins->opcode, "add") && ins->nops == 3 &&
           ptx_str_equal(ins->ops[0], l->index) && ptx_str_equal(ins->ops[1], l->index) &&
           ptx_str_equal(ins->ops[2], l->step);
}

int ptx_rewrite_stride_loop(struct ptx_module *m, struct ptx_function *f,
                            const struct ptx_stride_loop *loop)
{
    struct ptx_body_builder b;
    ptx_builder_init(&b, m);
    for (size_t i = 0; i < f->nbody; i++) {
        struct ptx_stmt *s = f->body[i];
        if (s->kind != PTX_INSTRUCTION) {
            ptx_builder_add(&b, s);
            continue;
        }
        const struct ptx_instruction *ins = &s->u.ins;
        if (ptx_str_is(ins->opcode, "setp") && ins->nops == 3 &&
            ptx_str_equal(ins->ops[1], loop->index)) {
            ptx_builder_add_text(&b, bound_text(m, loop));
            struct ptx_stmt *copy = ptx_copy_instruction(m, s);
            if (copy != NULL)
                copy->u.ins.ops[2] = ptx_str_of("%__mgpu_end");
            ptx_builder_add(&b, copy);
            ptx_builder_add_text(&b, "}");
            continue;
        }
        ptx_builder_add(&b, s);
        struct ptx_str d = destination(ins);
        if (ptx_str_equal(d, loop->index) && !is_update(ins, loop))
            ptx_builder_add_text(&b, init_text(m, loop));
        else if (ptx_str_equal(d, loop->step))
            ptx_builder_add_text(&b, step_text(m, loop));
    }
    return ptx_builder_finish(&b, f);
}
