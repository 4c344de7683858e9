/* Owns the scope pass: fences and atomics that other blocks can observe
 * are GPU-scoped in the program, but once a grid is split other blocks may
 * be on other GPUs, so they become system-scoped. Shared-memory atomics and
 * CTA- or cluster-scoped operations stay as they are (they never leave a
 * block or its cluster, and clusters are never split). */
#include "ptx/ptx_edit.h"
#include "ptx/ptx_passes.h"

static bool is_semantics(struct ptx_str mod)
{
    return ptx_str_is(mod, "relaxed") || ptx_str_is(mod, "acquire") || ptx_str_is(mod, "release") ||
           ptx_str_is(mod, "acq_rel") || ptx_str_is(mod, "sc");
}

static bool has_scope(const struct ptx_instruction *ins)
{
    return ptx_instruction_has_mod(ins, "cta") || ptx_instruction_has_mod(ins, "cluster") ||
           ptx_instruction_has_mod(ins, "gpu") || ptx_instruction_has_mod(ins, "sys");
}

/* The position of the modifier `mod`, or -1. */
static long mod_index(const struct ptx_instruction *ins, const char *mod)
{
    for (uint32_t i = 0; i < ins->nmods; i++)
        if (ptx_str_is(ins->mods[i], mod))
            return i;
    return -1;
}

enum change { KEEP, GPU_TO_SYS, ADD_SYS };

static enum change change_for(const struct ptx_instruction *ins)
{
    struct ptx_str op = ins->opcode;
    if (ptx_str_is(op, "membar"))
        return ins->nmods == 1 && ptx_str_is(ins->mods[0], "gl") ? GPU_TO_SYS : KEEP;
    if (ptx_str_is(op, "fence") || ptx_str_is(op, "ld") || ptx_str_is(op, "st"))
        return mod_index(ins, "gpu") >= 0 ? GPU_TO_SYS : KEEP;
    if (ptx_str_is(op, "atom") || ptx_str_is(op, "red")) {
        if (ptx_instruction_space(ins) == PTX_SPACE_SHARED)
            return KEEP;
        if (mod_index(ins, "gpu") >= 0)
            return GPU_TO_SYS;
        /* async (cluster) and multimem forms are not plain atomics */
        if (ptx_instruction_has_mod(ins, "async") || has_scope(ins))
            return KEEP;
        return ADD_SYS;
    }
    return KEEP;
}

static struct ptx_stmt *promote(struct ptx_module *m, const struct ptx_stmt *s, enum change change)
{
    struct ptx_stmt *copy = ptx_copy_instruction(m, s);
    if (copy == NULL)
        return NULL;
    struct ptx_instruction *ins = &copy->u.ins;
    if (change == GPU_TO_SYS) {
        long at = ptx_str_is(ins->opcode, "membar") ? 0 : mod_index(ins, "gpu");
        ins->mods[at] = ptx_str_of("sys");
        return copy;
    }
    /* atom{.sem}{.scope}{.space}.op.type: the scope goes after the semantics. */
    uint32_t at = ins->nmods && is_semantics(ins->mods[0]) ? 1 : 0;
    return ptx_insert_mod(m, ins, at, "sys") == 0 ? copy : NULL;
}

int ptx_pass_scope(struct ptx_module *m)
{
    for (size_t t = 0; t < m->ntop; t++) {
        if (m->top[t]->kind != PTX_FUNCTION)
            continue;
        struct ptx_function *f = &m->top[t]->u.func;
        for (size_t i = 0; i < f->nbody; i++) {
            struct ptx_stmt *s = f->body[i];
            if (s->kind != PTX_INSTRUCTION)
                continue;
            enum change change = change_for(&s->u.ins);
            if (change == KEEP)
                continue;
            struct ptx_stmt *promoted = promote(m, s, change);
            if (promoted == NULL)
                return -1;
            f->body[i] = promoted;
        }
    }
    return 0;
}
