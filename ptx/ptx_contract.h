/* Keeping a kernel's floating-point results when probe calls are put into
 * its body. ptxas contracts a mul.f32 (f64) whose result only an add or
 * sub uses into one FMA, where both carry no rounding modifier (the PTX
 * ISA allows it, and nvcc's PTX relies on it: lu_trailing's `a -= l * u`
 * is a mul and a sub). A probe call between the two keeps ptxas from
 * fusing them, and the kernel then rounds twice where the program's own
 * code rounded once: results differ in the last bits (bench/corpus/
 * lu_shrinking's hash under --probe footprint-check). The probe pass asks
 * this file which such pairs its calls would separate, and writes each
 * add or sub as the FMA ptxas would have made. */
#ifndef MGPU_PTX_CONTRACT_H
#define MGPU_PTX_CONTRACT_H

#include "ptx/ptx_module.h"

#include <stdbool.h>
#include <stddef.h>

/* For body[0 .. n): replace[i] is set to the text that replaces statement
 * i (an add or sub written as fma.rn, with a neg into the product's
 * register, which nothing else reads, where the product is subtracted or
 * subtracts), or NULL to keep it. Only pairs in one straight run of
 * instructions (no label, branch, call, barrier or guard between), the
 * product read once, its operands not written between, of the same type
 * and ftz, and with glue_before[k] true for some statement k after the
 * mul up to the add (a call will go before it). Returns how many. */
size_t ptx_contract_plan(struct ptx_module *m, struct ptx_stmt *const *body, size_t n,
                         const bool *glue_before, const char **replace);

#endif
