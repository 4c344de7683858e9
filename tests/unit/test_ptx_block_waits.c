/* Unit tests of ptx/ptx_block_waits.c on hand-written kernel bodies: a
 * loop that spins on a volatile, relaxed or acquire load of global or
 * generic memory until another block writes it waits, whether it loops
 * back on the loaded value or leaves on it, also through a vote; a loop
 * that only sums such loads, one on a counter of its own, a spin on shared
 * memory, a forward branch on a volatile load and a body without loops do
 * not. Fails with the function answering false. */
#include "check.h"
#include "ptx/ptx_block_waits.h"
#include "ptx/ptx_module.h"

#include <stdio.h>
#include <string.h>

/* Whether kernel k, with `body` after its declarations, waits. */
static bool waits(const char *body)
{
    static char text[4096];
    snprintf(text, sizeof text,
             ".version 8.5\n.target sm_90\n.address_size 64\n"
             ".visible .entry k(.param .u64 k_p0)\n{\n"
             ".reg .pred %%p<8>;\n.reg .b32 %%r<16>;\n.reg .b64 %%rd<8>;\n"
             ".shared .align 4 .b8 s_flag[4];\n"
             "ld.param.u64 %%rd1, [k_p0];\n"
             "%s\nret;\n}\n",
             body);
    struct ptx_module m;
    CHECK(ptx_parse(text, strlen(text), &m) == 0);
    struct ptx_function *f = ptx_find_function(&m, ptx_str_of("k"));
    CHECK(f != NULL);
    bool answer = f != NULL && ptx_function_waits_on_memory(f);
    ptx_module_free(&m);
    return answer;
}

int main(void)
{
    /* The look-back spin CUB's radix sort compiles to: back while zero. */
    CHECK(waits("$L_spin:\n"
                "membar.cta;\n"
                "ld.volatile.global.u32 %r1, [%rd1];\n"
                "setp.eq.s32 %p1, %r1, 0;\n"
                "@%p1 bra $L_spin;\n"));
    /* Its scan's: a relaxed vector load, a vote, leaving forward when
     * every lane has a status, back unconditionally after a sleep. */
    CHECK(waits("$L_again:\n"
                "nanosleep.u32 100;\n"
                "ld.relaxed.gpu.v2.u32 {%r2, %r3}, [%rd1];\n"
                "setp.eq.s32 %p2, %r2, 99;\n"
                "vote.sync.any.pred %p3, %p2, -1;\n"
                "@!%p3 bra $L_done;\n"
                "bra.uni $L_again;\n"
                "$L_done:\n"));
    /* An acquire load of generic memory, the value through a move and an
     * and before the compare. */
    CHECK(waits("$L_wait:\n"
                "ld.acquire.gpu.u32 %r4, [%rd1];\n"
                "mov.u32 %r5, %r4;\n"
                "and.b32 %r6, %r5, 1;\n"
                "setp.ne.s32 %p4, %r6, 1;\n"
                "@%p4 bra $L_wait;\n"));

    /* The last block of a threadfence reduction: a loop over the partial
     * sums, read volatile, that ends on its own counter. */
    CHECK(!waits("mov.u32 %r1, 0;\nmov.u32 %r2, 0;\n"
                 "$L_sum:\n"
                 "ld.volatile.global.u32 %r3, [%rd1];\n"
                 "add.s32 %r2, %r2, %r3;\n"
                 "add.s64 %rd1, %rd1, 4;\n"
                 "add.s32 %r1, %r1, 1;\n"
                 "setp.lt.u32 %p1, %r1, 64;\n"
                 "@%p1 bra $L_sum;\n"
                 "st.global.u32 [%rd1], %r2;\n"));
    /* A spin on shared memory: the block's own threads. */
    CHECK(!waits("$L_shared:\n"
                 "ld.volatile.shared.u32 %r1, [s_flag];\n"
                 "setp.eq.s32 %p1, %r1, 0;\n"
                 "@%p1 bra $L_shared;\n"));
    /* A plain load in a loop (no other block's write is waited for). */
    CHECK(!waits("$L_plain:\n"
                 "ld.global.u32 %r1, [%rd1];\n"
                 "setp.eq.s32 %p1, %r1, 0;\n"
                 "@%p1 bra $L_plain;\n"));
    /* A volatile load that only decides a forward branch. */
    CHECK(!waits("ld.volatile.global.u32 %r1, [%rd1];\n"
                 "setp.eq.s32 %p1, %r1, 0;\n"
                 "@%p1 bra $L_skip;\n"
                 "st.global.u32 [%rd1], 1;\n"
                 "$L_skip:\n"));
    /* The loaded value reaches the loop's branch only after the loop. */
    CHECK(!waits("mov.u32 %r1, 0;\n"
                 "$L_count:\n"
                 "add.s32 %r1, %r1, 1;\n"
                 "setp.lt.u32 %p1, %r1, 8;\n"
                 "@%p1 bra $L_count;\n"
                 "ld.volatile.global.u32 %r2, [%rd1];\n"
                 "setp.eq.s32 %p2, %r2, 0;\n"
                 "@%p2 bra $L_end;\n"
                 "$L_end:\n"));
    return check_failures;
}
