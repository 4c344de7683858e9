/* Owns the block-offset pass: a GPU that runs a slice of a grid must let
 * each block see its index in the whole grid and the whole grid's size.
 * Every kernel gets one more parameter, __mgpu_grid (the slice's first block
 * and the full grid, x y z each, then the iteration words of
 * ptx_stride_loop.h), and every read of %ctaid.{x,y,z} becomes
 * %ctaid + offset, every read of %nctaid.{x,y,z} the full grid. Device
 * functions cannot see kernel parameters, so when one reads these registers
 * the kernels copy __mgpu_grid into shared memory on entry and the function
 * reads it there. A kernel's grid-stride loop, found on the module as
 * parsed (struct ptx_stride_plan: the loops the analysis reports), is
 * rewritten after that rewriting (ptx_stride_loop.c). */
#include "ptx/ptx_edit.h"
#include "ptx/ptx_passes.h"
#include "ptx/ptx_stride_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const special_registers[6] = {"%ctaid.x",  "%ctaid.y",  "%ctaid.z",
                                                 "%nctaid.x", "%nctaid.y", "%nctaid.z"};

/* Which of the six registers an instruction reads, as a bit mask: none
 * when it writes a register of mgpu's glue that asks for the slice's. */
static unsigned registers_read(const struct ptx_instruction *ins)
{
    unsigned mask = 0;
    if (ins->nops > 0 && ptx_str_starts_with(ins->ops[0], "%" PTX_SLICE_REGISTER_PREFIX))
        return 0;
    for (uint32_t i = 0; i < ins->nops; i++) {
        struct ptx_str op = ins->ops[i];
        if (op.n < 6 || memchr(op.p, '%', op.n) == NULL)
            continue;
        for (unsigned r = 0; r < 6; r++)
            if (ptx_has_token(op, special_registers[r]))
                mask |= 1u << r;
    }
    return mask;
}

static bool function_reads_grid(const struct ptx_function *f)
{
    for (size_t i = 0; i < f->nbody; i++)
        if (f->body[i]->kind == PTX_INSTRUCTION && registers_read(&f->body[i]->u.ins))
            return true;
    return false;
}

/* The instruction in a block that first computes the registers it reads:
 * { .reg .b32 %__mgpu_ctaid_x; ld...; add...; instruction }. */
static void rewrite_instruction(struct ptx_body_builder *b, const struct ptx_stmt *s, unsigned mask,
                                bool in_kernel)
{
    static const char *const temp[6] = {"%__mgpu_ctaid_x",  "%__mgpu_ctaid_y",  "%__mgpu_ctaid_z",
                                        "%__mgpu_nctaid_x", "%__mgpu_nctaid_y", "%__mgpu_nctaid_z"};
    struct ptx_module *m = b->module;
    char prefix[1024];
    size_t len = (size_t)snprintf(prefix, sizeof prefix, "{\n");
    for (unsigned r = 0; r < 6; r++) {
        if (!(mask & (1u << r)))
            continue;
        const char *source = in_kernel ? "ld.param.u32" : "ld.shared.u32";
        const char *base = in_kernel ? MGPU_PTX_GRID_PARAM : MGPU_PTX_GRID_SHARED;
        if (r >= 3) { /* the full grid, as it is */
            len += (size_t)snprintf(prefix + len, sizeof prefix - len,
                                    ".reg .b32 %s;\n%s %s, [%s+%u];\n", temp[r], source, temp[r],
                                    base, 4 * r);
            continue;
        }
        /* Special registers may only be moved: the block index first, then
         * the slice's offset added to it. */
        len += (size_t)snprintf(prefix + len, sizeof prefix - len,
                                ".reg .b32 %s;\n.reg .b32 %s_offset;\nmov.u32 %s, %s;\n"
                                "%s %s_offset, [%s+%u];\nadd.u32 %s, %s, %s_offset;\n",
                                temp[r], temp[r], temp[r], special_registers[r], source, temp[r],
                                base, 4 * r, temp[r], temp[r], temp[r]);
    }
    ptx_builder_add_text(b, ptx_format(m, "%s", prefix));
    struct ptx_stmt *copy = ptx_copy_instruction(m, s);
    if (copy != NULL)
        for (uint32_t i = 0; i < copy->u.ins.nops; i++)
            for (unsigned r = 0; r < 6; r++)
                if (mask & (1u << r))
                    copy->u.ins.ops[i] = ptx_replace_token(
                        m, copy->u.ins.ops[i], ptx_str_of(special_registers[r]), temp[r]);
    for (uint32_t i = 0; copy != NULL && i < copy->u.ins.nops; i++)
        if (copy->u.ins.ops[i].p == NULL)
            copy = NULL;
    ptx_builder_add(b, copy);
    ptx_builder_add_text(b, "}");
}

static int add_grid_param(struct ptx_module *m, struct ptx_function *f)
{
    struct ptx_param *params = ptx_alloc(m, (f->nparams + 1) * sizeof *params);
    if (params == NULL)
        return -1;
    if (f->nparams)
        memcpy(params, f->params, f->nparams * sizeof *params);
    struct ptx_param *p = &params[f->nparams];
    memset(p, 0, sizeof *p);
    const char *text =
        ptx_format(m, ".param .align 8 .b8 " MGPU_PTX_GRID_PARAM "[%d]", MGPU_PTX_GRID_PARAM_SIZE);
    if (text == NULL)
        return -1;
    p->text = ptx_str_of(text);
    p->name = ptx_str_of(MGPU_PTX_GRID_PARAM);
    p->size = MGPU_PTX_GRID_PARAM_SIZE;
    p->aggregate = true;
    f->params = params;
    f->nparams++;
    f->has_param_list = true;
    return 0;
}

static int rewrite_function(struct ptx_module *m, struct ptx_function *f, bool copy_to_shared)
{
    struct ptx_body_builder b;
    ptx_builder_init(&b, m);
    if (copy_to_shared) {
        /* Every thread stores the same values, so no barrier is needed before
         * a thread's own later reads. */
        ptx_builder_add_text(&b, "{\n.reg .b32 %__mgpu_grid_word;\n");
        for (unsigned r = 0; r < 6; r++)
            ptx_builder_add_text(
                &b, ptx_format(m,
                               "ld.param.u32 %%__mgpu_grid_word, [" MGPU_PTX_GRID_PARAM "+%u];\n"
                               "st.shared.u32 [" MGPU_PTX_GRID_SHARED "+%u], %%__mgpu_grid_word;",
                               4 * r, 4 * r));
        ptx_builder_add_text(&b, "}");
    }
    for (size_t i = 0; i < f->nbody; i++) {
        struct ptx_stmt *s = f->body[i];
        unsigned mask = s->kind == PTX_INSTRUCTION ? registers_read(&s->u.ins) : 0;
        if (mask == 0)
            ptx_builder_add(&b, s);
        else
            rewrite_instruction(&b, s, mask, f->is_entry);
    }
    return ptx_builder_finish(&b, f);
}

/* The callee of a call instruction: the first operand that is not a
 * parenthesised list. */
static struct ptx_str callee_of(const struct ptx_instruction *ins)
{
    for (uint32_t i = 0; i < ins->nops; i++)
        if (ins->ops[i].n && ins->ops[i].p[0] != '(')
            return ins->ops[i];
    struct ptx_str none = {"", 0};
    return none;
}

/* Marks, by top-level index, the functions that read the grid registers
 * themselves (direct), and (reads) the device functions that read them or
 * call one that does, and the kernels that call one; an indirect call may
 * reach any of them. Returns whether any device function reads them. */
static bool mark_grid_readers(struct ptx_module *m, bool *direct, bool *reads)
{
    bool any_function = false;
    for (size_t t = 0; t < m->ntop; t++) {
        struct ptx_stmt *s = m->top[t];
        direct[t] =
            s->kind == PTX_FUNCTION && s->u.func.has_body && function_reads_grid(&s->u.func);
        reads[t] = direct[t] && !s->u.func.is_entry;
        any_function |= reads[t];
    }
    if (!any_function)
        return false;
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t t = 0; t < m->ntop; t++) {
            struct ptx_stmt *s = m->top[t];
            if (reads[t] || s->kind != PTX_FUNCTION || !s->u.func.has_body)
                continue;
            for (size_t i = 0; i < s->u.func.nbody && !reads[t]; i++) {
                struct ptx_stmt *st = s->u.func.body[i];
                if (st->kind != PTX_INSTRUCTION || !ptx_str_is(st->u.ins.opcode, "call"))
                    continue;
                struct ptx_str callee = callee_of(&st->u.ins);
                if (callee.n && callee.p[0] == '%') {
                    reads[t] = true;
                    continue;
                }
                for (size_t u = 0; u < m->ntop; u++)
                    if (reads[u] && m->top[u]->kind == PTX_FUNCTION &&
                        !m->top[u]->u.func.is_entry &&
                        ptx_str_equal(m->top[u]->u.func.name, callee))
                        reads[t] = true;
            }
            changed |= reads[t];
        }
    }
    return true;
}

int ptx_pass_block_offset(struct ptx_module *m, const struct ptx_stride_plan *loops)
{
    size_t next_loop = 0;
    bool *direct = calloc(2 * (m->ntop + 1), sizeof *direct);
    if (direct == NULL)
        return -1;
    bool *reads = direct + m->ntop + 1;
    int rc = -1;
    bool functions_read = mark_grid_readers(m, direct, reads);
    /* Adding the declaration replaces m->top; the old array stays valid. */
    struct ptx_stmt **top = m->top;
    size_t ntop = m->ntop;
    if (functions_read &&
        ptx_add_declaration(m, ".shared .align 4 .b8 " MGPU_PTX_GRID_SHARED "[24];") != 0)
        goto out;
    for (size_t i = 0; i < ntop; i++) {
        struct ptx_stmt *s = top[i];
        if (s->kind != PTX_FUNCTION || !s->u.func.has_body)
            continue;
        struct ptx_function *f = &s->u.func;
        if (f->is_entry && add_grid_param(m, f) != 0)
            goto out;
        bool copy_to_shared = f->is_entry && reads[i];
        /* The plan's loops are in the module's order, as these functions. */
        const struct ptx_stride_loop *loop = NULL;
        if (next_loop < loops->nfound && loops->found[next_loop].f == f)
            loop = &loops->found[next_loop++].loop;
        if ((direct[i] || copy_to_shared) && rewrite_function(m, f, copy_to_shared) != 0)
            goto out;
        if (loop != NULL && ptx_rewrite_stride_loop(m, f, loop) != 0)
            goto out;
    }
    rc = 0;
out:
    free(direct);
    return rc;
}
