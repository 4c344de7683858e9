/* Owns the module-globals pass. A module loaded once per GPU has its own
 * copy of every __device__ variable, which would fork the program's state.
 * So every use of a .global variable goes through a pointer the runtime
 * puts in a per-module table (__mgpu_globals) when it loads the module: the
 * address of the home module's variable, which every GPU can reach. .const
 * variables stay per GPU (a kernel cannot write them) and are listed for
 * the runtime to refresh from the home copy. String literals ($str...) are
 * immutable and never named by the host, so they stay too. */
#include "ptx/ptx_edit.h"
#include "ptx/ptx_passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct scan {
    const struct ptx_name_set *candidates;
    bool *referenced;
    long found[8]; /* the candidates an instruction names */
    size_t nfound;
    bool overflow; /* it names more than found holds */
};

static void note_name(struct ptx_str name, void *ctx)
{
    struct scan *s = ctx;
    long i = ptx_name_set_find(s->candidates, name);
    if (i < 0)
        return;
    if (s->referenced)
        s->referenced[i] = true;
    for (size_t k = 0; k < s->nfound; k++)
        if (s->found[k] == i)
            return;
    if (s->nfound < sizeof s->found / sizeof s->found[0])
        s->found[s->nfound++] = i;
    else
        s->overflow = true;
}

static bool redirectable(const struct ptx_variable *v)
{
    return v->space == PTX_SPACE_GLOBAL && v->name.n > 0 && !ptx_is_string_literal(v->name);
}

/* Whether a use of `name` in an operand is one the pass can redirect: inside
 * an address ([X], [X+8]) or the whole operand (mov.u64 %rd, X). */
static bool supported_use(struct ptx_str op, struct ptx_str name)
{
    if (op.n > 0 && op.p[0] == '[')
        return true;
    return ptx_str_equal(op, name);
}

static int redirect_instruction(struct ptx_body_builder *b, const struct ptx_stmt *s,
                                const struct scan *found, const struct ptx_name_set *candidates,
                                const long *table_index, char *err, size_t errlen)
{
    struct ptx_module *m = b->module;
    if (found->overflow) {
        snprintf(err, errlen, "an instruction names more than %zu global variables",
                 sizeof found->found / sizeof found->found[0]);
        return -1;
    }
    struct ptx_stmt *copy = ptx_copy_instruction(m, s);
    if (copy == NULL)
        return -1;
    ptx_builder_add_text(b, "{");
    for (size_t k = 0; k < found->nfound; k++) {
        struct ptx_str name = candidates->names[found->found[k]];
        char token[256];
        if (name.n >= sizeof token) {
            snprintf(err, errlen, "a variable name of %zu characters is too long", name.n);
            return -1;
        }
        memcpy(token, name.p, name.n);
        token[name.n] = '\0';
        long slot = table_index[found->found[k]];
        const char *temp = ptx_format(m, "%%__mgpu_global_%ld", slot);
        ptx_builder_add_text(
            b, ptx_format(m, ".reg .b64 %s;\nld.const.u64 %s, [" MGPU_PTX_GLOBALS_TABLE "+%ld];",
                          temp, temp, 8 * slot));
        for (uint32_t i = 0; i < copy->u.ins.nops; i++) {
            struct ptx_str op = copy->u.ins.ops[i];
            if (!ptx_has_token(op, token))
                continue;
            if (!supported_use(op, name)) {
                char quoted_op[4 * PTX_QUOTE_MAX + 4], quoted_name[4 * PTX_QUOTE_MAX + 4];
                snprintf(err, errlen, "'%s' uses the address of %s in a way mgpu cannot redirect",
                         ptx_quote(quoted_op, sizeof quoted_op, op),
                         ptx_quote(quoted_name, sizeof quoted_name, name));
                return -1;
            }
            copy->u.ins.ops[i] = ptx_replace_token(m, op, name, temp ? temp : "");
        }
    }
    ptx_builder_add(b, copy);
    ptx_builder_add_text(b, "}");
    return 0;
}

void ptx_globals_plan_free(struct ptx_globals_plan *plan)
{
    for (size_t i = 0; i < plan->nredirected; i++)
        free(plan->redirected[i]);
    for (size_t i = 0; i < plan->nconstants; i++)
        free(plan->constants[i]);
    free(plan->redirected);
    free(plan->constants);
    free(plan->constant_sizes);
    memset(plan, 0, sizeof *plan);
}

static int plan_constants(struct ptx_module *m, struct ptx_globals_plan *plan)
{
    size_t n = 0;
    for (size_t i = 0; i < m->ntop; i++)
        n += m->top[i]->kind == PTX_VARIABLE && m->top[i]->u.var.space == PTX_SPACE_CONST;
    plan->constants = calloc(n + 1, sizeof *plan->constants);
    plan->constant_sizes = calloc(n + 1, sizeof *plan->constant_sizes);
    if (plan->constants == NULL || plan->constant_sizes == NULL)
        return -1;
    for (size_t i = 0; i < m->ntop; i++) {
        const struct ptx_variable *v = &m->top[i]->u.var;
        if (m->top[i]->kind != PTX_VARIABLE || v->space != PTX_SPACE_CONST || v->external ||
            v->name.n == 0)
            continue;
        if ((plan->constants[plan->nconstants] = ptx_str_dup(v->name)) == NULL)
            return -1;
        plan->constant_sizes[plan->nconstants++] = v->size;
    }
    return 0;
}

int ptx_pass_module_globals(struct ptx_module *m, struct ptx_globals_plan *plan, char *err,
                            size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    struct ptx_name_set candidates = {0};
    int rc = -1;
    bool *referenced = NULL;
    long *table_index = NULL;
    snprintf(err, errlen, "out of memory");
    for (size_t i = 0; i < m->ntop; i++)
        if (m->top[i]->kind == PTX_VARIABLE && redirectable(&m->top[i]->u.var) &&
            ptx_name_set_add(&candidates, m->top[i]->u.var.name) < 0)
            goto out;
    if (plan_constants(m, plan) != 0)
        goto out;
    if (candidates.count == 0) {
        rc = 0;
        goto out;
    }
    referenced = calloc(candidates.count, sizeof *referenced);
    table_index = calloc(candidates.count, sizeof *table_index);
    if (referenced == NULL || table_index == NULL)
        goto out;

    /* An initializer holding a redirected variable's address would keep
     * pointing at this GPU's rewritten module. */
    for (size_t i = 0; i < m->ntop; i++) {
        const struct ptx_variable *v = &m->top[i]->u.var;
        if (m->top[i]->kind != PTX_VARIABLE || !v->initialized)
            continue;
        const char *eq = memchr(v->text.p, '=', v->text.n);
        struct ptx_str init = {eq, v->text.n - (size_t)(eq - v->text.p)};
        struct scan s = {&candidates, NULL, {0}, 0, false};
        ptx_for_each_name(init, note_name, &s);
        if (s.nfound) {
            struct ptx_str x = candidates.names[s.found[0]];
            char quoted_var[4 * PTX_QUOTE_MAX + 4], quoted_x[4 * PTX_QUOTE_MAX + 4];
            snprintf(err, errlen,
                     "the initializer of %s holds the address of %s, which mgpu cannot redirect",
                     ptx_quote(quoted_var, sizeof quoted_var, v->name),
                     ptx_quote(quoted_x, sizeof quoted_x, x));
            goto out;
        }
    }

    for (size_t t = 0; t < m->ntop; t++) {
        if (m->top[t]->kind != PTX_FUNCTION)
            continue;
        struct ptx_function *f = &m->top[t]->u.func;
        for (size_t i = 0; i < f->nbody; i++) {
            if (f->body[i]->kind != PTX_INSTRUCTION)
                continue;
            struct scan s = {&candidates, referenced, {0}, 0, false};
            for (uint32_t k = 0; k < f->body[i]->u.ins.nops; k++)
                ptx_for_each_name(f->body[i]->u.ins.ops[k], note_name, &s);
        }
    }
    size_t slots = 0;
    for (size_t i = 0; i < candidates.count; i++)
        table_index[i] = referenced[i] ? (long)slots++ : -1;
    if (slots == 0) {
        rc = 0;
        goto out;
    }
    plan->redirected = calloc(slots, sizeof *plan->redirected);
    if (plan->redirected == NULL)
        goto out;
    for (size_t i = 0; i < candidates.count; i++)
        if (referenced[i]) {
            if ((plan->redirected[plan->nredirected] = ptx_str_dup(candidates.names[i])) == NULL)
                goto out;
            plan->nredirected++;
        }

    for (size_t t = 0; t < m->ntop; t++) {
        if (m->top[t]->kind != PTX_FUNCTION || !m->top[t]->u.func.has_body)
            continue;
        struct ptx_function *f = &m->top[t]->u.func;
        struct ptx_body_builder b;
        ptx_builder_init(&b, m);
        for (size_t i = 0; i < f->nbody; i++) {
            struct ptx_stmt *st = f->body[i];
            struct scan s = {&candidates, NULL, {0}, 0, false};
            if (st->kind == PTX_INSTRUCTION)
                for (uint32_t k = 0; k < st->u.ins.nops; k++)
                    ptx_for_each_name(st->u.ins.ops[k], note_name, &s);
            if (s.nfound == 0) {
                ptx_builder_add(&b, st);
            } else if (redirect_instruction(&b, st, &s, &candidates, table_index, err, errlen) !=
                       0) {
                ptx_builder_finish(&b, f);
                goto out;
            }
        }
        if (ptx_builder_finish(&b, f) != 0)
            goto out;
    }
    if (ptx_add_declaration(
            m, ptx_format(m, ".const .align 8 .u64 " MGPU_PTX_GLOBALS_TABLE "[%zu];", slots)) != 0)
        goto out;
    rc = 0;
out:
    if (rc != 0)
        ptx_globals_plan_free(plan);
    free(referenced);
    free(table_index);
    ptx_name_set_free(&candidates);
    return rc;
}
