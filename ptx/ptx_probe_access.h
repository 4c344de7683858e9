/* The probes pass's memory-access side (ptx_probes.h's load, store and
 * access places): which statements are global memory accesses, and the
 * glue that calls memory probes before them, at the sampled accesses.
 * Used by ptx_pass_probes.c. */
#ifndef MGPU_PTX_PROBE_ACCESS_H
#define MGPU_PTX_PROBE_ACCESS_H

#include "ptx/ptx_edit.h"
#include "ptx/ptx_probes.h"

/* A statement that reads or writes global memory, as a probe sees it. */
struct ptx_access {
    enum ptx_probe_access_kind kind;
    unsigned bytes;         /* 0 when the type is not one mgpu knows */
    struct ptx_str address; /* the operand, "[%rd4+8]" */
    bool generic;           /* generic addressing: global only when isspacep says so */
    struct ptx_str guard;   /* the instruction's own guard, as ptx_instruction has it */
};

/* Whether s is such an access (ld, ldu, st, atom, red of the global state
 * space or generic addressing); fills *out when it is. */
bool ptx_access_of(const struct ptx_stmt *s, struct ptx_access *out);

/* The parts of a bracketed address "[base]", "[base+offset]",
 * "[base-offset]" or "[base+-offset]": the register or symbol it adds to
 * (blanks around it dropped) into *base, the offset's text into *offset
 * (n 0 when none; a '+' dropped, a '-' kept). */
void ptx_address_parts(struct ptx_str address, struct ptx_str *base, struct ptx_str *offset);

/* Whether a memory probe at `place` is called before an access of `kind`:
 * load for ld, ldu and atom; store for st, atom and red; access for all. */
bool ptx_probe_place_takes(enum ptx_probe_place place, enum ptx_probe_access_kind kind);

/* At the kernel's entry, for every thread: declares and starts the
 * counts of accesses of the sampled memory probes among `probes` (one per
 * distinct `every` above 1), at the warp's index in its slice modulo
 * `every`. */
void ptx_probe_sampling_glue(struct ptx_body_builder *b, const struct ptx_probe_set *set,
                             const size_t *probes, size_t nprobes);

/* Before access `a` of the kernel's statement: each memory probe among
 * `probes` that takes it, called with the address under the access's guard
 * (and isspacep.global for generic addresses), a sampled one when the
 * thread's count of accesses reaches its `every`;
 * `param` is the parameter the access reaches, or -1; `site` numbers the
 * access within the kernel for its labels. */
void ptx_probe_access_glue(struct ptx_body_builder *b, const struct ptx_probe_set *set,
                           const size_t *probes, size_t nprobes, const struct ptx_access *a,
                           int param, unsigned site);

#endif
