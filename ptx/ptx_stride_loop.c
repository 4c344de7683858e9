/* Owns finding a kernel's grid-stride loop and rewriting it to run a range
 * of iterations per GPU (see ptx_stride_loop.h). */
#include "ptx/ptx_stride_loop.h"

#include "ptx/ptx_edit.h"
#include "ptx/ptx_passes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *(*ptx_stride_loop_calloc)(size_t count, size_t size) = calloc;

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

/* --- an index of the function, built once ------------------------------------
 *
 * Every question the finder asks ("where is %r5 written?", "who reads i?",
 * "which branches go to $L__BB0_3?") is answered from this index instead of
 * a scan of the whole function, so finding the loop costs time linear in
 * the function (a scan per question made fuzzed 1.3 KB files run for
 * minutes). What is left that is not obviously linear is counted against a
 * budget of steps; a function over it is too complex to analyse. */

enum { VALUE_UNKNOWN, VALUE_KNOWN };

/* Beyond this many links of mov/cvt/mul/add/mad the value of a register is
 * not one the loop's shape needs (nvcc's are two or three links long). */
#define VALUE_DEPTH_MAX 12

struct name_info {
    uint32_t ndefs;                /* instructions that write it */
    uint32_t first_def, last_def;  /* body positions */
    uint32_t first_reader, nreaders; /* into index->readers, ascending positions */
    uint32_t last_reader_plus_one; /* while counting: the last reader recorded, + 1 */
    uint32_t checked_in_loop;      /* the loop head + 1 whose carried check saw it */
    uint8_t value_state;
    uint8_t value; /* enum value, when VALUE_KNOWN */
    int32_t param;
};

struct function_index {
    const struct ptx_function *f;
    struct ptx_name_set names; /* every name an instruction writes or reads */
    struct name_info *info;    /* per name */
    uint32_t *readers;         /* the instructions reading each name, name after name */
    struct ptx_name_set labels;
    uint32_t *label_at;       /* per label: its first position */
    uint32_t *label_branches; /* per label: branches whose target it is */
    /* Per body position: the first position at or after it that is a label,
     * '{', '}' or a bra (the end of a straight run), or nbody; and the last
     * at or before it that is a label, '{' or '}', or SIZE_MAX. */
    uint32_t *run_end, *run_start;
    uint32_t *candidates_at_head; /* per position: updates whose loop starts there */
    uint64_t steps;
    bool over_budget;
    bool out_of_memory;
};

static bool spend(struct function_index *x, uint64_t steps)
{
    x->steps += steps;
    if (x->steps > PTX_STRIDE_LOOP_BUDGET)
        x->over_budget = true;
    return !x->over_budget;
}

static struct name_info *info_of(const struct function_index *x, struct ptx_str name)
{
    long id = ptx_name_set_find(&x->names, name);
    return id < 0 ? NULL : &x->info[id];
}

/* Whether the first operand is what the instruction writes: one register,
 * a vector ({%f1, %f2}) or a predicate pair (%p1|%p2), not an address. */
static bool writes_first_operand(const struct ptx_instruction *ins)
{
    return ins->nops > 0 && ins->ops[0].n > 0 && ins->ops[0].p[0] != '[' &&
           !ptx_str_in(ins->opcode, no_destination);
}

/* Indexing walks every instruction twice: once to count definitions and
 * readers, once to place the readers. */
struct index_walk {
    struct function_index *x;
    uint32_t at;
    bool placing;
};

static void index_written(struct ptx_str name, void *ctx)
{
    struct index_walk *w = ctx;
    if (ptx_name_set_add(&w->x->names, name) < 0)
        w->x->out_of_memory = true;
}

static void index_read(struct ptx_str name, void *ctx)
{
    struct index_walk *w = ctx;
    long id = w->placing ? ptx_name_set_find(&w->x->names, name)
                         : ptx_name_set_add(&w->x->names, name);
    if (id < 0) {
        w->x->out_of_memory |= !w->placing;
        return;
    }
    if (!w->placing)
        return;
    struct name_info *n = &w->x->info[id];
    if (n->last_reader_plus_one == w->at + 1) /* read twice by one instruction */
        return;
    n->last_reader_plus_one = w->at + 1;
    w->x->readers[n->first_reader + n->nreaders++] = w->at;
}

struct def_walk {
    struct function_index *x;
    uint32_t at;
    size_t reads; /* names read, duplicates included: the readers array's bound */
};

static void count_def(struct ptx_str name, void *ctx)
{
    struct def_walk *d = ctx;
    struct name_info *n = &d->x->info[ptx_name_set_find(&d->x->names, name)];
    if (n->ndefs++ == 0)
        n->first_def = d->at;
    n->last_def = d->at;
}

static void count_read(struct ptx_str name, void *ctx)
{
    struct def_walk *d = ctx;
    struct name_info *n = &d->x->info[ptx_name_set_find(&d->x->names, name)];
    if (n->last_reader_plus_one != d->at + 1) {
        n->last_reader_plus_one = d->at + 1;
        n->nreaders++;
        d->reads++;
    }
}

static void for_each_read(const struct ptx_instruction *ins,
                          void (*fn)(struct ptx_str name, void *ctx), void *ctx)
{
    ptx_for_each_name(ins->guard, fn, ctx);
    for (uint32_t i = writes_first_operand(ins) ? 1 : 0; i < ins->nops; i++)
        ptx_for_each_name(ins->ops[i], fn, ctx);
}

static bool is_branch(const struct ptx_instruction *ins)
{
    return ptx_str_is(ins->opcode, "bra") || ptx_str_is(ins->opcode, "brx");
}

static void index_free(struct function_index *x)
{
    ptx_name_set_free(&x->names);
    ptx_name_set_free(&x->labels);
    free(x->info);
    free(x->readers);
    free(x->label_at);
    free(x->label_branches);
    free(x->run_end);
    free(x->run_start);
    free(x->candidates_at_head);
}

/* Returns 0, or -1 when memory runs out. */
static int index_build(struct function_index *x, const struct ptx_function *f)
{
    memset(x, 0, sizeof *x);
    x->f = f;
    size_t n = f->nbody;
    if (n >= PTX_STRIDE_LOOP_BUDGET) { /* too large to index in bounded time */
        x->over_budget = true;
        return 0;
    }
    /* Names and labels. */
    for (size_t i = 0; i < n && !x->out_of_memory; i++) {
        const struct ptx_stmt *s = f->body[i];
        if (s->kind == PTX_LABEL) {
            x->out_of_memory |= ptx_name_set_add(&x->labels, s->u.text) < 0;
            continue;
        }
        if (s->kind != PTX_INSTRUCTION)
            continue;
        struct index_walk w = {x, (uint32_t)i, false};
        if (writes_first_operand(&s->u.ins))
            ptx_for_each_name(s->u.ins.ops[0], index_written, &w);
        for_each_read(&s->u.ins, index_read, &w);
    }
    if (x->out_of_memory)
        return -1;
    x->info = ptx_stride_loop_calloc(x->names.count + 1, sizeof *x->info);
    x->label_at = ptx_stride_loop_calloc(x->labels.count + 1, sizeof *x->label_at);
    x->label_branches = ptx_stride_loop_calloc(x->labels.count + 1, sizeof *x->label_branches);
    x->run_end = ptx_stride_loop_calloc(n + 1, sizeof *x->run_end);
    x->run_start = ptx_stride_loop_calloc(n + 1, sizeof *x->run_start);
    x->candidates_at_head = ptx_stride_loop_calloc(n + 1, sizeof *x->candidates_at_head);
    if (!x->info || !x->label_at || !x->label_branches || !x->run_end || !x->run_start ||
        !x->candidates_at_head)
        return -1;
    /* Definitions, reader counts, labels' places and branches. */
    struct def_walk d = {x, 0, 0};
    for (size_t i = 0; i < x->labels.count; i++)
        x->label_at[i] = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        const struct ptx_stmt *s = f->body[i];
        d.at = (uint32_t)i;
        if (s->kind == PTX_LABEL) {
            long id = ptx_name_set_find(&x->labels, s->u.text);
            if (x->label_at[id] == UINT32_MAX)
                x->label_at[id] = (uint32_t)i;
            continue;
        }
        if (s->kind != PTX_INSTRUCTION)
            continue;
        const struct ptx_instruction *ins = &s->u.ins;
        if (writes_first_operand(ins))
            ptx_for_each_name(ins->ops[0], count_def, &d);
        for_each_read(ins, count_read, &d);
        if (is_branch(ins) && ins->nops > 0) {
            long id = ptx_name_set_find(&x->labels, ins->ops[ins->nops - 1]);
            if (id >= 0)
                x->label_branches[id]++;
        }
    }
    x->readers = ptx_stride_loop_calloc(d.reads + 1, sizeof *x->readers);
    if (x->readers == NULL)
        return -1;
    uint32_t next = 0;
    for (size_t k = 0; k < x->names.count; k++) {
        x->info[k].first_reader = next;
        next += x->info[k].nreaders;
        x->info[k].nreaders = 0;
        x->info[k].last_reader_plus_one = 0;
    }
    for (size_t i = 0; i < n; i++)
        if (f->body[i]->kind == PTX_INSTRUCTION) {
            struct index_walk w = {x, (uint32_t)i, true};
            for_each_read(&f->body[i]->u.ins, index_read, &w);
        }
    /* Straight runs. */
    uint32_t end = (uint32_t)n;
    for (size_t i = n; i-- > 0;) {
        const struct ptx_stmt *s = f->body[i];
        if (s->kind == PTX_LABEL || s->kind == PTX_BLOCK_OPEN || s->kind == PTX_BLOCK_CLOSE ||
            (s->kind == PTX_INSTRUCTION && ptx_str_is(s->u.ins.opcode, "bra")))
            end = (uint32_t)i;
        x->run_end[i] = end;
    }
    uint32_t start = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        const struct ptx_stmt *s = f->body[i];
        if (s->kind == PTX_LABEL || s->kind == PTX_BLOCK_OPEN || s->kind == PTX_BLOCK_CLOSE)
            start = (uint32_t)i;
        x->run_start[i] = start;
    }
    return 0;
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

/* --- values -------------------------------------------------------------------
 *
 * A register's value is derived once and remembered. A derivation cut
 * short by the depth limit is not remembered (the same register reached
 * by a shorter path may have a value), but every operand that cannot lead
 * to the loop's shape is given up at once, so a cut derivation costs a few
 * dozen steps at most. */

static enum value value_of(struct function_index *x, struct ptx_str operand, int depth, int *param,
                           bool *cut);

static bool pair_is(enum value a, enum value b, enum value x, enum value y)
{
    return (a == x && b == y) || (a == y && b == x);
}

static bool may_pair(enum value a, enum value x, enum value y)
{
    return a == x || a == y;
}

/* What an instruction computes, as far as the loop's shape needs to know;
 * *param is set for a load of a kernel parameter. */
static enum value instruction_value(struct function_index *x, const struct ptx_instruction *ins,
                                    int depth, int *param, bool *cut)
{
    if (ins->guard.n != 0)
        return V_OTHER;
    if (depth > VALUE_DEPTH_MAX) {
        *cut = true;
        return V_OTHER;
    }
    if (!spend(x, 1))
        return V_OTHER;
    struct ptx_str op = ins->opcode;
    int unused = -1;
    if ((ptx_str_is(op, "mov") || ptx_str_is(op, "cvt")) && ins->nops == 2)
        return value_of(x, ins->ops[1], depth + 1, param, cut);
    if (ptx_str_is(op, "ld") && ptx_instruction_has_mod(ins, "param") && ins->nops == 2 &&
        type_is(ins, integer_types)) {
        *param = param_index(x->f, ins->ops[1]);
        return *param >= 0 ? V_PARAM : V_OTHER;
    }
    bool low_or_wide = ptx_instruction_has_mod(ins, "lo") || ptx_instruction_has_mod(ins, "wide");
    if (ptx_str_is(op, "mul") && ins->nops == 3 && low_or_wide) {
        enum value a = value_of(x, ins->ops[1], depth + 1, &unused, cut);
        if (!may_pair(a, V_CTAID, V_NTID) && !may_pair(a, V_NCTAID, V_NTID))
            return V_OTHER;
        enum value b = value_of(x, ins->ops[2], depth + 1, &unused, cut);
        if (pair_is(a, b, V_CTAID, V_NTID))
            return V_CTAID_NTID;
        if (pair_is(a, b, V_NCTAID, V_NTID))
            return V_STEP;
        return V_OTHER;
    }
    if (ptx_str_is(op, "add") && ins->nops == 3 && type_is(ins, integer_types)) {
        enum value a = value_of(x, ins->ops[1], depth + 1, &unused, cut);
        if (!may_pair(a, V_CTAID_NTID, V_TID))
            return V_OTHER;
        enum value b = value_of(x, ins->ops[2], depth + 1, &unused, cut);
        return pair_is(a, b, V_CTAID_NTID, V_TID) ? V_GTID : V_OTHER;
    }
    if (ptx_str_is(op, "mad") && ins->nops == 4 && low_or_wide) {
        enum value a = value_of(x, ins->ops[1], depth + 1, &unused, cut);
        if (!may_pair(a, V_CTAID, V_NTID))
            return V_OTHER;
        enum value b = value_of(x, ins->ops[2], depth + 1, &unused, cut);
        if (!pair_is(a, b, V_CTAID, V_NTID))
            return V_OTHER;
        return value_of(x, ins->ops[3], depth + 1, &unused, cut) == V_TID ? V_GTID : V_OTHER;
    }
    return V_OTHER;
}

/* What a special register, or a register written exactly once, holds. */
static enum value value_of(struct function_index *x, struct ptx_str operand, int depth, int *param,
                           bool *cut)
{
    if (ptx_str_is(operand, "%ctaid.x"))
        return V_CTAID;
    if (ptx_str_is(operand, "%ntid.x"))
        return V_NTID;
    if (ptx_str_is(operand, "%tid.x"))
        return V_TID;
    if (ptx_str_is(operand, "%nctaid.x"))
        return V_NCTAID;
    if (!is_register(operand))
        return V_OTHER;
    struct name_info *n = info_of(x, operand);
    if (n == NULL || n->ndefs != 1)
        return V_OTHER;
    if (n->value_state == VALUE_KNOWN) {
        if (n->value == V_PARAM)
            *param = n->param;
        return (enum value)n->value;
    }
    bool cut_here = false;
    int found_param = -1;
    enum value v =
        instruction_value(x, instruction_at(x->f, n->last_def), depth, &found_param, &cut_here);
    if (v == V_PARAM)
        *param = found_param;
    if (cut_here)
        *cut = true;
    else if (!x->over_budget) {
        n->value_state = VALUE_KNOWN;
        n->value = (uint8_t)v;
        n->param = found_param;
    }
    return v;
}

/* --- the loop ------------------------------------------------------------------ */

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
static bool find_loop(const struct function_index *x, size_t u, struct loop_shape *shape)
{
    const struct ptx_function *f = x->f;
    size_t b = u + 1 < f->nbody ? x->run_end[u + 1] : f->nbody;
    if (b >= f->nbody || f->body[b]->kind != PTX_INSTRUCTION)
        return false;
    const struct ptx_instruction *bra = &f->body[b]->u.ins;
    if (bra->guard.n == 0 || bra->nops != 1)
        return false;
    if (u == 0 || x->run_start[u - 1] == UINT32_MAX)
        return false;
    size_t h = x->run_start[u - 1];
    if (f->body[h]->kind != PTX_LABEL || !ptx_str_equal(f->body[h]->u.text, bra->ops[0]))
        return false;
    /* No other branch into the loop. */
    long label = ptx_name_set_find(&x->labels, bra->ops[0]);
    if (label < 0 || x->label_branches[label] != 1)
        return false;
    shape->head = h;
    shape->update = u;
    shape->branch = b;
    shape->predicate = bra->guard;
    return true;
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

static const uint32_t *readers_of(const struct function_index *x, const struct name_info *n)
{
    return x->readers + n->first_reader;
}

/* The loop runs only while i < bound: the back edge is taken on that
 * comparison, and before the loop a comparison of the first i skips it
 * (to a label past the loop). With the bound lowered to a slice's end,
 * both then keep a thread inside the slice's iterations. */
static bool bounds_both_ways_in(struct function_index *x, const struct loop_shape *shape,
                                const struct ptx_stride_loop *loop, struct ptx_str back_predicate,
                                bool back_edge_negated)
{
    const struct ptx_function *f = x->f;
    const struct name_info *p = info_of(x, back_predicate);
    if (p == NULL || p->ndefs != 1 || p->last_def <= shape->update ||
        p->last_def >= shape->branch ||
        !compares_below_bound(instruction_at(f, p->last_def), loop, !back_edge_negated))
        return false;
    /* The comparisons of i before the loop read i; the branches on their
     * results read the predicate. */
    const struct name_info *i = info_of(x, loop->index);
    for (uint32_t k = 0; i != NULL && k < i->nreaders; k++) {
        size_t g = readers_of(x, i)[k];
        if (g >= shape->head || !spend(x, 1))
            break;
        const struct ptx_instruction *guard = instruction_at(f, g);
        bool lt = compares_below_bound(guard, loop, true);
        if (!lt && !compares_below_bound(guard, loop, false))
            continue;
        const struct name_info *pred = info_of(x, guard->ops[0]);
        for (uint32_t r = 0; pred != NULL && r < pred->nreaders; r++) {
            size_t b = readers_of(x, pred)[r];
            if (b <= g)
                continue;
            if (b >= shape->head || !spend(x, 1))
                break;
            const struct ptx_instruction *bra = instruction_at(f, b);
            if (!ptx_str_is(bra->opcode, "bra") || bra->nops != 1)
                continue;
            struct ptx_str q = bra->guard;
            bool negated = q.n > 0 && q.p[0] == '!';
            struct ptx_str name = negated ? (struct ptx_str){q.p + 1, q.n - 1} : q;
            long label = ptx_name_set_find(&x->labels, bra->ops[0]);
            if (ptx_str_equal(name, guard->ops[0]) && negated == lt && label >= 0 &&
                x->label_at[label] > shape->branch)
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

/* Whether `reg`, last written in the body at `at`, is read only after that
 * and before the iteration ends (or, the back edge's predicate, by the
 * back edge). Readers are in order, so this stops at the first reader
 * outside the body: it costs at most the body's length. */
static bool stays_in_iteration(struct function_index *x, const struct loop_shape *shape, size_t at,
                               const struct name_info *reg, bool is_back_predicate)
{
    for (uint32_t k = 0; k < reg->nreaders; k++) {
        size_t j = readers_of(x, reg)[k];
        if (!spend(x, 1))
            return false;
        bool before_in_body = j > shape->head && j <= at;
        bool outside = j <= shape->head || j >= shape->branch;
        bool back_edge = j == shape->branch && is_back_predicate;
        if (before_in_body || (outside && !back_edge))
            return false;
    }
    return true;
}

/* Every instruction reading i outside the body is a comparison with the
 * same bound; in the body no register but i is read before it is written
 * or read after the loop; nothing in the body ties an iteration to a
 * thread. */
static bool loop_is_independent(struct function_index *x, const struct loop_shape *shape,
                                struct ptx_stride_loop *loop)
{
    const struct ptx_function *f = x->f;
    struct ptx_str negated = shape->predicate;
    bool back_edge_negated = negated.n > 0 && negated.p[0] == '!';
    struct ptx_str back_predicate =
        back_edge_negated ? (struct ptx_str){negated.p + 1, negated.n - 1} : negated;
    if (!spend(x, shape->branch - shape->head))
        return false;
    for (size_t i = shape->head + 1; i < shape->branch; i++) {
        const struct ptx_instruction *ins = instruction_at(f, i);
        if (ins != NULL && (ptx_str_in(ins->opcode, body_forbidden) || reads_special(ins)))
            return false;
    }
    /* The step is read by the update alone. */
    const struct name_info *step = info_of(x, loop->step);
    for (uint32_t k = 0; step != NULL && k < step->nreaders; k++)
        if (readers_of(x, step)[k] != shape->update)
            return false;
    int compares = 0;
    const struct name_info *index = info_of(x, loop->index);
    for (uint32_t k = 0; index != NULL && k < index->nreaders; k++) {
        size_t i = readers_of(x, index)[k];
        const struct ptx_instruction *ins = instruction_at(f, i);
        if (!spend(x, 1))
            return false;
        bool in_body = i > shape->head && i < shape->branch;
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
        if (!in_body && i != shape->update && !ptx_str_equal(destination(ins), loop->index))
            return false;
    }
    if (compares == 0 || !bounds_both_ways_in(x, shape, loop, back_predicate, back_edge_negated))
        return false;
    /* Registers carried from one iteration to the next, or out: each
     * checked once, from its last write in the body. */
    uint32_t stamp = (uint32_t)shape->head + 1;
    for (size_t i = shape->branch; i-- > shape->head + 1;) {
        const struct ptx_instruction *ins = instruction_at(f, i);
        struct written w = {.count = 0};
        if (ins == NULL || !writes_first_operand(ins))
            continue;
        ptx_for_each_name(ins->ops[0], add_written, &w);
        if (w.count > WRITTEN_MAX)
            return false;
        for (int k = 0; k < w.count; k++) {
            struct name_info *reg = info_of(x, w.names[k]);
            if (ptx_str_equal(w.names[k], loop->index) || reg == NULL ||
                reg->checked_in_loop == stamp)
                continue;
            reg->checked_in_loop = stamp;
            if (!stays_in_iteration(x, shape, i, reg, ptx_str_equal(w.names[k], back_predicate)))
                return false;
        }
    }
    return true;
}

/* Whether instruction u looks like a loop's update: add i, i, step. */
static bool is_update_candidate(const struct ptx_instruction *ins)
{
    return ins != NULL && ptx_str_is(ins->opcode, "add") && ins->nops == 3 && ins->guard.n == 0 &&
           type_is(ins, integer_types) && ptx_str_equal(ins->ops[0], ins->ops[1]) &&
           is_register(ins->ops[2]);
}

static enum ptx_stride_search search(struct function_index *x, struct ptx_stride_loop *out)
{
    const struct ptx_function *f = x->f;
    /* A loop whose body holds two updates carries one of them from one
     * iteration to the next, whichever is i: count them per loop first, so
     * that each loop's body is examined at most once. */
    struct loop_shape shape;
    for (size_t u = 0; u < f->nbody; u++)
        if (is_update_candidate(instruction_at(f, u)) && find_loop(x, u, &shape))
            x->candidates_at_head[shape.head]++;
    int found = 0;
    struct ptx_stride_loop loop;
    for (size_t u = 0; u < f->nbody && !x->over_budget; u++) {
        const struct ptx_instruction *ins = instruction_at(f, u);
        if (!is_update_candidate(ins))
            continue;
        struct ptx_stride_loop candidate = {0};
        candidate.index = ins->ops[0];
        candidate.step = ins->ops[2];
        int unused = -1;
        bool cut = false;
        if (value_of(x, candidate.step, 0, &unused, &cut) != V_STEP)
            continue;
        /* i: written here and once before the loop, as the thread's index. */
        const struct name_info *index = info_of(x, candidate.index);
        if (index == NULL || index->ndefs != 2)
            continue;
        size_t init = index->first_def == u ? index->last_def : index->first_def;
        if (init > u || !find_loop(x, u, &shape) || init > shape.head ||
            x->candidates_at_head[shape.head] != 1)
            continue;
        int unused_param = -1;
        if (instruction_value(x, instruction_at(f, init), 0, &unused_param, &cut) != V_GTID)
            continue;
        const struct ptx_str t = ins->mods[ins->nmods - 1];
        candidate.width = (t.n == 3 && t.p[1] == '6') ? 64 : 32;
        if (!loop_is_independent(x, &shape, &candidate))
            continue;
        struct ptx_str ct = candidate.compare_type;
        unsigned compare_width = (ct.n == 3 && ct.p[1] == '6') ? 64 : 32;
        candidate.is_signed = ct.p[0] == 's';
        candidate.bound_param = -1;
        if (compare_width != candidate.width ||
            value_of(x, candidate.bound, 0, &candidate.bound_param, &cut) != V_PARAM)
            continue;
        /* The runtime reads n from the parameter: a 32-bit loop bounded by
         * a narrowed 64-bit one would not count what the runtime counts. */
        size_t bound_size = f->params[candidate.bound_param].size;
        if (bound_size != 4 && (bound_size != 8 || candidate.width != 64))
            continue;
        loop = candidate;
        found++;
    }
    if (x->over_budget)
        return PTX_STRIDE_TOO_COMPLEX;
    if (found != 1)
        return PTX_STRIDE_NONE;
    *out = loop;
    return PTX_STRIDE_FOUND;
}

enum ptx_stride_search ptx_search_stride_loop(const struct ptx_function *f,
                                              struct ptx_stride_loop *out)
{
    if (!f->is_entry || !f->has_body)
        return PTX_STRIDE_NONE;
    /* Most functions have no update of the loop's shape: no index then. */
    bool any = false;
    for (size_t u = 0; u < f->nbody && !any; u++)
        any = is_update_candidate(instruction_at(f, u));
    if (!any)
        return PTX_STRIDE_NONE;
    struct function_index x;
    enum ptx_stride_search result;
    if (index_build(&x, f) != 0)
        result = PTX_STRIDE_NO_MEMORY;
    else if (x.over_budget)
        result = PTX_STRIDE_TOO_COMPLEX;
    else
        result = search(&x, out);
    index_free(&x);
    return result;
}

int ptx_stride_plan_build(const struct ptx_module *m, struct ptx_stride_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    size_t cap = 0;
    for (size_t t = 0; t < m->ntop; t++) {
        if (m->top[t]->kind != PTX_FUNCTION)
            continue;
        const struct ptx_function *f = &m->top[t]->u.func;
        struct ptx_stride_loop loop;
        switch (ptx_search_stride_loop(f, &loop)) {
        case PTX_STRIDE_FOUND:
            break;
        case PTX_STRIDE_NO_MEMORY:
            ptx_stride_plan_free(plan);
            return -1;
        case PTX_STRIDE_NONE:
        case PTX_STRIDE_TOO_COMPLEX:
            continue;
        }
        if (plan->nfound == cap) {
            cap = cap ? 2 * cap : 8;
            struct ptx_stride_plan_entry *grown = realloc(plan->found, cap * sizeof *grown);
            if (grown == NULL) {
                ptx_stride_plan_free(plan);
                return -1;
            }
            plan->found = grown;
        }
        plan->found[plan->nfound].f = f;
        plan->found[plan->nfound++].loop = loop;
    }
    return 0;
}

void ptx_stride_plan_free(struct ptx_stride_plan *plan)
{
    free(plan->found);
    memset(plan, 0, sizeof *plan);
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

/* Whether .reg directive `text` declares register `name`: by its name, or
 * in a range (%r<5> declares %r0 to %r4). */
static bool reg_declares(struct ptx_str text, struct ptx_str name)
{
    if (!ptx_str_starts_with(text, ".reg"))
        return false;
    const char *p = text.p + 4, *end = text.p + text.n;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        if (p == end || *p == ';')
            break;
        const char *start = p;
        while (p < end && !strchr(" \t,;<", *p))
            p++;
        size_t len = (size_t)(p - start);
        if (*start == '.' || (*start >= '0' && *start <= '9'))
            continue; /* the state space, a type, a vector size, an alignment */
        if (p == end || *p != '<') {
            if (len == name.n && memcmp(start, name.p, len) == 0)
                return true;
            continue;
        }
        unsigned long count = 0;
        for (p++; p < end && *p >= '0' && *p <= '9'; p++)
            count = count * 10 + (unsigned long)(*p - '0');
        if (p < end && *p == '>')
            p++;
        if (name.n <= len || memcmp(start, name.p, len) != 0)
            continue;
        const char *digits = name.p + len, *last = name.p + name.n;
        unsigned long index = 0;
        bool number = digits < last && (*digits != '0' || digits + 1 == last);
        for (const char *d = digits; number && d < last; d++) {
            number = *d >= '0' && *d <= '9';
            index = index * 10 + (unsigned long)(*d - '0');
        }
        if (number && index < count)
            return true;
    }
    return false;
}

int ptx_rewrite_stride_loop(struct ptx_module *m, struct ptx_function *f,
                            const struct ptx_stride_loop *loop)
{
    struct ptx_body_builder b;
    ptx_builder_init(&b, m);
    /* Per block: whether it or a block around it declares a register of the
     * index's (bit 0) or the step's (bit 1) name, which its statements then
     * mean: an inlined probe's %r3 is not the kernel's. */
    enum { SCOPES = PTX_MAX_BLOCK_DEPTH + 64 }; /* parsed, then wrapped by a few passes */
    unsigned char hidden[SCOPES] = {0};
    int depth = 0;
    for (size_t i = 0; i < f->nbody; i++) {
        struct ptx_stmt *s = f->body[i];
        int at = depth < SCOPES ? depth : SCOPES - 1;
        if (s->kind == PTX_BLOCK_OPEN && ++depth < SCOPES)
            hidden[depth] = hidden[at];
        depth -= s->kind == PTX_BLOCK_CLOSE && depth > 0;
        if (s->kind == PTX_DIRECTIVE && depth > 0) {
            hidden[at] |= reg_declares(s->u.text, loop->index) ? 1 : 0;
            hidden[at] |= reg_declares(s->u.text, loop->step) ? 2 : 0;
        }
        if (s->kind != PTX_INSTRUCTION) {
            ptx_builder_add(&b, s);
            continue;
        }
        const struct ptx_instruction *ins = &s->u.ins;
        bool index_seen = !(hidden[at] & 1), step_seen = !(hidden[at] & 2);
        if (index_seen && ptx_str_is(ins->opcode, "setp") && ins->nops == 3 &&
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
        if (index_seen && ptx_str_equal(d, loop->index) && !is_update(ins, loop))
            ptx_builder_add_text(&b, init_text(m, loop));
        else if (step_seen && ptx_str_equal(d, loop->step))
            ptx_builder_add_text(&b, step_text(m, loop));
    }
    return ptx_builder_finish(&b, f);
}
