/* Owns the probes pass (see ptx_probes.h): linking probe files into a
 * module and running their probes at the entry and exit of the kernels
 * they attach to.
 *
 * Entry and exit probes are inlined (ptx_inline.h) where their bodies
 * allow, else called: inlined, a probe's reads of the kernel's id become a
 * constant and of the launch's number a read of __mgpu_grid. Only where
 * some code that is not inlined reads them (a memory probe, a helper a
 * probe calls) do they go to the block's __mgpu_probe_block at entry:
 * stored by every thread (all store the same values, so no thread reads
 * before its own store) when every thread runs probes, else by thread
 * (0, 0, 0) only. Entry probes run with the block-edge flag set in thread
 * (0, 0, 0). The entry glue goes after the body's opening statements
 * that only compute registers (glue_position). With exit probes, thread
 * (0, 0, 0) also zeroes the block's count of threads gone and the block
 * waits at a barrier before the entry probes, which every thread reaches
 * because the statements before it have no branch (after the probes,
 * every block waited for thread (0, 0, 0)'s: launch-latency made
 * vector_add 1.31x slower on an H100, against 1.17x with the barrier
 * before them, both with a relaxed count).
 *
 * Before each `ret` and `exit` of the kernel (under the instruction's own
 * guard) the threads leaving together count themselves gone, with one
 * atomic per warp rather than per thread; the lowest thread of the warp
 * that makes the count the block's size has the flag set. The count is an
 * acquire-release atomic: thread (0, 0, 0) is the lowest thread of its
 * warp whenever it leaves, so what its block-entry probes stored in shared
 * memory is visible to the thread that runs the block-exit probes.
 *
 * Entry and exit probes run in every thread, block-entry and block-exit
 * probes only in the thread with the flag, warp-exit probes in the lowest
 * thread of each warp's threads leaving together. Memory probes are
 * called before each global access (ptx_probe_access.c), with the
 * parameter the kernel analysis says the access reaches; a kernel with
 * them, or whose probe file reads mgpu_kernel_param(), has every thread
 * store the block's words, so none waits for another.
 *
 * A kernel with block-sampled probes (ptx_probes.h) runs its body twice:
 * its top-level declarations first, then the test of the block, which
 * branches sampled blocks past the unsampled copy (the body with the glue
 * of the probes that run in every block, if any, and a ret where the body
 * could run off its end) to the sampled copy (the body with every probe's
 * glue, its labels and the branches to them renamed). Each copy is a
 * block of its own, so the glue's declarations do not meet. On an H200,
 * launch-latency and block-time in one block in 32 cost vector_add 1.03x
 * where in every block they cost 1.33x and 1.40x (bench/RESULTS.md). */
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_contract.h"
#include "ptx/ptx_edit.h"
#include "ptx/ptx_inline.h"
#include "ptx/ptx_passes.h"
#include "ptx/ptx_probe_access.h"
#include "ptx/ptx_probes.h"
#include "ptx/ptx_stride_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the module keeps of a probe file: everything but its header lines
 * (.version, .target, .address_size) and its declarations. */
static bool kept(const struct ptx_stmt *s)
{
    if (s->kind == PTX_VERBATIM) {
        struct ptx_str t = s->u.text;
        return !(ptx_str_starts_with(t, ".version") || ptx_str_starts_with(t, ".target") ||
                 ptx_str_starts_with(t, ".address_size"));
    }
    if (s->kind == PTX_VARIABLE)
        return !ptx_str_starts_with(s->u.var.name, "__mgpu_probe_attach_") &&
               !ptx_str_starts_with(s->u.var.name, "__mgpu_probe_map_");
    return true;
}

/* A probe-file symbol the module has too. External declarations may
 * repeat (both may declare vprintf); definitions may not. */
static bool clashes(struct ptx_module *m, const struct ptx_stmt *s, struct ptx_str *name)
{
    if (s->kind == PTX_FUNCTION) {
        const struct ptx_function *mine = ptx_find_function(m, s->u.func.name);
        *name = s->u.func.name;
        return mine != NULL && (mine->has_body || s->u.func.has_body);
    }
    if (s->kind == PTX_VARIABLE) {
        const struct ptx_variable *mine = ptx_find_variable(m, s->u.var.name);
        *name = s->u.var.name;
        return mine != NULL && !(mine->external && s->u.var.external);
    }
    return false;
}

static bool declared_already(struct ptx_module *m, const struct ptx_stmt *s)
{
    if (s->kind == PTX_FUNCTION && !s->u.func.has_body)
        return ptx_find_function(m, s->u.func.name) != NULL;
    if (s->kind == PTX_VARIABLE && s->u.var.external)
        return ptx_find_variable(m, s->u.var.name) != NULL;
    return false;
}

/* The two numbers of a ".version X.Y" line, as X * 10 + Y. */
static unsigned version_of(struct ptx_str line)
{
    unsigned major = 0, minor = 0;
    char buf[32];
    size_t n = line.n < sizeof buf - 1 ? line.n : sizeof buf - 1;
    memcpy(buf, line.p, n);
    buf[n] = '\0';
    if (sscanf(buf, ".version %u.%u", &major, &minor) != 2)
        return 0;
    return major * 10 + minor;
}

/* The module's .version and .target raised to the probe file's where the
 * file's are newer: PTX of an older ISA or target assembles unchanged
 * under a newer one, and the JIT compiles for the GPU in any case. */
static int raise_header(struct ptx_module *m, const struct ptx_module *probe)
{
    unsigned probe_version = 0;
    for (size_t i = 0; i < probe->ntop; i++)
        if (probe->top[i]->kind == PTX_VERBATIM &&
            ptx_str_starts_with(probe->top[i]->u.text, ".version"))
            probe_version = version_of(probe->top[i]->u.text);
    for (size_t i = 0; i < m->ntop; i++) {
        struct ptx_stmt *s = m->top[i];
        if (s->kind != PTX_VERBATIM)
            continue;
        const char *replacement = NULL;
        if (ptx_str_starts_with(s->u.text, ".version") && version_of(s->u.text) < probe_version)
            replacement = ptx_format(m, ".version %u.%u", probe_version / 10, probe_version % 10);
        else if (ptx_str_starts_with(s->u.text, ".target") &&
                 m->target_arch < probe->target_arch && m->target_arch != 0)
            replacement = ptx_format(m, ".target sm_%u", probe->target_arch);
        if (replacement == NULL)
            continue;
        struct ptx_stmt *copy = ptx_copy_stmt(m, s);
        if (copy == NULL)
            return -1;
        copy->u.text = ptx_str_of(replacement);
        m->top[i] = copy;
    }
    if (m->target_arch < probe->target_arch && m->target_arch != 0)
        m->target_arch = probe->target_arch;
    return 0;
}

/* Puts the kept statements of `probe` before the module's first function. */
static int splice(struct ptx_module *m, const struct ptx_module *probe, const char *file, char *err,
                  size_t errlen)
{
    size_t at = 0;
    while (at < m->ntop && m->top[at]->kind != PTX_FUNCTION)
        at++;
    struct ptx_stmt **top = ptx_alloc(m, (m->ntop + probe->ntop + 1) * sizeof *top);
    if (top == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < at; i++)
        top[n++] = m->top[i];
    for (size_t i = 0; i < probe->ntop; i++) {
        const struct ptx_stmt *s = probe->top[i];
        struct ptx_str name;
        if (!kept(s) || declared_already(m, s))
            continue;
        if (clashes(m, s, &name)) {
            char quoted[96];
            snprintf(err, errlen, "probe %s: its symbol %s is the program's too; rename it", file,
                     ptx_quote(quoted, sizeof quoted, name));
            return -1;
        }
        top[n++] = probe->top[i];
    }
    for (size_t i = at; i < m->ntop; i++)
        top[n++] = m->top[i];
    m->top = top;
    m->ntop = n;
    return 0;
}

/* The call of one probe with the edge flag in register `edge`. */
static const char *call_text(struct ptx_module *m, const char *function, const char *edge,
                             struct ptx_str guard)
{
    char guard_text[80] = "";
    if (guard.n)
        snprintf(guard_text, sizeof guard_text, "@%.*s ", (int)guard.n, guard.p);
    return ptx_format(m,
                      "{\n.param .b32 __mgpu_probe_edge;\nst.param.b32 [__mgpu_probe_edge], %s;\n"
                      "%scall %s, (__mgpu_probe_edge);\n}",
                      edge, guard_text, function);
}

/* What a kernel's probes need of the glue. */
struct glue_needs {
    bool count;       /* exit or block-exit probes: the count of threads gone */
    bool all_threads; /* every thread stores the launch and kernel words */
    bool exits;       /* probes before ret and exit */
    bool accesses;    /* memory probes */
    bool params;      /* the parameters' addresses for mgpu_kernel_param() */
};

/* What the pass knows of the module besides the probe set. */
struct pass_state {
    const struct ptx_probe_inject *inject;
    const struct ptx_stride_plan *loops; /* kernels whose body is not copied */
    bool params_used;                /* a probe file reads __mgpu_probe_params */
    struct mgpu_ptx_analysis access; /* with access_param; empty without memory probes */
    /* per probe: its function, where its calls are inlined (ptx_inline.h);
     * NULL where they stay calls */
    const struct ptx_function **inlined;
    /* code that is not inlined reads the launch's number or the kernel's
     * id from __mgpu_probe_block: the glue stores them there */
    bool block_words;
    unsigned *sites; /* inlined calls so far: their labels' suffixes */
    /* some function of the program reads %ctaid.y, %ctaid.z */
    bool block_rows, block_layers;
};

/* The loads of the block words (the kernel's id, the launch's number) that
 * an inlined probe does without: add_probe_call replaces them,
 * plan_inlining looks for any other use. */
#define KERNEL_ID_WORD "[" PTX_PROBE_BLOCK "+8]"
#define LAUNCH_WORD "[" PTX_PROBE_BLOCK "]"

/* The call of probe `probe` with the edge flag in register `edge`, under
 * `guard` (empty: none): its body in place of the call where it can be,
 * with the kernel's id a constant and the launch's number read from
 * __mgpu_grid rather than from shared memory. Inlined, thread-count cost
 * vector_add 1.050x instead of 1.073x called (one H200). */
static void add_probe_call(struct ptx_body_builder *b, const struct pass_state *st, size_t probe,
                           unsigned kernel_id, const char *edge, struct ptx_str guard)
{
    struct ptx_module *m = b->module;
    const struct ptx_probe *p = &st->inject->set->probes[probe];
    const struct ptx_function *f = st->inlined[probe];
    if (f == NULL) {
        ptx_builder_add_text(b, call_text(m, p->function, edge, guard));
        return;
    }
    const char *kernel = ptx_format(m, "%u", kernel_id);
    const char *sequence =
        ptx_format(m, "[" MGPU_PTX_GRID_PARAM "+%d]", MGPU_PTX_GRID_SEQUENCE_OFFSET);
    const char *suffix = ptx_format(m, "_%u", (*st->sites)++);
    struct ptx_inline_load loads[2] = {
        {KERNEL_ID_WORD, "mov.u32", kernel},
        {LAUNCH_WORD, "ld.param.u32", sequence},
    };
    if (kernel == NULL || sequence == NULL || suffix == NULL) {
        b->failed = true;
        return;
    }
    const char *args[1] = {edge};
    struct ptx_inline_call call = {f, args, guard, suffix, loads, 2};
    ptx_inline(b, &call);
}

static struct glue_needs needs_of(const struct ptx_probe_set *set, const size_t *probes,
                                  size_t nprobes, bool params_used)
{
    bool entry = false, warp_exit = false;
    struct glue_needs n = {false, false, false, false, params_used};
    for (size_t i = 0; i < nprobes; i++) {
        enum ptx_probe_place place = set->probes[probes[i]].place;
        n.count |= place == PTX_PROBE_EXIT || place == PTX_PROBE_BLOCK_EXIT;
        n.exits |= ptx_probe_at_exit(place);
        n.accesses |= ptx_probe_at_access(place);
        entry |= place == PTX_PROBE_ENTRY;
        warp_exit |= place == PTX_PROBE_WARP_EXIT;
    }
    /* Thread (0, 0, 0)'s stores reach the other threads' probes through the
     * barrier that comes with the count; without it, or with probes every
     * thread calls at entry or at its accesses, each thread stores the words
     * itself. */
    n.all_threads = entry || n.accesses || n.params || (warp_exit && !n.count);
    return n;
}

/* At the kernel's entry. The first thread is (0, 0, 0), found from all
 * three %tid: reading %tid.y and %tid.z only in blocks of more than one
 * row or layer, under a predicate or a branch, cost thread-count 1.5 to
 * 2.6 points more on vector_add than reading them (one H200). The
 * launch's number and the kernel's id go to __mgpu_probe_block only where
 * code that is not inlined reads them (storing them cost vector_add
 * 2.4 %). */
static void add_entry_glue(struct ptx_body_builder *b, const struct pass_state *st,
                           const struct ptx_function *f, const size_t *probes, size_t nprobes,
                           struct glue_needs needs, unsigned kernel_id)
{
    const struct ptx_probe_set *set = st->inject->set;
    struct ptx_module *m = b->module;
    const char *who = needs.all_threads ? "" : "@%__mgpu_probe_first ";
    ptx_builder_add_text(b, "{\n.reg .b32 %__mgpu_probe_w<3>;\n.reg .pred %__mgpu_probe_first;\n"
                            "mov.u32 %__mgpu_probe_w0, %tid.x;\nmov.u32 %__mgpu_probe_w1, %tid.y;\n"
                            "or.b32 %__mgpu_probe_w0, %__mgpu_probe_w0, %__mgpu_probe_w1;\n"
                            "mov.u32 %__mgpu_probe_w1, %tid.z;\n"
                            "or.b32 %__mgpu_probe_w0, %__mgpu_probe_w0, %__mgpu_probe_w1;\n"
                            "setp.eq.u32 %__mgpu_probe_first, %__mgpu_probe_w0, 0;\n"
                            "selp.u32 %__mgpu_probe_w2, 1, 0, %__mgpu_probe_first;");
    if (st->block_words)
        ptx_builder_add_text(
            b, ptx_format(m,
                          "%sld.param.u32 %%__mgpu_probe_w0, [" MGPU_PTX_GRID_PARAM "+%d];\n"
                          "%sst.shared.u32 [" PTX_PROBE_BLOCK "], %%__mgpu_probe_w0;\n"
                          "mov.u32 %%__mgpu_probe_w0, %u;\n"
                          "%sst.shared.u32 [" PTX_PROBE_BLOCK "+8], %%__mgpu_probe_w0;",
                          who, MGPU_PTX_GRID_SEQUENCE_OFFSET, who, kernel_id, who));
    if (needs.params) {
        ptx_builder_add_text(b, ".reg .b64 %__mgpu_probe_p;");
        for (size_t i = 0; i < PTX_PROBE_PARAMS; i++) {
            if (i < f->nparams)
                ptx_builder_add_text(b, ptx_format(m,
                                                   "mov.u64 %%__mgpu_probe_p, %.*s;\n"
                                                   "cvta.param.u64 %%__mgpu_probe_p, "
                                                   "%%__mgpu_probe_p;",
                                                   (int)f->params[i].name.n, f->params[i].name.p));
            else
                ptx_builder_add_text(b, "mov.u64 %__mgpu_probe_p, 0;");
            ptx_builder_add_text(b, ptx_format(m,
                                               "st.shared.u64 [" PTX_PROBE_PARAMS_SHARED "+%zu], "
                                               "%%__mgpu_probe_p;",
                                               i * 8));
        }
    }
    if (needs.count)
        ptx_builder_add_text(b, "@%__mgpu_probe_first st.shared.u32 [" PTX_PROBE_BLOCK "+4], 0;\n"
                                "bar.sync 0;");
    struct ptx_str none = {"", 0};
    bool block_level = false;
    for (size_t i = 0; i < nprobes; i++) {
        const struct ptx_probe *p = &set->probes[probes[i]];
        if (p->place == PTX_PROBE_ENTRY)
            add_probe_call(b, st, probes[i], kernel_id, "%__mgpu_probe_w2", none);
        block_level |= p->place == PTX_PROBE_BLOCK_ENTRY;
    }
    /* Block-level probes behind a branch, and the warp made whole again
     * after it: the same calls under a predicate made saxpy (a grid-stride
     * loop) 1.40x slower on an H100 instead of 1.003x. */
    if (block_level) {
        ptx_builder_add_text(b, "activemask.b32 %__mgpu_probe_w0;\n"
                                "@!%__mgpu_probe_first bra $__mgpu_probe_entered;");
        for (size_t i = 0; i < nprobes; i++) {
            const struct ptx_probe *p = &set->probes[probes[i]];
            if (p->place == PTX_PROBE_BLOCK_ENTRY)
                add_probe_call(b, st, probes[i], kernel_id, "%__mgpu_probe_w2", none);
        }
        ptx_builder_add_text(b, "$__mgpu_probe_entered:\nbar.warp.sync %__mgpu_probe_w0;");
    }
    ptx_builder_add_text(b, "}");
}

/* Before a ret or exit under `guard` (empty: none). The lowest of the
 * threads leaving together leads them: it calls the warp-exit probes and,
 * with a count, adds their number to it and sees whether that completes
 * the block. */
static void add_exit_glue(struct ptx_body_builder *b, const struct pass_state *st,
                          const size_t *probes, size_t nprobes, struct glue_needs needs,
                          unsigned kernel_id, struct ptx_str guard)
{
    const struct ptx_probe_set *set = st->inject->set;
    struct ptx_module *m = b->module;
    char leaving[96], leader[128];
    if (guard.n) {
        snprintf(leaving, sizeof leaving, "vote.sync.ballot.b32 %%__mgpu_probe_x2, %.*s, "
                                          "%%__mgpu_probe_x1;", (int)guard.n, guard.p);
        snprintf(leader, sizeof leader, "setp.eq.and.u32 %%__mgpu_probe_go, %%__mgpu_probe_x3, 0, "
                                        "%.*s;", (int)guard.n, guard.p);
    } else {
        snprintf(leaving, sizeof leaving, "mov.b32 %%__mgpu_probe_x2, %%__mgpu_probe_x1;");
        snprintf(leader, sizeof leader, "setp.eq.u32 %%__mgpu_probe_go, %%__mgpu_probe_x3, 0;");
    }
    ptx_builder_add_text(
        b, ptx_format(m,
                      "{\n.reg .b32 %%__mgpu_probe_x<7>;\n"
                      ".reg .pred %%__mgpu_probe_go, %%__mgpu_probe_last;\n"
                      "activemask.b32 %%__mgpu_probe_x1;\n%s\n"
                      "mov.u32 %%__mgpu_probe_x3, %%lanemask_lt;\n"
                      "and.b32 %%__mgpu_probe_x3, %%__mgpu_probe_x3, %%__mgpu_probe_x2;\n%s",
                      leaving, leader));
    if (needs.count)
        ptx_builder_add_text(
            b, "mov.u32 %__mgpu_probe_x0, %ntid.x;\nmov.u32 %__mgpu_probe_x1, %ntid.y;\n"
               "mul.lo.u32 %__mgpu_probe_x0, %__mgpu_probe_x0, %__mgpu_probe_x1;\n"
               "mov.u32 %__mgpu_probe_x1, %ntid.z;\n"
               "mul.lo.u32 %__mgpu_probe_x0, %__mgpu_probe_x0, %__mgpu_probe_x1;\n"
               "popc.b32 %__mgpu_probe_x4, %__mgpu_probe_x2;\n"
               "mov.u32 %__mgpu_probe_x5, 0;\n"
               "@%__mgpu_probe_go atom.acq_rel.cta.shared.add.u32 %__mgpu_probe_x5, "
               "[" PTX_PROBE_BLOCK "+4], %__mgpu_probe_x4;\n"
               "add.u32 %__mgpu_probe_x5, %__mgpu_probe_x5, %__mgpu_probe_x4;\n"
               "setp.eq.and.u32 %__mgpu_probe_last, %__mgpu_probe_x5, %__mgpu_probe_x0, "
               "%__mgpu_probe_go;\n"
               "selp.u32 %__mgpu_probe_x6, 1, 0, %__mgpu_probe_last;");
    else
        ptx_builder_add_text(b, "mov.u32 %__mgpu_probe_x6, 0;");
    struct ptx_str last = ptx_str_of("%__mgpu_probe_last"), go = ptx_str_of("%__mgpu_probe_go");
    for (size_t i = 0; i < nprobes; i++) {
        const struct ptx_probe *p = &set->probes[probes[i]];
        if (ptx_probe_at_exit(p->place))
            add_probe_call(b, st, probes[i], kernel_id, "%__mgpu_probe_x6",
                           p->place == PTX_PROBE_EXIT        ? guard
                           : p->place == PTX_PROBE_WARP_EXIT ? go
                                                             : last);
    }
    ptx_builder_add_text(b, "}");
}

static bool leaves_kernel(const struct ptx_stmt *s)
{
    return s->kind == PTX_INSTRUCTION &&
           (ptx_str_is(s->u.ins.opcode, "ret") || ptx_str_is(s->u.ins.opcode, "exit"));
}

/* The analysis's record of kernel f, or NULL. */
static const struct mgpu_kernel_info *analysed(const struct pass_state *st,
                                               const struct ptx_function *f)
{
    for (size_t i = 0; i < st->access.nkernels; i++)
        if (ptx_str_is(f->name, st->access.kernels[i].name))
            return &st->access.kernels[i];
    return NULL;
}

/* For a walk over a body, one statement at a time (*depth: the block
 * depth, updated here): whether s is a declaration the two copies of the
 * body share, one of the body's own at its top level. Those go once before
 * both copies and are left out of each; hoisting and leaving out ask this
 * one question, so that they agree. */
static bool shared_declaration(const struct ptx_stmt *s, int *depth)
{
    static const char *const declarations[] = {".reg", ".local", ".shared", ".param", NULL};
    *depth += s->kind == PTX_BLOCK_OPEN;
    *depth -= s->kind == PTX_BLOCK_CLOSE;
    return *depth == 0 && ptx_directive_is(s, declarations);
}

/* Whether s only computes registers: from registers, immediates, the
 * kernel's parameters and special registers fixed for the block (no
 * memory but .param, no control flow, no barrier or vote, no clock, no
 * carry flag that the glue could come between). */
static bool computes_registers(const struct ptx_stmt *s)
{
    static const char *const opcodes[] = {
        "mov", "cvt",  "cvta", "add",  "sub", "mul", "mad", "shl", "shr", "and",  "or",   "xor",
        "not", "cnot", "setp", "selp", "min", "max", "neg", "bfe", "bfi", "prmt", "lop3", NULL};
    static const char *const clocks[] = {"%clock", "%globaltimer", "%pm", NULL};
    if (s->kind != PTX_INSTRUCTION)
        return false;
    const struct ptx_instruction *in = &s->u.ins;
    bool pure = ptx_str_is(in->opcode, "ld") && in->nmods > 0 && ptx_str_is(in->mods[0], "param");
    for (size_t i = 0; !pure && opcodes[i] != NULL; i++)
        pure = ptx_str_is(in->opcode, opcodes[i]);
    for (uint32_t k = 0; pure && k < in->nmods; k++)
        pure = !ptx_str_is(in->mods[k], "cc");
    for (uint32_t k = 0; pure && k < in->nops; k++)
        for (size_t c = 0; pure && clocks[c] != NULL; c++)
            pure = !ptx_str_starts_with(in->ops[k], clocks[c]);
    return pure;
}

/* Where the entry glue goes: after the body's opening statements that
 * only compute registers (and declarations, .loc), before its first
 * label, branch, memory access, barrier, block or other directive. Every
 * thread runs those statements, and nothing they do can be seen by a
 * probe, so the probes still run before the kernel does anything; but
 * the kernel's reads of %ctaid, %ntid and its parameters are no longer
 * held behind the glue's branch: ptxas schedules them together. At the
 * very start, the glue cost vector_add 3.4 % and jacobi2d 2.9 % with a
 * probe that does nothing, 1.7 % and 1.5 % here; launch-latency's
 * sampled blocks' test 2.6 % and 3.0 %, here 1.1 % and 1.4 % (one
 * H200). */
static size_t glue_position(const struct ptx_function *f)
{
    static const char *const declarations[] = {".reg", ".local", ".shared", ".param", ".loc", NULL};
    size_t i = 0;
    while (i < f->nbody &&
           (ptx_directive_is(f->body[i], declarations) || computes_registers(f->body[i])))
        i++;
    return i;
}

/* Whether f's body can run twice in one function, copied with its labels
 * renamed: it names no labels in directive text (.branchtargets,
 * .calltargets) and declares no shared or local memory inside a block,
 * which the copy would declare a second time; and no grid-stride loop of
 * it is to be rewritten (the block-offset pass rewrites one loop). */
static bool copyable(const struct ptx_function *f, const struct ptx_stride_plan *loops)
{
    for (size_t i = 0; loops != NULL && i < loops->nfound; i++)
        if (loops->found[i].f == f)
            return false;
    static const char *const label_lists[] = {".branchtargets", ".calltargets", NULL};
    static const char *const memory[] = {".shared", ".local", NULL};
    int depth = 0;
    for (size_t i = 0; i < f->nbody; i++) {
        const struct ptx_stmt *s = f->body[i];
        depth += s->kind == PTX_BLOCK_OPEN;
        depth -= s->kind == PTX_BLOCK_CLOSE;
        if (ptx_directive_is(s, label_lists) || (depth > 0 && ptx_directive_is(s, memory)))
            return false;
    }
    return true;
}

/* Whether control can run past the body's last statement: it does not end
 * in an unguarded ret, exit or bra. */
static bool falls_off_end(const struct ptx_function *f)
{
    for (size_t i = f->nbody; i-- > 0;) {
        const struct ptx_stmt *s = f->body[i];
        if (s->kind == PTX_DIRECTIVE || s->kind == PTX_BLOCK_CLOSE)
            continue;
        if (s->kind != PTX_INSTRUCTION || s->u.ins.guard.n != 0)
            return true;
        struct ptx_str op = s->u.ins.opcode;
        return !(ptx_str_is(op, "ret") || ptx_str_is(op, "exit") || ptx_str_is(op, "bra"));
    }
    return true;
}

/* What one copy of a kernel's body is built from. */
struct body_copy {
    const struct ptx_function *f;
    const struct mgpu_kernel_info *info; /* for memory probes' parameters; may be NULL */
    const size_t *probes;                /* the probes this copy calls */
    size_t nprobes;
    unsigned kernel_id;
    bool shared_declarations; /* the body's top-level declarations went before it */
    bool add_ret;             /* end with a ret: another copy follows */
    size_t first;             /* the body's statements before this went before it */
    size_t glue_at;           /* the entry glue goes before statement glue_at */
};

/* One copy of the body, with the glue of c's probes around it. */
static void add_body_copy(struct ptx_body_builder *b, const struct pass_state *st,
                          const struct body_copy *c)
{
    const struct ptx_probe_set *set = st->inject->set;
    struct glue_needs needs = needs_of(set, c->probes, c->nprobes, st->params_used);
    struct ptx_stmt **ret = NULL;
    size_t nret = 0;
    const char *ret_text = c->add_ret ? ptx_format(b->module, "ret;") : NULL;
    if (c->add_ret &&
        (ret_text == NULL || ptx_parse_statements(b->module, ret_text, &ret, &nret) != 0))
        b->failed = true;
    /* Where access glue goes, and the multiply-adds it would part
     * (ptx_contract.h). */
    size_t nbody = c->f->nbody;
    bool *glue_before = calloc(nbody + 1, sizeof *glue_before);
    const char **replace = calloc(nbody + 1, sizeof *replace);
    if (glue_before == NULL || replace == NULL)
        b->failed = true;
    else if (c->nprobes > 0 && needs.accesses) {
        struct ptx_access access;
        for (size_t i = c->first; i < nbody; i++)
            glue_before[i] = ptx_access_of(c->f->body[i], &access);
        ptx_contract_plan(b->module, c->f->body, nbody, glue_before, replace);
    }
    unsigned site = 0;
    int depth = 0;
    for (size_t i = c->first; i <= c->f->nbody + nret; i++) {
        if (i == c->glue_at && c->nprobes > 0) {
            if (needs.accesses)
                ptx_probe_sampling_glue(b, set, c->probes, c->nprobes);
            add_entry_glue(b, st, c->f, c->probes, c->nprobes, needs, c->kernel_id);
        }
        if (i == c->f->nbody + nret)
            break;
        struct ptx_stmt *s = i < c->f->nbody ? c->f->body[i] : ret[i - c->f->nbody];
        if (shared_declaration(s, &depth) && c->shared_declarations)
            continue;
        struct ptx_access access;
        if (c->nprobes > 0 && needs.exits && leaves_kernel(s))
            add_exit_glue(b, st, c->probes, c->nprobes, needs, c->kernel_id, s->u.ins.guard);
        if (c->nprobes > 0 && needs.accesses && ptx_access_of(s, &access)) {
            int param = c->info && i < c->info->nbody ? c->info->access_param[i] : -1;
            ptx_probe_access_glue(b, set, c->probes, c->nprobes, &access, param, site++);
        }
        if (replace != NULL && i < nbody && replace[i] != NULL)
            ptx_builder_add_text(b, replace[i]);
        else
            ptx_builder_add(b, s);
    }
    free(glue_before);
    free(replace);
}

/* Renames, in statements [from, b->count) of b, every label they define
 * and every operand that names one of those labels, appending `suffix`. */
static void rename_labels(struct ptx_body_builder *b, size_t from, const char *suffix)
{
    struct ptx_module *m = b->module;
    struct ptx_name_set labels = {0};
    for (size_t i = from; i < b->count && !b->failed; i++)
        if (b->items[i]->kind == PTX_LABEL && ptx_name_set_add(&labels, b->items[i]->u.text) < 0)
            b->failed = true;
    for (size_t i = from; i < b->count && !b->failed; i++) {
        struct ptx_stmt *s = b->items[i], *copy = NULL;
        if (s->kind == PTX_LABEL) {
            copy = ptx_copy_stmt(m, s);
            const char *name =
                copy ? ptx_format(m, "%.*s%s", (int)s->u.text.n, s->u.text.p, suffix) : NULL;
            b->failed = name == NULL;
            if (name != NULL)
                copy->u.text = ptx_str_of(name);
        }
        if (s->kind == PTX_INSTRUCTION) {
            copy = ptx_rename_label_operands(m, s, &labels, suffix);
            b->failed = copy == NULL;
        }
        if (copy != NULL && !b->failed)
            b->items[i] = copy;
    }
    ptx_name_set_free(&labels);
}

/* The sampled blocks' test (ptx_probes.h, block sampling): the block's
 * (x, y, z) in the slice, read into registers the block-offset pass leaves
 * as they are, hashed, and compared with __mgpu_grid's
 * probe_block_threshold, which the runtime sets per launch. y and z count
 * only where some function of the program reads them (st->block_rows,
 * st->block_layers): a %ctaid read the kernel makes anyway costs nothing,
 * one it does not costs every warp a special-register read before its
 * first instruction (y and z cost vector_add 1.2 %, one H200), and a
 * kernel that never reads %ctaid.y treats its rows alike. Branches to
 * `sampled` when the block is sampled. */
static void add_sampling_test(struct ptx_body_builder *b, const struct pass_state *st,
                              const char *sampled)
{
#define SLICE "%%" PTX_SLICE_REGISTER_PREFIX
    struct ptx_module *m = b->module;
    ptx_builder_add_text(b, ptx_format(m,
                                       "{\n.reg .b32 " SLICE "k<3>, %%__mgpu_probe_h, "
                                       "%%__mgpu_probe_t;\n"
                                       ".reg .pred %%__mgpu_probe_sampled;\n"
                                       "mov.u32 " SLICE "k0, %%ctaid.x;\n"
                                       "mul.lo.u32 %%__mgpu_probe_h, " SLICE "k0, %d;",
                                       (int)PTX_PROBE_SAMPLE_X));
    const bool reads[2] = {st->block_rows, st->block_layers};
    const unsigned constants[2] = {PTX_PROBE_SAMPLE_Y, PTX_PROBE_SAMPLE_Z};
    for (int d = 0; d < 2; d++)
        if (reads[d])
            ptx_builder_add_text(b, ptx_format(m,
                                               "mov.u32 " SLICE "k%d, %%ctaid.%c;\n"
                                               "mad.lo.u32 %%__mgpu_probe_h, " SLICE "k%d, %d, "
                                               "%%__mgpu_probe_h;",
                                               d + 1, "yz"[d], d + 1, (int)constants[d]));
    ptx_builder_add_text(
        b, ptx_format(m,
                      "ld.param.u32 %%__mgpu_probe_t, [" MGPU_PTX_GRID_PARAM "+%d];\n"
                      "setp.le.u32 %%__mgpu_probe_sampled, %%__mgpu_probe_h, %%__mgpu_probe_t;\n"
                      "@%%__mgpu_probe_sampled bra %s;\n}",
                      MGPU_PTX_GRID_BLOCK_THRESHOLD_OFFSET, sampled));
#undef SLICE
}

static int probe_kernel(struct ptx_module *m, struct ptx_function *f, const struct pass_state *st,
                        size_t *chosen, size_t *every_block)
{
    const struct ptx_probe_inject *inject = st->inject;
    const struct ptx_probe_set *set = inject->set;
    char *name = ptx_str_dup(f->name);
    if (name == NULL)
        return -1;
    char *demangled = inject->demangle ? inject->demangle(name) : NULL;
    size_t n = 0;
    for (size_t p = 0; p < set->nprobes; p++)
        if (ptx_probe_matches(&set->probes[p], name, demangled))
            chosen[n++] = p;
    int rc = 0;
    if (n > 0) {
        unsigned id = inject->attach(inject->ctx, name, chosen, n);
        bool accesses = needs_of(set, chosen, n, st->params_used).accesses;
        size_t glue_at = glue_position(f);
        struct body_copy all = {
            f, accesses ? analysed(st, f) : NULL, chosen, n, id, false, false, 0, glue_at};
        struct ptx_body_builder b;
        ptx_builder_init(&b, m);
        unsigned blocks = ptx_probe_block_sampling(set, chosen, n);
        if (blocks == 1 || !copyable(f, st->loops)) {
            add_body_copy(&b, st, &all);
        } else {
            /* Unsampled blocks fall through to the body with the probes
             * that run in every block; sampled ones branch to the copy
             * with all of them. */
            struct body_copy some = all;
            some.probes = every_block;
            some.nprobes = 0;
            for (size_t i = 0; i < n; i++)
                if (set->probes[chosen[i]].blocks <= 1)
                    every_block[some.nprobes++] = chosen[i];
            some.shared_declarations = all.shared_declarations = true;
            some.add_ret = falls_off_end(f);
            some.first = all.first = glue_at;
            int depth = 0;
            for (size_t i = 0; i < f->nbody; i++)
                if (shared_declaration(f->body[i], &depth))
                    ptx_builder_add(&b, f->body[i]);
            /* The statements before the glue, which both copies share. */
            for (size_t i = 0; i < glue_at; i++)
                if (!shared_declaration(f->body[i], &depth))
                    ptx_builder_add(&b, f->body[i]);
            add_sampling_test(&b, st, "$__mgpu_probe_sampled_body");
            ptx_builder_add_text(&b, "{");
            add_body_copy(&b, st, &some);
            ptx_builder_add_text(&b, "}\n$__mgpu_probe_sampled_body:\n{");
            size_t from = b.count;
            add_body_copy(&b, st, &all);
            rename_labels(&b, from, "_mgpu_sampled");
            ptx_builder_add_text(&b, "}");
        }
        rc = ptx_builder_finish(&b, f);
    }
    free(demangled);
    free(name);
    return rc;
}

/* Whether a probe file's PTX names `symbol`. */
static bool files_name(const struct ptx_probe_set *set, const char *symbol)
{
    for (size_t i = 0; i < set->nfiles; i++)
        if (ptx_has_token((struct ptx_str){set->files[i].ptx, set->files[i].size}, symbol))
            return true;
    return false;
}

static bool any_access_probe(const struct ptx_probe_set *set)
{
    for (size_t i = 0; i < set->nprobes; i++)
        if (ptx_probe_at_access(set->probes[i].place))
            return true;
    return false;
}

static int pass(struct ptx_module *m, struct pass_state *st, struct ptx_module *parsed, char *err,
                size_t errlen);

/* Whether a function of the module reads special register `reg`. */
static bool program_reads(const struct ptx_module *m, const char *reg)
{
    for (size_t t = 0; t < m->ntop; t++) {
        const struct ptx_stmt *top = m->top[t];
        if (top->kind != PTX_FUNCTION)
            continue;
        for (size_t i = 0; i < top->u.func.nbody; i++) {
            const struct ptx_stmt *s = top->u.func.body[i];
            for (uint32_t k = 0; s->kind == PTX_INSTRUCTION && k < s->u.ins.nops; k++)
                if (ptx_has_token(s->u.ins.ops[k], reg))
                    return true;
        }
    }
    return false;
}

int ptx_pass_probes(struct ptx_module *m, const struct ptx_probe_inject *inject,
                    const struct ptx_stride_plan *loops, struct ptx_module *parsed, char *err,
                    size_t errlen)
{
    const struct ptx_probe_set *set = inject->set;
    err[0] = '\0';
    unsigned sites = 0;
    struct pass_state st = {inject,
                            loops,
                            files_name(set, PTX_PROBE_PARAMS_SHARED),
                            {NULL, 0},
                            NULL,
                            true,
                            &sites,
                            program_reads(m, "%ctaid.y"),
                            program_reads(m, "%ctaid.z")};
    /* Which parameter each access reaches, found before the probes' own
     * functions join the module. */
    if (any_access_probe(set) && mgpu_ptx_analyze_accesses(m, &st.access) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = pass(m, &st, parsed, err, errlen);
    mgpu_ptx_analysis_free(&st.access);
    return rc;
}

/* Whether an instruction reads one of the block words where an inlined
 * call can do without them (add_probe_call), or names them otherwise. */
static bool block_word_load(const struct ptx_instruction *ins)
{
    return ptx_str_is(ins->opcode, "ld") && ins->nops == 2 &&
           (ptx_str_is(ins->ops[1], LAUNCH_WORD) || ptx_str_is(ins->ops[1], KERNEL_ID_WORD));
}

static bool names_block_words(const struct ptx_instruction *ins)
{
    for (uint32_t k = 0; k < ins->nops; k++)
        if (ptx_has_token(ins->ops[k], PTX_PROBE_BLOCK))
            return true;
    return false;
}

/* Which probes' calls are inlined (st->inlined): those at entry and exit
 * whose functions ptx_inline can copy; memory probes stay calls. Then
 * whether code that stays out of line, or an inlined probe in a way the
 * inlining does not replace, reads the block words (st->block_words). */
static int plan_inlining(struct pass_state *st, struct ptx_module *m,
                         const struct ptx_module *parsed)
{
    const struct ptx_probe_set *set = st->inject->set;
    st->inlined = ptx_alloc(m, (set->nprobes + 1) * sizeof *st->inlined);
    if (st->inlined == NULL)
        return -1;
    for (size_t p = 0; p < set->nprobes; p++) {
        const struct ptx_probe *probe = &set->probes[p];
        const struct ptx_function *f = ptx_find_function(m, ptx_str_of(probe->function));
        bool inline_it =
            f != NULL && !ptx_probe_at_access(probe->place) && f->nparams == 1 && ptx_inlinable(f);
        st->inlined[p] = inline_it ? f : NULL;
    }
    st->block_words = false;
    for (size_t i = 0; i < set->nfiles; i++)
        for (size_t t = 0; t < parsed[i].ntop; t++) {
            const struct ptx_stmt *top = parsed[i].top[t];
            if (top->kind != PTX_FUNCTION || !top->u.func.has_body)
                continue;
            const struct ptx_function *f = &top->u.func;
            bool inlined = false;
            for (size_t p = 0; p < set->nprobes; p++)
                inlined |= st->inlined[p] != NULL && ptx_str_equal(st->inlined[p]->name, f->name);
            for (size_t k = 0; k < f->nbody; k++) {
                const struct ptx_stmt *s = f->body[k];
                if (s->kind == PTX_INSTRUCTION && names_block_words(&s->u.ins) &&
                    !(inlined && block_word_load(&s->u.ins)))
                    st->block_words = true;
            }
        }
    return 0;
}

static int pass(struct ptx_module *m, struct pass_state *st, struct ptx_module *parsed, char *err,
                size_t errlen)
{
    const struct ptx_probe_set *set = st->inject->set;
    /* The kernels, before the probe files' functions join them. */
    struct ptx_stmt **kernels = m->top;
    size_t nkernels = m->ntop;
    for (size_t i = 0; i < set->nfiles; i++)
        memset(&parsed[i], 0, sizeof parsed[i]);
    for (size_t i = 0; i < set->nfiles; i++) {
        if (ptx_parse(set->files[i].ptx, set->files[i].size, &parsed[i]) != 0) {
            snprintf(err, errlen, "probe %s: %s", set->files[i].name, parsed[i].error);
            return -1;
        }
        if (raise_header(m, &parsed[i]) != 0 ||
            splice(m, &parsed[i], set->files[i].name, err, errlen) != 0) {
            if (err[0] == '\0')
                snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    snprintf(err, errlen, "out of memory");
    if (plan_inlining(st, m, parsed) != 0)
        return -1;
    if (ptx_add_declaration(m, ".shared .align 4 .b8 " PTX_PROBE_BLOCK "[16];") != 0 ||
        ptx_add_declaration(m, ".visible .const .align 8 .u64 " PTX_PROBE_CLOCK_OFFSET ";") != 0 ||
        ptx_add_declaration(m, ".visible .const .align 8 .u64 " PTX_PROBE_RUN_START ";") != 0)
        return -1;
    if (st->params_used &&
        ptx_add_declaration(m,
                            ptx_format(m, ".shared .align 8 .b8 " PTX_PROBE_PARAMS_SHARED "[%d];",
                                       PTX_PROBE_PARAMS * 8)) != 0)
        return -1;
    if (files_name(set, PTX_PROBE_POOL_MAP) &&
        ptx_add_declaration(m, ".visible .const .align 8 .u64 " PTX_PROBE_POOL_MAP ";") != 0)
        return -1;
    for (size_t i = 0; i < set->nmaps; i++)
        if (ptx_add_declaration(m, ptx_format(m, ".visible .const .align 8 .u64 " PTX_PROBE_MAP_PREFIX
                                                 "%s;",
                                              set->maps[i].name)) != 0)
            return -1;
    size_t *chosen = calloc(2 * (set->nprobes + 1), sizeof *chosen);
    if (chosen == NULL)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < nkernels && rc == 0; i++) {
        struct ptx_stmt *s = kernels[i];
        if (s->kind == PTX_FUNCTION && s->u.func.is_entry && s->u.func.has_body)
            rc = probe_kernel(m, &s->u.func, st, chosen, chosen + set->nprobes + 1);
    }
    free(chosen);
    if (rc == 0)
        err[0] = '\0';
    return rc;
}
