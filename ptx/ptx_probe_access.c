/* Owns the probes pass's memory-access glue (see ptx_probe_access.h):
 * finding a kernel's global memory accesses, their size, kind and address,
 * the per-access sampling counts, and the calls of memory probes
 * before each access.
 *
 * Sampling is by access: each thread counts its accesses and calls a
 * sampled probe at one in `every`, each warp starting its count where its
 * index in the slice puts it, so that every access of the kernel and every
 * part of the grid is sampled alike and the cost is spread evenly. One
 * block in 16 probed at every access (the first design) made saxpy's
 * grid-stride loop 2.08x slower on an H100: its kernel lasts as long as
 * its slowest block. */
#include "ptx/ptx_probe_access.h"

#include "ptx/ptx_passes.h"

#include <stdio.h>
#include <string.h>

static unsigned access_bytes(const struct ptx_instruction *ins)
{
    unsigned lanes = 1, bytes = 0;
    for (uint32_t i = 0; i < ins->nmods; i++) {
        struct ptx_str mod = ins->mods[i];
        if (ptx_str_is(mod, "v2"))
            lanes = 2;
        else if (ptx_str_is(mod, "v4"))
            lanes = 4;
        else if (ptx_str_is(mod, "v8"))
            lanes = 8;
        else if (ptx_type_bytes(mod) != 0)
            bytes = (unsigned)ptx_type_bytes(mod);
    }
    return lanes * bytes;
}

bool ptx_access_of(const struct ptx_stmt *s, struct ptx_access *out)
{
    if (s->kind != PTX_INSTRUCTION)
        return false;
    const struct ptx_instruction *ins = &s->u.ins;
    enum ptx_space space = ptx_instruction_space(ins);
    if (space != PTX_SPACE_NONE && space != PTX_SPACE_GLOBAL)
        return false;
    struct ptx_str op = ins->opcode;
    uint32_t at;
    if ((ptx_str_is(op, "ld") || ptx_str_is(op, "ldu")) && ins->nops >= 2) {
        out->kind = PTX_ACCESS_LOAD;
        at = 1;
    } else if (ptx_str_is(op, "st") && ins->nops >= 2) {
        out->kind = PTX_ACCESS_STORE;
        at = 0;
    } else if (ptx_str_is(op, "atom") && ins->nops >= 3) {
        out->kind = PTX_ACCESS_ATOMIC;
        at = 1;
    } else if (ptx_str_is(op, "red") && ins->nops >= 2) {
        out->kind = PTX_ACCESS_ATOMIC;
        at = 0;
    } else {
        return false;
    }
    struct ptx_str a = ins->ops[at];
    if (a.n < 3 || a.p[0] != '[' || a.p[a.n - 1] != ']')
        return false;
    out->address = a;
    out->bytes = access_bytes(ins);
    out->generic = space == PTX_SPACE_NONE;
    out->guard = ins->guard;
    return true;
}

bool ptx_probe_place_takes(enum ptx_probe_place place, enum ptx_probe_access_kind kind)
{
    switch (place) {
    case PTX_PROBE_LOAD:
        return kind == PTX_ACCESS_LOAD || kind == PTX_ACCESS_ATOMIC;
    case PTX_PROBE_STORE:
        return kind == PTX_ACCESS_STORE || kind == PTX_ACCESS_ATOMIC;
    case PTX_PROBE_ACCESS:
        return true;
    default:
        return false;
    }
}

/* Whether an earlier probe of the list samples with the same `every`
 * (among those that take accesses of `kind`; any kind when kind < 0). */
static bool every_seen(const struct ptx_probe_set *set, const size_t *probes, size_t upto,
                       unsigned every, int kind)
{
    for (size_t i = 0; i < upto; i++) {
        const struct ptx_probe *p = &set->probes[probes[i]];
        if (ptx_probe_at_access(p->place) && p->every == every &&
            (kind < 0 || ptx_probe_place_takes(p->place, (enum ptx_probe_access_kind)kind)))
            return true;
    }
    return false;
}

/* A sampled probe's `every`, when it is the first of the list with it. */
static unsigned new_every(const struct ptx_probe_set *set, const size_t *probes, size_t i, int kind)
{
    const struct ptx_probe *p = &set->probes[probes[i]];
    if (!ptx_probe_at_access(p->place) || p->every <= 1 ||
        (kind >= 0 && !ptx_probe_place_takes(p->place, (enum ptx_probe_access_kind)kind)) ||
        every_seen(set, probes, i, p->every, kind))
        return 0;
    return p->every;
}

void ptx_probe_sampling_glue(struct ptx_body_builder *b, const struct ptx_probe_set *set,
                             const size_t *probes, size_t nprobes)
{
    struct ptx_module *m = b->module;
    bool any = false;
    for (size_t i = 0; i < nprobes; i++) {
        unsigned every = new_every(set, probes, i, -1);
        if (every == 0)
            continue;
        ptx_builder_add_text(b, ptx_format(m, ".reg .b32 %%__mgpu_probe_tick_%u;", every));
        any = true;
    }
    if (!any)
        return;
    /* The warp's index within its slice: the block's, from the whole grid's
     * index (the block-offset pass rewrites %ctaid and %nctaid) less the
     * slice's first block, times the warps of a block, plus the warp's in
     * the block; in 32 bits, exact for slices of fewer than 2^32 warps. */
    ptx_builder_add_text(
        b, "{\n.reg .b32 %__mgpu_probe_s<4>;\n"
           "ld.param.u32 %__mgpu_probe_s0, [" MGPU_PTX_GRID_PARAM "+8];\n"
           "mov.u32 %__mgpu_probe_s1, %ctaid.z;\n"
           "sub.u32 %__mgpu_probe_s1, %__mgpu_probe_s1, %__mgpu_probe_s0;\n"
           "mov.u32 %__mgpu_probe_s2, %nctaid.y;\n"
           "mul.lo.u32 %__mgpu_probe_s1, %__mgpu_probe_s1, %__mgpu_probe_s2;\n"
           "ld.param.u32 %__mgpu_probe_s0, [" MGPU_PTX_GRID_PARAM "+4];\n"
           "mov.u32 %__mgpu_probe_s2, %ctaid.y;\n"
           "sub.u32 %__mgpu_probe_s2, %__mgpu_probe_s2, %__mgpu_probe_s0;\n"
           "add.u32 %__mgpu_probe_s1, %__mgpu_probe_s1, %__mgpu_probe_s2;\n"
           "mov.u32 %__mgpu_probe_s2, %nctaid.x;\n"
           "mul.lo.u32 %__mgpu_probe_s1, %__mgpu_probe_s1, %__mgpu_probe_s2;\n"
           "ld.param.u32 %__mgpu_probe_s0, [" MGPU_PTX_GRID_PARAM "];\n"
           "mov.u32 %__mgpu_probe_s2, %ctaid.x;\n"
           "sub.u32 %__mgpu_probe_s2, %__mgpu_probe_s2, %__mgpu_probe_s0;\n"
           "add.u32 %__mgpu_probe_s1, %__mgpu_probe_s1, %__mgpu_probe_s2;\n"
           "mov.u32 %__mgpu_probe_s0, %ntid.x;\n"
           "mov.u32 %__mgpu_probe_s2, %ntid.y;\n"
           "mul.lo.u32 %__mgpu_probe_s0, %__mgpu_probe_s0, %__mgpu_probe_s2;\n"
           "mov.u32 %__mgpu_probe_s2, %ntid.z;\n"
           "mul.lo.u32 %__mgpu_probe_s0, %__mgpu_probe_s0, %__mgpu_probe_s2;\n"
           "add.u32 %__mgpu_probe_s0, %__mgpu_probe_s0, 31;\n"
           "shr.u32 %__mgpu_probe_s0, %__mgpu_probe_s0, 5;\n"
           "mul.lo.u32 %__mgpu_probe_s1, %__mgpu_probe_s1, %__mgpu_probe_s0;\n"
           "mov.u32 %__mgpu_probe_s0, %tid.z;\n"
           "mov.u32 %__mgpu_probe_s2, %ntid.y;\n"
           "mov.u32 %__mgpu_probe_s3, %tid.y;\n"
           "mad.lo.u32 %__mgpu_probe_s0, %__mgpu_probe_s0, %__mgpu_probe_s2, %__mgpu_probe_s3;\n"
           "mov.u32 %__mgpu_probe_s2, %ntid.x;\n"
           "mov.u32 %__mgpu_probe_s3, %tid.x;\n"
           "mad.lo.u32 %__mgpu_probe_s0, %__mgpu_probe_s0, %__mgpu_probe_s2, %__mgpu_probe_s3;\n"
           "shr.u32 %__mgpu_probe_s0, %__mgpu_probe_s0, 5;\n"
           "add.u32 %__mgpu_probe_s1, %__mgpu_probe_s1, %__mgpu_probe_s0;");
    for (size_t i = 0; i < nprobes; i++) {
        unsigned every = new_every(set, probes, i, -1);
        if (every != 0)
            ptx_builder_add_text(b, ptx_format(m,
                                               "rem.u32 %%__mgpu_probe_tick_%u, "
                                               "%%__mgpu_probe_s1, %u;",
                                               every, every));
    }
    ptx_builder_add_text(b, "}");
}

void ptx_address_parts(struct ptx_str address, struct ptx_str *base, struct ptx_str *offset)
{
    const char *p = address.p + 1;
    size_t n = address.n >= 2 ? address.n - 2 : 0;
    while (n > 0 && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    size_t split = 1;
    while (split < n && p[split] != '+' && p[split] != '-')
        split++;
    size_t base_n = split < n ? split : n;
    while (base_n > 0 && (p[base_n - 1] == ' ' || p[base_n - 1] == '\t'))
        base_n--;
    *base = (struct ptx_str){p, base_n};
    size_t skip = split < n && p[split] == '+';
    *offset = split < n ? (struct ptx_str){p + split + skip, n - split - skip}
                        : (struct ptx_str){p + n, 0};
}

/* The address of operand "[base]", "[base+offset]" or "[base+-offset]"
 * into %__mgpu_probe_a. */
static const char *address_text(struct ptx_module *m, struct ptx_str operand)
{
    struct ptx_str base, offset;
    ptx_address_parts(operand, &base, &offset);
    const char *move = base.n > 0 && base.p[0] == '%' ? "mov.b64" : "mov.u64";
    if (offset.n == 0)
        return ptx_format(m, "%s %%__mgpu_probe_a, %.*s;", move, (int)base.n, base.p);
    return ptx_format(m,
                      "%s %%__mgpu_probe_a, %.*s;\nadd.s64 %%__mgpu_probe_a, %%__mgpu_probe_a, "
                      "%.*s;",
                      move, (int)base.n, base.p, (int)offset.n, offset.p);
}

void ptx_probe_access_glue(struct ptx_body_builder *b, const struct ptx_probe_set *set,
                           const size_t *probes, size_t nprobes, const struct ptx_access *a,
                           int param, unsigned site)
{
    struct ptx_module *m = b->module;
    bool any = false;
    for (size_t i = 0; i < nprobes && !any; i++)
        any = ptx_probe_place_takes(set->probes[probes[i]].place, a->kind);
    if (!any)
        return;
    ptx_builder_add_text(b, "{\n.reg .b64 %__mgpu_probe_a;\n"
                            ".reg .pred %__mgpu_probe_on, %__mgpu_probe_q;");
    ptx_builder_add_text(b, address_text(m, a->address));
    if (a->generic)
        ptx_builder_add_text(b, "isspacep.global %__mgpu_probe_on, %__mgpu_probe_a;");
    else
        ptx_builder_add_text(b, "setp.ne.u32 %__mgpu_probe_on, 1, 0;");
    if (a->guard.n) {
        bool negated = a->guard.p[0] == '!';
        ptx_builder_add_text(b, ptx_format(m,
                                           "%s %%__mgpu_probe_q, %.*s;\n"
                                           "and.pred %%__mgpu_probe_on, %%__mgpu_probe_on, "
                                           "%%__mgpu_probe_q;",
                                           negated ? "not.pred" : "mov.pred",
                                           (int)a->guard.n - negated, a->guard.p + negated));
    }
    /* Each sampling's count of the thread's accesses: it fires, and starts
     * again, when it reaches `every`. */
    for (size_t i = 0; i < nprobes; i++) {
        unsigned every = new_every(set, probes, i, (int)a->kind);
        if (every != 0)
            ptx_builder_add_text(
                b, ptx_format(m,
                              ".reg .pred %%__mgpu_probe_fire_%u;\n"
                              "@%%__mgpu_probe_on add.u32 %%__mgpu_probe_tick_%u, "
                              "%%__mgpu_probe_tick_%u, 1;\n"
                              "setp.ge.and.u32 %%__mgpu_probe_fire_%u, %%__mgpu_probe_tick_%u, %u, "
                              "%%__mgpu_probe_on;\n"
                              "@%%__mgpu_probe_fire_%u mov.u32 %%__mgpu_probe_tick_%u, 0;",
                              every, every, every, every, every, every, every, every));
    }
    unsigned word = PTX_PROBE_ACCESS_WORD(a->bytes, a->kind, param >= 0 ? param + 1 : 0);
    for (size_t i = 0; i < nprobes; i++) {
        const struct ptx_probe *p = &set->probes[probes[i]];
        if (!ptx_probe_place_takes(p->place, a->kind))
            continue;
        if (p->every > 1)
            ptx_builder_add_text(
                b, ptx_format(m, "@!%%__mgpu_probe_fire_%u bra $__mgpu_probe_skip_%u_%zu;",
                              p->every, site, i));
        else
            ptx_builder_add_text(
                b, ptx_format(m, "@!%%__mgpu_probe_on bra $__mgpu_probe_skip_%u_%zu;", site, i));
        ptx_builder_add_text(
            b, ptx_format(m,
                          "{\n.param .b32 __mgpu_probe_edge;\n.param .b64 __mgpu_probe_address;\n"
                          ".param .b32 __mgpu_probe_access;\n"
                          "st.param.b32 [__mgpu_probe_edge], 0;\n"
                          "st.param.b64 [__mgpu_probe_address], %%__mgpu_probe_a;\n"
                          "st.param.b32 [__mgpu_probe_access], %u;\n"
                          "call %s, (__mgpu_probe_edge, __mgpu_probe_address, "
                          "__mgpu_probe_access);\n}\n"
                          "$__mgpu_probe_skip_%u_%zu:",
                          word, p->function, site, i));
    }
    ptx_builder_add_text(b, "}");
}
