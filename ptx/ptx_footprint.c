/* Owns deriving kernels' footprints from PTX (see ptx_footprint.h): the
 * registers' values as expressions, each global access's pointer slot and
 * offset (ptx_footprint_bounds.c reads them at a launch).
 *
 * A register written once has that write's value wherever it is read. One
 * written more than once (nvcc reuses a register: the thread's index early
 * in reduce_sum, a loop's counter at its end) has, where it is read
 * outside every loop, the value of its only write before that statement
 * when there is exactly one and it is unguarded: with no backward branch
 * around the reading statement, only statements before it can have run
 * before it. Anywhere else it is unknown. */
#include "ptx/ptx_footprint.h"

#include "ptx/ptx_edit.h"
#include "ptx/ptx_probe_access.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How deep the values of registers used before their write (a loop's) are
 * followed back; beyond, unknown. */
#define FP_MAX_DEPTH 64
/* The slot of an access through a struct parameter whose 8 bytes are not
 * known: every pointer in it. */
#define FP_ANY_OFFSET UINT_MAX

enum { NONE = -1, IN_PROGRESS = -2 };

/* What the builder knows of one register. */
struct register_facts {
    int defs;        /* how often written */
    size_t def_stmt; /* the statement that writes it (when once) */
    int value;       /* its node, NONE not yet, IN_PROGRESS */
    /* written more than once: its first write, whether that is a plain
     * one (unguarded, the whole register), and its second */
    size_t first_def, second_def;
    bool first_plain;
};

struct builder {
    const struct ptx_function *f;
    const int *access_param;
    bool *traced; /* per parameter: some access reaches it (NULL: no analysis) */
    struct mgpu_kernel_footprint *fp;
    size_t cap_nodes, cap_slots, cap_accesses;
    struct ptx_name_set regs;
    struct register_facts *reg; /* per register of regs */
    size_t cap_regs;
    /* per statement: inside a loop (between a backward branch and its
     * label); and the value of its write, for registers written more than
     * once (NONE not yet, IN_PROGRESS) */
    bool *in_loop;
    int *stmt_value;
    size_t at; /* the statement whose operands are being read */
    int top, symbol, zero;
    int depth;
    bool oom;
};

static int add_node(struct builder *b, struct mgpu_fp_node n)
{
    struct mgpu_kernel_footprint *fp = b->fp;
    if (b->oom)
        return b->top;
    if (fp->nnodes == b->cap_nodes) {
        size_t cap = b->cap_nodes ? 2 * b->cap_nodes : 64;
        struct mgpu_fp_node *grown = realloc(fp->nodes, cap * sizeof *grown);
        if (grown == NULL) {
            b->oom = true;
            return b->top;
        }
        fp->nodes = grown;
        b->cap_nodes = cap;
    }
    fp->nodes[fp->nnodes] = n;
    return (int)fp->nnodes++;
}

static int leaf(struct builder *b, enum mgpu_fp_op op, long long value)
{
    return add_node(
        b, (struct mgpu_fp_node){.op = (unsigned char)op, .a = -1, .b = -1, .value = value});
}

static enum mgpu_fp_op op_of(const struct builder *b, int n)
{
    return (enum mgpu_fp_op)b->fp->nodes[n].op;
}

static bool is_constant(const struct builder *b, int n, long long v)
{
    return b->fp->nodes[n].op == MGPU_FP_CONST && b->fp->nodes[n].value == v;
}

static int binary(struct builder *b, enum mgpu_fp_op op, int x, int y)
{
    if (op_of(b, x) == MGPU_FP_TOP || op_of(b, y) == MGPU_FP_TOP)
        return b->top;
    /* x + 0, 0 + y, x - 0, x * 1, 1 * y: what they add to (shorter text,
     * the same value) */
    if ((op == MGPU_FP_ADD || op == MGPU_FP_SUB) && is_constant(b, y, 0))
        return x;
    if (op == MGPU_FP_ADD && is_constant(b, x, 0))
        return y;
    if (op == MGPU_FP_MUL && is_constant(b, y, 1))
        return x;
    if (op == MGPU_FP_MUL && is_constant(b, x, 1))
        return y;
    return add_node(b, (struct mgpu_fp_node){.op = (unsigned char)op, .a = x, .b = y});
}

/* op with a constant: DIV, REM, AND. */
static int with_constant(struct builder *b, enum mgpu_fp_op op, int x, long long c, bool is_signed,
                         bool floor)
{
    if (op_of(b, x) == MGPU_FP_TOP && op != MGPU_FP_AND && op != MGPU_FP_REM)
        return b->top;
    return add_node(b, (struct mgpu_fp_node){.op = (unsigned char)op,
                                             .a = x,
                                             .b = -1,
                                             .value = c,
                                             .is_signed = is_signed,
                                             .floor = floor});
}

/* x as an integer of `bytes` bytes; a TOP stays TOP unless narrowed to 4
 * bytes or fewer, whose range is finite. */
static int wrap(struct builder *b, int x, unsigned bytes, bool is_signed)
{
    if (bytes == 0 || (op_of(b, x) == MGPU_FP_TOP && bytes >= 8))
        return op_of(b, x) == MGPU_FP_TOP ? b->top : x;
    if (op_of(b, x) == MGPU_FP_SYMBOL)
        return b->top;
    if (op_of(b, x) == MGPU_FP_CONST && bytes < 8) {
        long long v = b->fp->nodes[x].value;
        long long half = 1ll << (8 * bytes - 1);
        if (is_signed ? v >= -half && v < half : v >= 0 && v < 2 * half)
            return x;
    }
    if (op_of(b, x) == MGPU_FP_CONST && bytes >= 8 && (is_signed || b->fp->nodes[x].value >= 0))
        return x;
    /* the grid's and block's indices and sizes fit any 32-bit type */
    if (op_of(b, x) == MGPU_FP_SPECIAL && bytes >= 4)
        return x;
    /* a narrower integer converted again: it fits the wider type when
     * both are unsigned, both signed, or the wider is signed */
    const struct mgpu_fp_node *inner = &b->fp->nodes[x];
    if (inner->op == MGPU_FP_WRAP &&
        (inner->bytes < bytes ? !inner->is_signed || is_signed
                              : inner->bytes == bytes && inner->is_signed == is_signed))
        return x;
    return add_node(b, (struct mgpu_fp_node){.op = MGPU_FP_WRAP,
                                             .a = x,
                                             .b = -1,
                                             .bytes = (unsigned char)bytes,
                                             .is_signed = is_signed});
}

/* An integer immediate ("12", "-3", "0x1f", "7U"); false for anything
 * else, floating-point bits ("0f3f800000") included, and for one past
 * what a long long holds (0xffffffffffffffff as a mask would otherwise
 * read as 2^63 - 1 and bound a negative offset from below by 0). */
static bool integer_immediate(struct ptx_str s, long long *v)
{
    if (s.n == 0 || s.n >= 32 || !((s.p[0] >= '0' && s.p[0] <= '9') || s.p[0] == '-'))
        return false;
    if (s.n > 1 && s.p[0] == '0' && ((s.p[1] | 0x20) == 'f' || (s.p[1] | 0x20) == 'd'))
        return false;
    char text[32];
    memcpy(text, s.p, s.n);
    text[s.n] = '\0';
    char *end;
    errno = 0;
    *v = strtoll(text, &end, 0);
    return errno == 0 && end != text && (*end == '\0' || *end == 'U' || *end == 'u');
}

static const char *const special_names[MGPU_FP_SPECIAL_COUNT] = {
    "%tid.x",   "%tid.y",   "%tid.z",   "%ntid.x",   "%ntid.y",   "%ntid.z",
    "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z"};

static int value_of_register(struct builder *b, long id);

/* The node of an operand: an immediate, a special register, a register,
 * a symbol's address; anything else (a vector, an address) unknown. */
static int operand(struct builder *b, struct ptx_str s)
{
    long long v;
    if (s.n == 0)
        return b->top;
    if (integer_immediate(s, &v))
        return leaf(b, MGPU_FP_CONST, v);
    if (s.p[0] == '%') {
        for (int i = 0; i < MGPU_FP_SPECIAL_COUNT; i++)
            if (ptx_str_is(s, special_names[i]))
                return leaf(b, MGPU_FP_SPECIAL, i);
        long id = ptx_name_set_find(&b->regs, s);
        return id >= 0 ? value_of_register(b, id) : b->top;
    }
    if ((s.p[0] >= 'a' && s.p[0] <= 'z') || (s.p[0] >= 'A' && s.p[0] <= 'Z') || s.p[0] == '_' ||
        s.p[0] == '$')
        return b->symbol;
    return b->top;
}

/* The instruction's integer type among its modifiers: its bytes, whether
 * signed; false for a floating-point or missing type. `which` picks the
 * first (0) or second (1) type modifier (cvt's destination and source). */
static bool integer_type(const struct ptx_instruction *ins, int which, unsigned *bytes,
                         bool *is_signed)
{
    int seen = 0;
    for (uint32_t i = 0; i < ins->nmods; i++) {
        struct ptx_str m = ins->mods[i];
        size_t n = ptx_type_bytes(m);
        if (n == 0)
            continue;
        if (seen++ != which)
            continue;
        if (m.p[0] == 'f' || ptx_str_starts_with(m, "bf") || ptx_str_starts_with(m, "e4m3") ||
            ptx_str_starts_with(m, "e5m2") || ptx_str_is(m, "pred"))
            return false;
        *bytes = (unsigned)n;
        *is_signed = m.p[0] == 's';
        return true;
    }
    return false;
}

static int param_index(const struct ptx_function *f, struct ptx_str name)
{
    for (size_t i = 0; i < f->nparams; i++)
        if (ptx_str_equal(f->params[i].name, name))
            return (int)i;
    return -1;
}

/* x narrowed to the instruction's type where that is 4 bytes or fewer, for
 * operations that are not exact modulo 2^32 (division, min, ...). */
static int narrowed(struct builder *b, int x, unsigned bytes, bool is_signed)
{
    return bytes < 8 ? wrap(b, x, bytes, is_signed) : x;
}

static bool power_of_two_shift(long long k, unsigned bytes)
{
    return k >= 0 && k < (long long)(8 * bytes) && k < 62;
}

/* The value instruction `ins` writes to its first operand. */
static int evaluate(struct builder *b, const struct ptx_instruction *ins)
{
    struct ptx_str op = ins->opcode;
    const struct ptx_str *o = ins->ops;
    uint32_t n = ins->nops;
    unsigned bytes = 0;
    bool sg = false;
    bool typed = integer_type(ins, 0, &bytes, &sg);
    long long k;
    if (ptx_str_is(op, "mov") && n == 2)
        return operand(b, o[1]);
    if (ptx_str_is(op, "cvta") && n == 2) {
        /* to a state space from generic, or to generic from global: the
         * same number; from shared, local, const or param: not a
         * parameter's memory */
        if (ptx_instruction_has_mod(ins, "to") || ptx_instruction_has_mod(ins, "global"))
            return operand(b, o[1]);
        return b->symbol;
    }
    if (ptx_str_is(op, "cvt") && n == 2) {
        unsigned sbytes = 0;
        bool ssg = false;
        if (!typed || !integer_type(ins, 1, &sbytes, &ssg) || ptx_instruction_has_mod(ins, "sat"))
            return b->top;
        int x = operand(b, o[1]);
        if (bytes > sbytes)
            return wrap(b, wrap(b, x, sbytes, ssg), bytes, sg);
        return wrap(b, x, bytes, sg);
    }
    if (!typed)
        return b->top;
    if ((ptx_str_is(op, "add") || ptx_str_is(op, "sub")) && n == 3 &&
        !ptx_instruction_has_mod(ins, "cc") && !ptx_instruction_has_mod(ins, "sat"))
        return binary(b, ptx_str_is(op, "add") ? MGPU_FP_ADD : MGPU_FP_SUB, operand(b, o[1]),
                      operand(b, o[2]));
    if (ptx_str_is(op, "neg") && n == 2)
        return binary(b, MGPU_FP_SUB, b->zero, operand(b, o[1]));
    bool wide = ptx_instruction_has_mod(ins, "wide");
    if (ptx_str_is(op, "mul") && n == 3 && !ptx_instruction_has_mod(ins, "hi")) {
        int x = operand(b, o[1]), y = operand(b, o[2]);
        if (wide)
            return binary(b, MGPU_FP_MUL, wrap(b, x, bytes, sg), wrap(b, y, bytes, sg));
        return binary(b, MGPU_FP_MUL, x, y);
    }
    if (ptx_str_is(op, "mad") && n == 4 && !ptx_instruction_has_mod(ins, "hi") &&
        !ptx_instruction_has_mod(ins, "cc") && !ptx_instruction_has_mod(ins, "sat")) {
        int x = operand(b, o[1]), y = operand(b, o[2]);
        if (wide) {
            x = wrap(b, x, bytes, sg);
            y = wrap(b, y, bytes, sg);
        }
        return binary(b, MGPU_FP_ADD, binary(b, MGPU_FP_MUL, x, y), operand(b, o[3]));
    }
    if (ptx_str_is(op, "shl") && n == 3 && integer_immediate(o[2], &k) &&
        power_of_two_shift(k, bytes))
        return binary(b, MGPU_FP_MUL, operand(b, o[1]), leaf(b, MGPU_FP_CONST, 1ll << k));
    if (ptx_str_is(op, "shr") && n == 3 && integer_immediate(o[2], &k) &&
        power_of_two_shift(k, bytes))
        return with_constant(b, MGPU_FP_DIV, narrowed(b, operand(b, o[1]), bytes, sg), 1ll << k, sg,
                             true);
    if (ptx_str_is(op, "div") && n == 3 && integer_immediate(o[2], &k) && k > 0)
        return with_constant(b, MGPU_FP_DIV, narrowed(b, operand(b, o[1]), bytes, sg), k, sg,
                             false);
    if (ptx_str_is(op, "rem") && n == 3 && integer_immediate(o[2], &k) && k > 0)
        return with_constant(b, MGPU_FP_REM, narrowed(b, operand(b, o[1]), bytes, sg), k, sg,
                             false);
    if (ptx_str_is(op, "and") && n == 3) {
        if (integer_immediate(o[2], &k) && k >= 0)
            return with_constant(b, MGPU_FP_AND, operand(b, o[1]), k, false, false);
        if (integer_immediate(o[1], &k) && k >= 0)
            return with_constant(b, MGPU_FP_AND, operand(b, o[2]), k, false, false);
        return b->top;
    }
    if ((ptx_str_is(op, "min") || ptx_str_is(op, "max")) && n == 3)
        return binary(b, ptx_str_is(op, "min") ? MGPU_FP_MIN : MGPU_FP_MAX,
                      narrowed(b, operand(b, o[1]), bytes, sg),
                      narrowed(b, operand(b, o[2]), bytes, sg));
    if (ptx_str_is(op, "selp") && n == 4)
        return binary(b, MGPU_FP_SELECT, operand(b, o[1]), operand(b, o[2]));
    if (ptx_str_is(op, "ld") && n == 2 && ptx_instruction_space(ins) == PTX_SPACE_PARAM &&
        !ptx_instruction_has_mod(ins, "v2") && !ptx_instruction_has_mod(ins, "v4")) {
        struct ptx_str base, offset_text;
        ptx_address_parts(o[1], &base, &offset_text);
        long long offset = 0;
        int p = param_index(b->f, base);
        if (p < 0 || (offset_text.n > 0 && !integer_immediate(offset_text, &offset)) ||
            offset < 0 || offset > 1 << 20)
            return b->top;
        return add_node(b, (struct mgpu_fp_node){.op = MGPU_FP_PARAM,
                                                 .a = -1,
                                                 .b = -1,
                                                 .value = p,
                                                 .offset = (unsigned)offset,
                                                 .bytes = (unsigned char)bytes,
                                                 .is_signed = sg});
    }
    return b->top;
}

/* The value statement `stmt` writes, its operands read where it stands. */
static int evaluate_at(struct builder *b, size_t stmt)
{
    size_t saved = b->at;
    b->at = stmt;
    b->depth++;
    int v = evaluate(b, &b->f->body[stmt]->u.ins);
    b->depth--;
    b->at = saved;
    return v;
}

/* Register id, written more than once, as statement b->at reads it. */
static int reaching_value(struct builder *b, long id)
{
    size_t u = b->at;
    if (b->in_loop == NULL || b->stmt_value == NULL || u >= b->f->nbody || b->in_loop[u] ||
        !b->reg[id].first_plain || !(b->reg[id].first_def < u && u < b->reg[id].second_def))
        return b->top;
    size_t d = b->reg[id].first_def;
    if (b->stmt_value[d] == IN_PROGRESS)
        return b->top;
    if (b->stmt_value[d] != NONE)
        return b->stmt_value[d];
    if (b->depth >= FP_MAX_DEPTH)
        return b->top;
    b->stmt_value[d] = IN_PROGRESS;
    int v = evaluate_at(b, d);
    b->stmt_value[d] = v;
    return v;
}

static int value_of_register(struct builder *b, long id)
{
    struct register_facts *r = (size_t)id < b->cap_regs ? &b->reg[id] : NULL;
    if (r == NULL || r->defs == 0)
        return b->top;
    if (r->defs != 1)
        return reaching_value(b, id);
    if (r->value == IN_PROGRESS)
        return b->top; /* a cycle: a loop's value */
    if (r->value != NONE)
        return r->value;
    if (b->depth >= FP_MAX_DEPTH)
        return b->top;
    r->value = IN_PROGRESS;
    int v = evaluate_at(b, r->def_stmt);
    r->value = v; /* b->reg grows only while writes are counted, before */
    return v;
}

/* Opcodes whose first operand is not a register they write. */
static bool writes_first_operand(struct ptx_str op)
{
    static const char *const none[] = {
        "st",      "red",       "bar",       "barrier",  "bra",   "ret",   "exit", "membar",
        "fence",   "prefetch",  "prefetchu", "trap",     "brkpt", "call",  "cp",   "griddepcontrol",
        "pmevent", "nanosleep", "mbarrier",  "stmatrix", "sust",  "sured", NULL};
    return !ptx_str_in(op, none);
}

struct counting {
    struct builder *b;
    size_t stmt;
    int rc;
};

static int grow_registers(struct builder *b, size_t need)
{
    if (need <= b->cap_regs)
        return 0;
    size_t cap = b->cap_regs ? b->cap_regs * 2 : 256;
    while (cap < need)
        cap *= 2;
    struct register_facts *reg = realloc(b->reg, cap * sizeof *reg);
    if (reg == NULL)
        return -1;
    b->reg = reg;
    for (size_t i = b->cap_regs; i < cap; i++)
        reg[i] = (struct register_facts){.value = NONE, .second_def = SIZE_MAX};
    b->cap_regs = cap;
    return 0;
}

/* Register `name` written by statement `stmt`; twice or more counts as
 * unknown (a name written by a call or as part of a vector: also twice). */
static int count_write(struct builder *b, struct ptx_str name, size_t stmt, int times)
{
    if (name.n < 2 || name.p[0] != '%')
        return 0;
    long id = ptx_name_set_add(&b->regs, name);
    if (id < 0 || grow_registers(b, (size_t)id + 1) != 0)
        return -1;
    struct register_facts *r = &b->reg[id];
    if (r->defs == 0) {
        r->first_def = stmt;
        r->first_plain = times == 1;
    } else if (stmt == r->first_def) {
        r->first_plain = false; /* written twice by one statement */
    } else if (r->second_def == SIZE_MAX) {
        r->second_def = stmt; /* statements come in order */
    }
    r->defs += times;
    r->def_stmt = stmt;
    return 0;
}

/* Marks the statements inside loops: from a label to a branch after it
 * back to it. An indirect branch (brx) or a branch to a label not found
 * marks every statement. */
static int mark_loops(struct builder *b)
{
    const struct ptx_function *f = b->f;
    b->in_loop = calloc(f->nbody + 1, sizeof *b->in_loop);
    b->stmt_value = malloc((f->nbody + 1) * sizeof *b->stmt_value);
    int *depth = calloc(f->nbody + 1, sizeof *depth);
    struct ptx_name_set labels = {0};
    long *label_at = NULL;
    size_t nlabels = 0;
    int rc = b->in_loop == NULL || b->stmt_value == NULL || depth == NULL ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < f->nbody; i++) {
        b->stmt_value[i] = NONE;
        if (f->body[i]->kind != PTX_LABEL)
            continue;
        long id = ptx_name_set_add(&labels, f->body[i]->u.text);
        if (id < 0) {
            rc = -1;
            break;
        }
        if ((size_t)id >= nlabels) {
            long *grown = realloc(label_at, ((size_t)id + 1) * sizeof *grown);
            if (grown == NULL) {
                rc = -1;
                break;
            }
            label_at = grown;
            while (nlabels <= (size_t)id)
                label_at[nlabels++] = -1;
        }
        if (label_at[id] < 0)
            label_at[id] = (long)i;
    }
    bool everywhere = false;
    for (size_t i = 0; rc == 0 && i < f->nbody && !everywhere; i++) {
        const struct ptx_stmt *s = f->body[i];
        if (s->kind != PTX_INSTRUCTION)
            continue;
        struct ptx_str op = s->u.ins.opcode;
        if (ptx_str_is(op, "brx")) {
            everywhere = true;
        } else if (ptx_str_is(op, "bra")) {
            long id = s->u.ins.nops > 0 ? ptx_name_set_find(&labels, s->u.ins.ops[0]) : -1;
            long at = id >= 0 && (size_t)id < nlabels ? label_at[id] : -1;
            if (at < 0) {
                everywhere = true;
            } else if ((size_t)at <= i) {
                depth[at]++;
                depth[i + 1]--;
            }
        }
    }
    int open = 0;
    for (size_t i = 0; rc == 0 && i < f->nbody; i++) {
        open += depth[i];
        b->in_loop[i] = everywhere || open > 0;
    }
    ptx_name_set_free(&labels);
    free(label_at);
    free(depth);
    return rc;
}

static void count_unfollowed(struct ptx_str name, void *ctx)
{
    struct counting *c = ctx;
    if (c->rc == 0)
        c->rc = count_write(c->b, name, c->stmt, 2);
}

static int count_writes(struct builder *b)
{
    const struct ptx_function *f = b->f;
    for (size_t i = 0; i < f->nbody; i++) {
        const struct ptx_stmt *s = f->body[i];
        if (s->kind != PTX_INSTRUCTION || s->u.ins.nops == 0)
            continue;
        const struct ptx_instruction *ins = &s->u.ins;
        struct counting c = {b, i, 0};
        if (ptx_str_is(ins->opcode, "call") && ins->ops[0].n > 0 && ins->ops[0].p[0] == '(') {
            ptx_for_each_name(ins->ops[0], count_unfollowed, &c);
        } else if (writes_first_operand(ins->opcode)) {
            struct ptx_str dst = ins->ops[0];
            if (dst.n > 0 && (dst.p[0] == '{' || memchr(dst.p, '|', dst.n) != NULL))
                ptx_for_each_name(dst, count_unfollowed, &c);
            else
                c.rc = count_write(b, dst, i, ins->guard.n > 0 ? 2 : 1);
        }
        if (c.rc != 0)
            return -1;
    }
    return 0;
}

static void set_unknown(struct builder *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_unknown(struct builder *b, const char *fmt, ...)
{
    if (b->fp->unknown)
        return;
    b->fp->unknown = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->fp->reason, sizeof b->fp->reason, fmt, ap);
    va_end(ap);
}

static int slot_of(struct builder *b, int param, unsigned offset)
{
    struct mgpu_kernel_footprint *fp = b->fp;
    for (size_t i = 0; i < fp->nslots; i++)
        if (fp->slots[i].param == param && fp->slots[i].offset == offset)
            return (int)i;
    if (fp->nslots == b->cap_slots) {
        size_t cap = b->cap_slots ? 2 * b->cap_slots : 8;
        struct mgpu_fp_slot *grown = realloc(fp->slots, cap * sizeof *grown);
        if (grown == NULL) {
            b->oom = true;
            return -1;
        }
        fp->slots = grown;
        b->cap_slots = cap;
    }
    fp->slots[fp->nslots] = (struct mgpu_fp_slot){param, offset, 0};
    return (int)fp->nslots++;
}

static void add_access(struct builder *b, int slot, unsigned use, int offset, unsigned bytes,
                       size_t stmt)
{
    struct mgpu_kernel_footprint *fp = b->fp;
    if (slot < 0)
        return;
    if (fp->naccesses == b->cap_accesses) {
        size_t cap = b->cap_accesses ? 2 * b->cap_accesses : 16;
        struct mgpu_fp_access *grown = realloc(fp->accesses, cap * sizeof *grown);
        if (grown == NULL) {
            b->oom = true;
            return;
        }
        fp->accesses = grown;
        b->cap_accesses = cap;
    }
    fp->accesses[fp->naccesses++] = (struct mgpu_fp_access){slot, use, offset, bytes, stmt};
}

/* What an address is made of. */
enum split_kind {
    SPLIT_VALUE,    /* a number with no pointer in it */
    SPLIT_POINTER,  /* a parameter's pointer plus an offset */
    SPLIT_SYMBOLIC, /* a variable's address (shared, local, a module global) plus a number */
    SPLIT_FAILED,   /* unknown, or two pointers */
};

struct split {
    enum split_kind kind;
    int pointer; /* SPLIT_POINTER: the PARAM node */
    int offset;  /* SPLIT_POINTER: the offset's node */
};

/* Whether PARAM node n may be a pointer: 8 bytes, and (when the kernel
 * analysis is at hand) of a parameter some access reaches. */
static bool may_be_pointer(const struct builder *b, const struct mgpu_fp_node *n)
{
    if (n->bytes != 8)
        return false;
    return b->traced == NULL ||
           (n->value >= 0 && (size_t)n->value < b->f->nparams && b->traced[n->value]);
}

static struct split split_address(struct builder *b, int n, int depth)
{
    struct split failed = {SPLIT_FAILED, -1, -1}, value = {SPLIT_VALUE, -1, -1};
    if (depth > FP_MAX_DEPTH)
        return failed;
    const struct mgpu_fp_node *node = &b->fp->nodes[n];
    switch ((enum mgpu_fp_op)node->op) {
    case MGPU_FP_TOP:
        return failed;
    case MGPU_FP_SYMBOL:
        return (struct split){SPLIT_SYMBOLIC, -1, -1};
    case MGPU_FP_CONST:
    case MGPU_FP_SPECIAL:
        return value;
    case MGPU_FP_PARAM:
        return may_be_pointer(b, node) ? (struct split){SPLIT_POINTER, n, b->zero} : value;
    case MGPU_FP_ADD:
    case MGPU_FP_SUB:
    case MGPU_FP_SELECT: {
        int na = node->a, nb = node->b;
        enum mgpu_fp_op op = (enum mgpu_fp_op)node->op;
        struct split x = split_address(b, na, depth + 1), y = split_address(b, nb, depth + 1);
        if (x.kind == SPLIT_FAILED || y.kind == SPLIT_FAILED)
            return failed;
        if (op == MGPU_FP_SELECT) {
            if (x.kind != y.kind)
                return failed;
            if (x.kind != SPLIT_POINTER)
                return x;
            const struct mgpu_fp_node *px = &b->fp->nodes[x.pointer],
                                      *py = &b->fp->nodes[y.pointer];
            if (px->value != py->value || px->offset != py->offset)
                return failed;
            return (struct split){SPLIT_POINTER, x.pointer,
                                  binary(b, MGPU_FP_SELECT, x.offset, y.offset)};
        }
        if (x.kind == SPLIT_VALUE && y.kind == SPLIT_VALUE)
            return value;
        if (x.kind == SPLIT_POINTER && y.kind == SPLIT_VALUE)
            return (struct split){SPLIT_POINTER, x.pointer, binary(b, op, x.offset, nb)};
        if (op == MGPU_FP_ADD && x.kind == SPLIT_VALUE && y.kind == SPLIT_POINTER)
            return (struct split){SPLIT_POINTER, y.pointer, binary(b, op, na, y.offset)};
        if (x.kind == SPLIT_SYMBOLIC && y.kind == SPLIT_VALUE)
            return x;
        if (op == MGPU_FP_ADD && x.kind == SPLIT_VALUE && y.kind == SPLIT_SYMBOLIC)
            return y;
        return failed;
    }
    default: {
        /* a pointer inside anything else (a product, a conversion) is no
         * longer an address this follows */
        struct split x = node->a >= 0 ? split_address(b, node->a, depth + 1) : value;
        struct split y = node->b >= 0 ? split_address(b, node->b, depth + 1) : value;
        return x.kind == SPLIT_VALUE && y.kind == SPLIT_VALUE ? value : failed;
    }
    }
}

static unsigned use_of_kind(enum ptx_probe_access_kind kind)
{
    return kind == PTX_ACCESS_LOAD    ? MGPU_FP_LOAD
           : kind == PTX_ACCESS_STORE ? MGPU_FP_STORE
                                      : MGPU_FP_ATOMIC;
}

/* Access of statement i through address operand `address` ("[%rd4+8]"). */
static void follow_access(struct builder *b, size_t i, struct ptx_str address, unsigned use,
                          unsigned bytes)
{
    struct ptx_str base, offset_text;
    ptx_address_parts(address, &base, &offset_text);
    long long offset = 0;
    b->at = i;
    int addr = operand(b, base);
    if (offset_text.n > 0 && !integer_immediate(offset_text, &offset))
        addr = b->top;
    else if (offset != 0)
        addr = binary(b, MGPU_FP_ADD, addr, leaf(b, MGPU_FP_CONST, offset));
    struct split s = split_address(b, addr, 0);
    int traced = b->access_param != NULL ? b->access_param[i] : -1;
    if (traced >= (int)b->f->nparams)
        traced = -1; /* not this function's analysis */
    if (s.kind == SPLIT_SYMBOLIC)
        return; /* a variable of the module or of the block, not a parameter's memory */
    if (s.kind == SPLIT_POINTER) {
        const struct mgpu_fp_node *p = &b->fp->nodes[s.pointer];
        if (traced >= 0 && traced != (int)p->value) {
            set_unknown(b, "an access the analyses trace to two parameters (%d and %lld)", traced,
                        p->value);
            return;
        }
        int slot = slot_of(b, (int)p->value, p->offset);
        if (bytes == 0 && slot >= 0)
            b->fp->slots[slot].whole |= use;
        else
            add_access(b, slot, use, s.offset, bytes, i);
        return;
    }
    if (traced >= 0) {
        int slot = slot_of(b, traced, b->f->params[traced].aggregate ? FP_ANY_OFFSET : 0);
        if (slot >= 0)
            b->fp->slots[slot].whole |= use;
        return;
    }
    set_unknown(b, "an access through a pointer not traced to a parameter (statement %zu)", i);
}

/* cp.async's global source: "cp.async.ca.shared.global [dst], [src], 16". */
static bool follow_copy(struct builder *b, size_t i, const struct ptx_instruction *ins)
{
    long long bytes;
    if (!ptx_str_starts_with(ins->opcode, "cp") || ins->nops < 3)
        return false;
    bool async = ptx_str_is(ins->opcode, "cp") && ins->nmods >= 4 &&
                 ptx_str_is(ins->mods[0], "async") && ptx_instruction_has_mod(ins, "shared") &&
                 ptx_instruction_has_mod(ins, "global") && !ptx_instruction_has_mod(ins, "bulk") &&
                 !ptx_instruction_has_mod(ins, "tensor");
    if (async && integer_immediate(ins->ops[2], &bytes) && bytes > 0 && bytes <= 16)
        follow_access(b, i, ins->ops[1], MGPU_FP_LOAD, (unsigned)bytes);
    else
        set_unknown(b, "a copy it does not follow (%.*s)", (int)ins->opcode.n, ins->opcode.p);
    return true;
}

static void follow_statement(struct builder *b, size_t i)
{
    const struct ptx_stmt *s = b->f->body[i];
    if (s->kind == PTX_VERBATIM && s->unparsed) {
        set_unknown(b, "a statement it does not parse");
        return;
    }
    if (s->kind != PTX_INSTRUCTION)
        return;
    const struct ptx_instruction *ins = &s->u.ins;
    struct ptx_access a;
    if (ptx_access_of(s, &a)) {
        follow_access(b, i, a.address, use_of_kind(a.kind), a.bytes);
        return;
    }
    if (follow_copy(b, i, ins))
        return;
    struct ptx_str op = ins->opcode;
    if (ptx_str_is(op, "call")) {
        for (uint32_t k = 0; k < ins->nops; k++)
            if (ptx_str_is(ins->ops[k], "vprintf"))
                return; /* reads its arguments on the stack and its format */
        set_unknown(b, "a call");
        return;
    }
    static const char *const unfollowed[] = {"tex",           "tld4",    "suld",         "sust",
                                             "sured",         "suq",     "txq",          "multimem",
                                             "applypriority", "discard", "createpolicy", NULL};
    if (ptx_str_in(op, unfollowed) ||
        ((ptx_str_is(op, "st") || ptx_str_is(op, "red")) && ptx_instruction_has_mod(ins, "async")))
        set_unknown(b, "an instruction it does not follow (%.*s)", (int)op.n, op.p);
}

/* Keeps only the nodes the accesses' offsets reach (the registers of
 * everything else the kernel computes are most of them), in their order,
 * so that operands still come before the nodes using them. */
static int compact(struct mgpu_kernel_footprint *fp)
{
    if (fp->nnodes == 0)
        return 0;
    int *map = malloc(fp->nnodes * sizeof *map);
    if (map == NULL)
        return -1;
    for (size_t i = 0; i < fp->nnodes; i++)
        map[i] = -1;
    for (size_t i = 0; i < fp->naccesses; i++)
        map[fp->accesses[i].offset] = 0;
    /* operands come before their users: one pass from the end marks all */
    for (size_t i = fp->nnodes; i-- > 0;) {
        if (map[i] < 0)
            continue;
        if (fp->nodes[i].a >= 0)
            map[fp->nodes[i].a] = 0;
        if (fp->nodes[i].b >= 0)
            map[fp->nodes[i].b] = 0;
    }
    size_t kept = 0;
    for (size_t i = 0; i < fp->nnodes; i++) {
        if (map[i] < 0)
            continue;
        struct mgpu_fp_node n = fp->nodes[i];
        if (n.a >= 0)
            n.a = map[n.a];
        if (n.b >= 0)
            n.b = map[n.b];
        map[i] = (int)kept;
        fp->nodes[kept++] = n;
    }
    for (size_t i = 0; i < fp->naccesses; i++)
        fp->accesses[i].offset = map[fp->accesses[i].offset];
    fp->nnodes = kept;
    free(map);
    if (kept > 0) {
        struct mgpu_fp_node *shrunk = realloc(fp->nodes, kept * sizeof *shrunk);
        if (shrunk != NULL)
            fp->nodes = shrunk;
    }
    return 0;
}

int mgpu_ptx_footprint(const struct ptx_function *f, const int *access_param,
                       struct mgpu_kernel_footprint *out)
{
    memset(out, 0, sizeof *out);
    struct builder b;
    memset(&b, 0, sizeof b);
    b.f = f;
    b.access_param = access_param;
    b.fp = out;
    b.top = 0;
    b.top = leaf(&b, MGPU_FP_TOP, 0);
    b.symbol = leaf(&b, MGPU_FP_SYMBOL, 0);
    b.zero = leaf(&b, MGPU_FP_CONST, 0);
    if (access_param != NULL) {
        b.traced = calloc(f->nparams + 1, sizeof *b.traced);
        if (b.traced == NULL)
            b.oom = true;
        for (size_t i = 0; b.traced != NULL && i < f->nbody; i++)
            if (access_param[i] >= 0 && (size_t)access_param[i] < f->nparams)
                b.traced[access_param[i]] = true;
    }
    int rc = b.oom ? -1 : count_writes(&b);
    if (rc == 0)
        rc = mark_loops(&b);
    for (size_t i = 0; rc == 0 && i < f->nbody && !b.oom; i++) {
        const struct ptx_stmt *s = f->body[i];
        /* in body order, so that a register's inputs are mostly known */
        if (s->kind == PTX_INSTRUCTION && s->u.ins.nops > 0 &&
            writes_first_operand(s->u.ins.opcode)) {
            long id = ptx_name_set_find(&b.regs, s->u.ins.ops[0]);
            if (id >= 0 && b.reg[id].defs == 1)
                (void)value_of_register(&b, id);
        }
        follow_statement(&b, i);
    }
    if (rc == 0 && !b.oom && compact(out) != 0)
        b.oom = true;
    ptx_name_set_free(&b.regs);
    free(b.traced);
    free(b.reg);
    free(b.in_loop);
    free(b.stmt_value);
    if (rc != 0 || b.oom) {
        mgpu_kernel_footprint_free(out);
        return -1;
    }
    return 0;
}

void mgpu_kernel_footprint_free(struct mgpu_kernel_footprint *fp)
{
    free(fp->slots);
    free(fp->accesses);
    free(fp->nodes);
    memset(fp, 0, sizeof *fp);
}
