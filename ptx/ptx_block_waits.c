/* Owns the question whether a function's loops wait for memory other
 * blocks write (see ptx_block_waits.h). */
#include "ptx/ptx_block_waits.h"

#include "ptx/ptx_edit.h"

#include <stdlib.h>

/* Passes over a loop's statements to follow its registers; a chain longer
 * than this from the load to the branch is not followed. */
#define TAINT_PASSES 8
/* Statements looked at over all of a function's loops, at most: past it
 * (loops within loops over a very long body) the function is said to
 * wait, which only keeps its slices off a shared device. */
#define WORK_MAX 4000000u

/* A load whose value another block's write can change while this block
 * waits: from global or generic memory, volatile, relaxed or acquire. */
static bool waiting_load(const struct ptx_instruction *ins)
{
    if (!ptx_str_is(ins->opcode, "ld") || ins->nops < 2)
        return false;
    enum ptx_space space = ptx_instruction_space(ins);
    if (space != PTX_SPACE_NONE && space != PTX_SPACE_GLOBAL)
        return false;
    return ptx_instruction_has_mod(ins, "volatile") || ptx_instruction_has_mod(ins, "relaxed") ||
           ptx_instruction_has_mod(ins, "acquire");
}

/* Instructions whose first operand is not what they write. */
static bool writes_first_operand(const struct ptx_instruction *ins)
{
    static const char *const no_destination[] = {
        "st",  "red",     "bra",       "ret",      "exit",      "call", "membar", "fence",
        "bar", "barrier", "nanosleep", "prefetch", "prefetchu", "trap", NULL};
    return ins->nops >= 1 && !ptx_str_in(ins->opcode, no_destination);
}

struct taint {
    struct ptx_name_set *set;
    bool found, grew, failed;
};

static void find_name(struct ptx_str name, void *ctx)
{
    struct taint *t = ctx;
    if (ptx_name_set_find(t->set, name) >= 0)
        t->found = true;
}

static void add_name(struct ptx_str name, void *ctx)
{
    struct taint *t = ctx;
    size_t before = t->set->count;
    if (ptx_name_set_add(t->set, name) < 0)
        t->failed = true;
    else if (t->set->count > before)
        t->grew = true;
}

/* The guard's register ("!%p1" or "%p1"). */
static struct ptx_str guard_register(struct ptx_str guard)
{
    if (guard.n > 0 && guard.p[0] == '!') {
        guard.p++;
        guard.n--;
    }
    return guard;
}

/* Whether the statements first..last (a loop's body, the branch back
 * last) hold a conditional branch whose predicate follows from a waiting
 * load among them. *failed when memory ran out or *work (statements
 * looked at so far) passed WORK_MAX. */
static bool loop_waits(struct ptx_stmt *const *body, size_t first, size_t last, size_t *work,
                       bool *failed)
{
    struct ptx_name_set set = {0};
    struct taint t = {&set, false, false, false};
    bool waits = false;
    for (int pass = 0; pass < TAINT_PASSES && !t.failed; pass++) {
        *work += last - first + 1;
        if (*work > WORK_MAX)
            t.failed = true;
        t.grew = false;
        for (size_t i = first; i <= last && !t.failed; i++) {
            if (body[i]->kind != PTX_INSTRUCTION)
                continue;
            const struct ptx_instruction *ins = &body[i]->u.ins;
            if (!writes_first_operand(ins))
                continue;
            bool tainted = waiting_load(ins);
            for (uint32_t k = 1; k < ins->nops && !tainted; k++) {
                t.found = false;
                ptx_for_each_name(ins->ops[k], find_name, &t);
                tainted = t.found;
            }
            if (tainted)
                ptx_for_each_name(ins->ops[0], add_name, &t);
        }
        if (!t.grew)
            break;
    }
    for (size_t i = first; i <= last && !t.failed && set.count > 0 && !waits; i++) {
        if (body[i]->kind != PTX_INSTRUCTION)
            continue;
        const struct ptx_instruction *ins = &body[i]->u.ins;
        if (ptx_str_is(ins->opcode, "bra") && ins->guard.n > 0)
            waits = ptx_name_set_find(&set, guard_register(ins->guard)) >= 0;
    }
    *failed = t.failed;
    ptx_name_set_free(&set);
    return waits;
}

bool ptx_function_waits_on_memory(const struct ptx_function *f)
{
    if (!f->has_body)
        return false;
    /* Where each label is, by name. */
    struct ptx_name_set labels = {0};
    size_t *at = malloc((f->nbody + 1) * sizeof *at);
    bool waits = false, failed = at == NULL;
    size_t work = 0;
    for (size_t i = 0; i < f->nbody && !failed; i++) {
        if (f->body[i]->kind != PTX_LABEL)
            continue;
        size_t before = labels.count;
        long id = ptx_name_set_add(&labels, f->body[i]->u.text);
        if (id < 0)
            failed = true;
        else if (labels.count > before) /* the first of a name */
            at[id] = i;
    }
    /* Each branch back to a label before it closes a loop. */
    for (size_t i = 0; i < f->nbody && !failed && !waits; i++) {
        if (f->body[i]->kind != PTX_INSTRUCTION)
            continue;
        const struct ptx_instruction *ins = &f->body[i]->u.ins;
        if (!ptx_str_is(ins->opcode, "bra") || ins->nops < 1)
            continue;
        long id = ptx_name_set_find(&labels, ins->ops[0]);
        if (id >= 0 && at[id] < i)
            waits = loop_waits(f->body, at[id], i, &work, &failed);
    }
    ptx_name_set_free(&labels);
    free(at);
    /* Out of memory or of work: said to wait, which only keeps slices off
     * a shared device. */
    return waits || failed;
}
