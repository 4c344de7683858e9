/* Copying a device function's body in place of a call to it, for the
 * probes pass: a probe called at every block's entry costs the call's
 * register moves, its return and, inside, loads of what the caller knows
 * already (the kernel's id, the launch's number); inlined, the kernel's
 * own code and the probe's are scheduled together and those loads become
 * a constant and a parameter read. */
#ifndef MGPU_PTX_INLINE_H
#define MGPU_PTX_INLINE_H

#include "ptx/ptx_edit.h"

/* A load of the callee's to replace: an ld (of any space) whose address
 * operand is exactly `address` ("[__mgpu_probe_block+8]") becomes
 * `opcode` of `value` into the load's destination ("mov.u32", "3"). */
struct ptx_inline_load {
    const char *address;
    const char *opcode;
    const char *value;
};

struct ptx_inline_call {
    const struct ptx_function *callee;
    const char *const *args; /* a register or an immediate per parameter */
    struct ptx_str guard;    /* the call's guard ("%p", "!%p"); empty: none */
    const char *suffix;      /* added to the callee's labels: unique in the caller */
    const struct ptx_inline_load *loads;
    size_t nloads;
};

/* Whether f's body can take the place of a call: it has one; its
 * parameters are scalars read only whole, by ld.param of their own width;
 * it declares no .local or .shared memory (a copy per call site would
 * declare it again) and names no labels in directives (.branchtargets,
 * .calltargets, .callprototype); and the parser understood every
 * statement. */
bool ptx_inlinable(const struct ptx_function *f);

/* Adds the body of c->callee (ptx_inlinable) in a block of its own: its
 * parameters' loads become moves of the arguments, its returns branches
 * past the block, its labels renamed with c->suffix, the loads c->loads
 * names replaced, its .loc lines dropped (their file numbers are the
 * callee's module's); the block is followed by the label
 * $__mgpu_inlined_<callee><suffix>, which says in the PTX what was
 * inlined where. Under a guard, the block is branched over when the
 * guard is false, tested before the block opens: the callee's registers
 * may have the guard's name. */
void ptx_inline(struct ptx_body_builder *b, const struct ptx_inline_call *c);

#endif
