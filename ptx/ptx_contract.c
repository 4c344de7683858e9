/* Owns keeping a kernel's floating-point results when probe calls are put
 * into its body (see ptx_contract.h): the multiply and the add that ptxas
 * would fuse into one FMA, fused in the PTX where a call will come
 * between them. */
#include "ptx/ptx_contract.h"

#include "ptx/ptx_edit.h"

#include <stdlib.h>
#include <string.h>

/* The type of a mul or add/sub that ptxas may contract: "f32" or "f64",
 * with at most ftz besides (no rounding modifier, no sat); NULL
 * otherwise. *ftz says whether ftz is there. */
static const char *contractible(const struct ptx_instruction *ins, const char *opcode, bool *ftz)
{
    if (!ptx_str_is(ins->opcode, opcode) || ins->guard.n > 0 || ins->nops != 3)
        return NULL;
    const char *type = NULL;
    *ftz = false;
    for (uint32_t k = 0; k < ins->nmods; k++) {
        if (ptx_str_is(ins->mods[k], "ftz"))
            *ftz = true;
        else if (ptx_str_is(ins->mods[k], "f32"))
            type = "f32";
        else if (ptx_str_is(ins->mods[k], "f64"))
            type = "f64";
        else
            return NULL;
    }
    return type != NULL && !(*ftz && strcmp(type, "f64") == 0) ? type : NULL;
}

static bool is_register(struct ptx_str s)
{
    return s.n > 1 && s.p[0] == '%';
}

/* Whether statement s writes, or may write, the register reg: its first
 * operand names it, or it is not a plain instruction. Stores and
 * reductions write memory only. */
static bool may_write(const struct ptx_stmt *s, struct ptx_str reg)
{
    if (s->kind != PTX_INSTRUCTION || s->unparsed)
        return true;
    const struct ptx_instruction *ins = &s->u.ins;
    if (ins->nops == 0 || ptx_str_is(ins->opcode, "st") || ptx_str_is(ins->opcode, "red"))
        return false;
    char *name = ptx_str_dup(reg);
    bool writes = name == NULL || ptx_has_token(ins->ops[0], name);
    free(name);
    return writes;
}

/* How often each name is mentioned in the body: every operand of every
 * instruction, destinations included, and the whole text of a statement
 * kept verbatim; an instruction not parsed makes every count unknown. */
struct mentions {
    struct ptx_name_set names;
    size_t *count; /* per name of `names` */
    size_t cap;
    bool failed;
};

static void mention(struct ptx_str name, void *ctx)
{
    struct mentions *m = ctx;
    long id = ptx_name_set_add(&m->names, name);
    if (id < 0) {
        m->failed = true;
        return;
    }
    if ((size_t)id >= m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        while (cap <= (size_t)id)
            cap *= 2;
        size_t *grown = realloc(m->count, cap * sizeof *grown);
        if (grown == NULL) {
            m->failed = true;
            return;
        }
        memset(grown + m->cap, 0, (cap - m->cap) * sizeof *grown);
        m->count = grown;
        m->cap = cap;
    }
    m->count[id]++;
}

/* Counts the mentions of every name in body[0 .. n); false when they
 * cannot be known (an unparsed instruction, memory run out). */
static bool count_mentions(struct ptx_stmt *const *body, size_t n, struct mentions *m)
{
    for (size_t i = 0; i < n && !m->failed; i++) {
        const struct ptx_stmt *s = body[i];
        if (s->kind == PTX_VERBATIM)
            ptx_for_each_name(s->u.text, mention, m);
        else if (s->unparsed)
            return false;
        else if (s->kind == PTX_INSTRUCTION)
            for (uint32_t k = 0; k < s->u.ins.nops; k++)
                ptx_for_each_name(s->u.ins.ops[k], mention, m);
    }
    return !m->failed;
}

/* Whether reg is named exactly twice in the body: its one write (the mul)
 * and its one read. */
static bool written_and_read_once(const struct mentions *m, struct ptx_str reg)
{
    long id = ptx_name_set_find(&m->names, reg);
    return id >= 0 && (size_t)id < m->cap && m->count[id] == 2;
}

/* The fused text for the add or sub `use` of the mul's result (its
 * destination d, operands a and b): fma with the other operand x, negated
 * through d (which nothing else reads) where the product is subtracted or
 * subtracts. NULL when it cannot be written. */
static const char *fused(struct ptx_module *m, const struct ptx_instruction *mul,
                         const struct ptx_instruction *use, const char *type, bool ftz)
{
    struct ptx_str d = mul->ops[0], a = mul->ops[1], b = mul->ops[2];
    bool d_first = ptx_str_equal(use->ops[1], d);
    struct ptx_str x = d_first ? use->ops[2] : use->ops[1];
    struct ptx_str e = use->ops[0];
    const char *f = ftz ? ".ftz" : "";
    if (ptx_str_is(use->opcode, "add"))
        return ptx_format(m, "fma.rn%s.%s %.*s, %.*s, %.*s, %.*s;", f, type, (int)e.n, e.p,
                          (int)a.n, a.p, (int)b.n, b.p, (int)x.n, x.p);
    if (!d_first) { /* x - a*b = fma(-a, b, x) */
        if (!is_register(a))
            return NULL;
        return ptx_format(m, "neg%s.%s %.*s, %.*s;\nfma.rn%s.%s %.*s, %.*s, %.*s, %.*s;", f, type,
                          (int)d.n, d.p, (int)a.n, a.p, f, type, (int)e.n, e.p, (int)d.n, d.p,
                          (int)b.n, b.p, (int)x.n, x.p);
    }
    /* a*b - x = fma(a, b, -x) */
    return ptx_format(m, "neg%s.%s %.*s, %.*s;\nfma.rn%s.%s %.*s, %.*s, %.*s, %.*s;", f, type,
                      (int)d.n, d.p, (int)x.n, x.p, f, type, (int)e.n, e.p, (int)a.n, a.p, (int)b.n,
                      b.p, (int)d.n, d.p);
}

size_t ptx_contract_plan(struct ptx_module *m, struct ptx_stmt *const *body, size_t n,
                         const bool *glue_before, const char **replace)
{
    size_t fusedn = 0;
    for (size_t i = 0; i < n; i++)
        replace[i] = NULL;
    struct mentions names = {0};
    bool counted = count_mentions(body, n, &names);
    for (size_t i = 0; counted && i < n; i++) {
        const struct ptx_stmt *s = body[i];
        bool ftz;
        const char *type;
        if (s->kind != PTX_INSTRUCTION || s->unparsed ||
            (type = contractible(&s->u.ins, "mul", &ftz)) == NULL)
            continue;
        const struct ptx_instruction *mul = &s->u.ins;
        struct ptx_str d = mul->ops[0];
        if (!is_register(d) || !written_and_read_once(&names, d))
            continue;
        /* The one use, later in the same straight run of instructions,
         * with none of d, a and b written on the way. */
        bool separated = false, found = false;
        size_t j = i + 1;
        for (; j < n; j++) {
            const struct ptx_stmt *t = body[j];
            separated = separated || glue_before[j];
            if (t->kind != PTX_INSTRUCTION || t->unparsed || t->u.ins.guard.n > 0 ||
                ptx_str_is(t->u.ins.opcode, "bra") || ptx_str_is(t->u.ins.opcode, "call") ||
                ptx_str_is(t->u.ins.opcode, "ret") || ptx_str_is(t->u.ins.opcode, "exit") ||
                ptx_str_starts_with(t->u.ins.opcode, "bar"))
                break;
            const struct ptx_instruction *ins = &t->u.ins;
            for (uint32_t k = 0; k < ins->nops; k++)
                found = found || ptx_str_equal(ins->ops[k], d);
            if (found || may_write(t, d) || may_write(t, mul->ops[1]) || may_write(t, mul->ops[2]))
                break;
        }
        if (!found || !separated)
            continue; /* not one run, or no call comes between them: ptxas sees them as they were */
        const struct ptx_instruction *use = &body[j]->u.ins;
        bool use_ftz;
        const char *use_type = contractible(use, "add", &use_ftz);
        if (use_type == NULL)
            use_type = contractible(use, "sub", &use_ftz);
        if (use_type == NULL || strcmp(use_type, type) != 0 || use_ftz != ftz ||
            ptx_str_equal(use->ops[0], d) || ptx_str_equal(use->ops[1], use->ops[2]))
            continue;
        const char *text = fused(m, mul, use, type, ftz);
        if (text != NULL) {
            replace[j] = text;
            fusedn++;
        }
    }
    ptx_name_set_free(&names.names);
    free(names.count);
    return fusedn;
}
