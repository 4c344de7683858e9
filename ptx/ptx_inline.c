/* Owns copying a device function's body in place of a call to it (see
 * ptx_inline.h). */
#include "ptx/ptx_inline.h"

#include <string.h>

struct param_use {
    const struct ptx_function *f;
    bool found;
};

static void note_param(struct ptx_str name, void *ctx)
{
    struct param_use *use = ctx;
    for (size_t j = 0; j < use->f->nparams; j++)
        use->found |= ptx_str_equal(name, use->f->params[j].name);
}

/* Whether operand `op` names a parameter of f. */
static bool names_param(const struct ptx_function *f, struct ptx_str op)
{
    struct param_use use = {f, false};
    ptx_for_each_name(op, note_param, &use);
    return use.found;
}

/* The width in bytes of an instruction's last type modifier (.u32 .b64
 * .s32 ...), or 0. */
static unsigned type_width(const struct ptx_instruction *ins)
{
    if (ins->nmods == 0)
        return 0;
    struct ptx_str t = ins->mods[ins->nmods - 1];
    if (t.n != 3 || (t.p[0] != 'u' && t.p[0] != 'b' && t.p[0] != 's'))
        return 0;
    if (t.p[1] == '3' && t.p[2] == '2')
        return 4;
    if (t.p[1] == '6' && t.p[2] == '4')
        return 8;
    return 0;
}

/* The parameter a load of one whole parameter reads ("ld.param.u32 %r,
 * [f_param_0]", "[f_param_0+0]" too), or -1. */
static long whole_param_load(const struct ptx_function *f, const struct ptx_instruction *ins)
{
    if (!ptx_str_is(ins->opcode, "ld") || ins->nmods != 2 || !ptx_str_is(ins->mods[0], "param") ||
        ins->nops != 2 || ins->guard.n != 0)
        return -1;
    struct ptx_str op = ins->ops[1];
    if (op.n < 3 || op.p[0] != '[' || op.p[op.n - 1] != ']')
        return -1;
    struct ptx_str inside = {op.p + 1, op.n - 2};
    for (size_t j = 0; j < f->nparams; j++) {
        struct ptx_str name = f->params[j].name;
        bool whole = ptx_str_equal(inside, name) ||
                     (inside.n == name.n + 2 && memcmp(inside.p, name.p, name.n) == 0 &&
                      memcmp(inside.p + name.n, "+0", 2) == 0);
        if (whole)
            return type_width(ins) == f->params[j].size ? (long)j : -1;
    }
    return -1;
}

bool ptx_inlinable(const struct ptx_function *f)
{
    if (!f->has_body || f->is_entry)
        return false;
    for (size_t j = 0; j < f->nparams; j++)
        if (f->params[j].aggregate || (f->params[j].size != 4 && f->params[j].size != 8))
            return false;
    static const char *const refused[] = {".local",       ".shared",        ".branchtargets",
                                          ".calltargets", ".callprototype", NULL};
    for (size_t i = 0; i < f->nbody; i++) {
        const struct ptx_stmt *s = f->body[i];
        if (s->kind == PTX_VERBATIM)
            return false;
        if (ptx_directive_is(s, refused))
            return false;
        if (s->kind != PTX_INSTRUCTION)
            continue;
        const struct ptx_instruction *ins = &s->u.ins;
        for (uint32_t k = 0; k < ins->nops; k++)
            if (names_param(f, ins->ops[k]) && !(k == 1 && whole_param_load(f, ins) >= 0))
                return false;
    }
    return true;
}

void ptx_inline(struct ptx_body_builder *b, const struct ptx_inline_call *c)
{
    struct ptx_module *m = b->module;
    const struct ptx_function *f = c->callee;
    const char *end = ptx_format(m, "$__mgpu_inlined_%.*s%s", (int)f->name.n, f->name.p, c->suffix);
    if (end == NULL) {
        b->failed = true;
        return;
    }
    if (c->guard.n) {
        bool negated = c->guard.p[0] == '!';
        ptx_builder_add_text(b, ptx_format(m, "@%s%.*s bra %s;", negated ? "" : "!",
                                           (int)c->guard.n - negated, c->guard.p + negated, end));
    }
    struct ptx_name_set labels = {0};
    for (size_t i = 0; i < f->nbody; i++)
        if (f->body[i]->kind == PTX_LABEL && ptx_name_set_add(&labels, f->body[i]->u.text) < 0)
            b->failed = true;
    ptx_builder_add_text(b, "{");
    static const char *const loc[] = {".loc", NULL};
    for (size_t i = 0; i < f->nbody && !b->failed; i++) {
        struct ptx_stmt *s = f->body[i];
        if (ptx_directive_is(s, loc))
            continue;
        if (s->kind == PTX_LABEL) {
            ptx_builder_add_text(
                b, ptx_format(m, "%.*s%s:", (int)s->u.text.n, s->u.text.p, c->suffix));
            continue;
        }
        if (s->kind != PTX_INSTRUCTION) {
            ptx_builder_add(b, s);
            continue;
        }
        const struct ptx_instruction *ins = &s->u.ins;
        const char *at = ins->guard.n ? "@" : "", *space = ins->guard.n ? " " : "";
        int guard_n = (int)ins->guard.n;
        long param = whole_param_load(f, ins);
        const char *text = NULL;
        if (ptx_str_is(ins->opcode, "ret"))
            text = ptx_format(m, "%s%.*s%sbra %s;", at, guard_n, ins->guard.p, space, end);
        else if (param >= 0)
            text = ptx_format(m, "mov.b%zu %.*s, %s;", f->params[param].size * 8,
                              (int)ins->ops[0].n, ins->ops[0].p, c->args[param]);
        for (size_t l = 0; text == NULL && l < c->nloads; l++)
            if (ptx_str_is(ins->opcode, "ld") && ins->nops == 2 &&
                ptx_str_is(ins->ops[1], c->loads[l].address))
                text = ptx_format(m, "%s%.*s%s%s %.*s, %s;", at, guard_n, ins->guard.p, space,
                                  c->loads[l].opcode, (int)ins->ops[0].n, ins->ops[0].p,
                                  c->loads[l].value);
        if (text != NULL)
            ptx_builder_add_text(b, text);
        else {
            struct ptx_stmt *r = ptx_rename_label_operands(m, s, &labels, c->suffix);
            b->failed |= r == NULL;
            if (r != NULL)
                ptx_builder_add(b, r);
        }
    }
    ptx_builder_add_text(b, ptx_format(m, "}\n%s:", end));
    ptx_name_set_free(&labels);
}
