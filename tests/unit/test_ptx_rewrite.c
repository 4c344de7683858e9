/* Unit tests of the PTX parser, printer, passes and analysis on PTX written
 * here: tricky syntax parses and prints back to the same structure, each
 * pass changes exactly what it should, the analysis charges memory uses to
 * the right parameters through calls, and every truncation and thousands of
 * corruptions of a module parse, print, analyse and rewrite without a read
 * outside the text (run under AddressSanitizer in CI). */
#include "check.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_edit.h"
#include "ptx/ptx_inline.h"
#include "ptx/ptx_module.h"
#include "ptx/ptx_passes.h"
#include "ptx/ptx_rewrite.h"
#include "ptx/ptx_stride_loop.h"
#include "ptx/ptx_text.h"

#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

/* Syntax nvcc and hand-written PTX use: comments everywhere, strings with
 * ';' and '}', a call prototype, guards, vectors, nested blocks, .loc. */
static const char sample[] =
    "//\n// a header comment; with { braces }\n//\n"
    ".version 8.5\n.target sm_90\n.address_size 64\n"
    ".file 1 \"/tmp/a;b}.cu\"\n"
    ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0, .param .b64 p1);\n"
    ".global .align 4 .u32 counter;\n"
    ".global .align 8 .u64 table[4];\n"
    ".const .align 4 .b8 coeff[32];\n"
    ".global .align 1 .b8 $str[4] = {97, 59, 125, 0};\n"
    ".shared .align 4 .b8 tile[128];\n"
    "/* a block comment\n   over lines */\n"
    ".func (.param .b32 ret) helper(.param .b64 helper_p0, .param .b64 helper_p1)\n"
    "{\n"
    "  .reg .b32 %r<4>; .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [helper_p0];\n"
    "  ld.param.u64 %rd2, [helper_p1];\n"
    "  ld.global.u32 %r1, [%rd1+4]; // load through the first\n"
    "  mov.u32 %r2, %ctaid.y;\n"
    "  st.global.u32 [%rd2], %r1;\n"
    "  st.param.b32 [ret+0], %r2;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry kern(\n"
    "  .param .u64 kern_param_0, // in\n"
    "  .param .u64 kern_param_1,\n"
    "  .param .f64 kern_param_2,\n"
    "  .param .align 8 .b8 kern_param_3[16]\n"
    ")\n"
    ".maxntid 256, 1, 1\n"
    "{\n"
    "  .reg .pred %p<3>;\n  .reg .b32 %r<20>;\n  .reg .b64 %rd<20>;\n  .reg .f32 %f<4>;\n"
    "  .loc 1 10 3\n"
    "  ld.param.u64 %rd1, [kern_param_0];\n"
    "  ld.param.u64 %rd2, [kern_param_1];\n"
    "  ld.param.u64 %rd3, [kern_param_3+8];\n"
    "  cvta.to.global.u64 %rd4, %rd1;\n"
    "  mov.u32 %r1, %ctaid.x;\n"
    "  mov.u32 %r2, %nctaid.x;\n"
    "  mad.lo.s32 %r3, %r1, %r2, %ctaid.z;\n"
    "  mul.wide.u32 %rd5, %r3, 4;\n"
    "  add.s64 %rd6, %rd4, %rd5;\n"
    "  setp.lt.u32 %p1|%p2, %r3, 100;\n"
    "  @!%p1 bra $L__BB1_2;\n"
    "  ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd6];\n"
    "  atom.global.add.u32 %r4, [%rd3], 1;\n"
    "  red.global.add.u32 [counter], 1;\n"
    "  atom.shared.add.u32 %r5, [tile+4], 1;\n"
    "  atom.relaxed.gpu.global.add.u32 %r6, [%rd6], 1;\n"
    "  atom.acquire.cta.global.add.u32 %r7, [%rd6], 1;\n"
    "  membar.gl;\n  membar.cta;\n  fence.acq_rel.gpu;\n  fence.proxy.async;\n"
    "  ld.acquire.gpu.u32 %r8, [%rd6];\n"
    "  mov.u64 %rd7, table;\n"
    "  ld.global.u64 %rd8, [table+8];\n"
    "  ld.const.f32 %f1, [coeff+4];\n"
    "$L__BB1_2:\n"
    "  { // callseq 0\n"
    "  .reg .b32 temp_param_reg;\n"
    "  .param .b64 param0;\n  st.param.b64 [param0+0], %rd2;\n"
    "  .param .b64 param1;\n  st.param.b64 [param1+0], %rd8;\n"
    "  .param .b32 retval0;\n"
    "  call.uni (retval0), \n  helper, \n  (\n  param0, \n  param1\n  );\n"
    "  ld.param.b32 %r9, [retval0+0];\n"
    "  }\n"
    "  prototype_0 : .callprototype (.param .b32 _) _ (.param .b64 _);\n"
    "  .pragma \"nounroll; }\";\n"
    "  ret;\n"
    "}\n";

static struct ptx_function *function_named(struct ptx_module *m, const char *name)
{
    struct ptx_str n = {name, strlen(name)};
    return ptx_find_function(m, n);
}

static size_t count_kind(const struct ptx_function *f, enum ptx_stmt_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nbody; i++)
        n += f->body[i]->kind == kind;
    return n;
}

static void test_parse_structure(void)
{
    struct ptx_module m;
    CHECK(ptx_parse(sample, sizeof sample - 1, &m) == 0);
    CHECK(m.target_arch == 90);
    struct ptx_function *k = function_named(&m, "kern");
    struct ptx_function *h = function_named(&m, "helper");
    CHECK(k != NULL && h != NULL && function_named(&m, "vprintf") != NULL);
    if (k == NULL || h == NULL) {
        ptx_module_free(&m);
        return;
    }
    CHECK(k->is_entry && !h->is_entry && k->has_body && !function_named(&m, "vprintf")->has_body);
    CHECK(k->nparams == 4);
    CHECK(k->params[2].floating && !k->params[0].floating && k->params[0].size == 8);
    CHECK(k->params[3].aggregate && k->params[3].size == 16);
    CHECK(ptx_str_is(k->params[3].name, "kern_param_3"));
    CHECK(count_kind(k, PTX_LABEL) == 2); /* $L__BB1_2 and prototype_0 */
    CHECK(count_kind(k, PTX_BLOCK_OPEN) == 1 && count_kind(k, PTX_BLOCK_CLOSE) == 1);
    for (size_t i = 0; i < k->nbody; i++)
        CHECK(!k->body[i]->unparsed);
    /* the guarded branch, the vector load and the call */
    bool saw_guard = false, saw_vector = false, saw_call = false;
    for (size_t i = 0; i < k->nbody; i++) {
        const struct ptx_stmt *s = k->body[i];
        if (s->kind != PTX_INSTRUCTION)
            continue;
        const struct ptx_instruction *ins = &s->u.ins;
        if (ptx_str_is(ins->opcode, "bra")) {
            saw_guard = ptx_str_is(ins->guard, "!%p1") && ins->nops == 1;
        } else if (ptx_str_is(ins->opcode, "ld") && ins->nmods == 4) {
            saw_vector = ptx_str_is(ins->mods[2], "v4") && ins->nops == 2 &&
                         ptx_str_is(ins->ops[0], "{%f1, %f2, %f3, %f4}");
        } else if (ptx_str_is(ins->opcode, "call")) {
            saw_call = ins->nops == 3 && ptx_str_is(ins->ops[1], "helper");
        }
    }
    CHECK(saw_guard && saw_vector && saw_call);
    struct ptx_variable *v = ptx_find_variable(&m, ptx_str_of("$str"));
    CHECK(v != NULL && v->initialized && v->size == 4 && v->space == PTX_SPACE_GLOBAL);
    v = ptx_find_variable(&m, ptx_str_of("table"));
    CHECK(v != NULL && v->size == 32 && !v->initialized);

    /* Printing is stable: what the printer writes parses to the same text. */
    size_t n1, n2;
    char *once = ptx_print(&m, &n1);
    struct ptx_module again;
    CHECK(once != NULL && ptx_parse(once, n1, &again) == 0);
    char *twice = ptx_print(&again, &n2);
    CHECK_STR(once, twice);
    CHECK_CONTAINS(once, ".pragma \"nounroll; }\";");
    CHECK_CONTAINS(once, ".file 1 \"/tmp/a;b}.cu\"");
    CHECK(strstr(once, "a header comment") == NULL);
    free(once);
    free(twice);
    ptx_module_free(&again);
    ptx_module_free(&m);
}

static char *rewrite(const char *ptx, unsigned passes, struct mgpu_ptx_rewrite *rw)
{
    char err[256];
    if (mgpu_ptx_rewrite(ptx, strlen(ptx), passes, rw, err, sizeof err) != 0) {
        fprintf(stderr, "rewrite: %s\n", err);
        return NULL;
    }
    return rw->ptx;
}

/* The inliner (ptx_inline.h): which bodies it takes, and what a copy in
 * place of a call looks like: the parameter a move of the argument, ret a
 * branch past the block, labels renamed, a named load replaced, .loc
 * dropped, the call's guard tested before the block opens. */
static const char inline_sample[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".shared .align 4 .b8 words[16];\n"
    ".func probe(.param .b32 probe_param_0)\n{\n"
    "  .reg .pred %p<2>; .reg .b32 %r<4>;\n"
    "  .loc 1 3 1\n"
    "  ld.param.u32 %r1, [probe_param_0];\n"
    "  setp.eq.u32 %p1, %r1, 0;\n"
    "  @%p1 bra $L__BB0_2;\n"
    "  ld.shared.u32 %r2, [words+8];\n"
    "  @%p1 ret;\n"
    "$L__BB0_2:\n"
    "  ret;\n}\n"
    ".func address_taken(.param .b32 address_taken_param_0)\n{\n"
    "  .reg .b64 %rd<2>;\n  mov.u64 %rd1, address_taken_param_0;\n  ret;\n}\n"
    ".func narrow(.param .b32 narrow_param_0)\n{\n"
    "  .reg .b16 %rs<2>;\n  ld.param.u8 %rs1, [narrow_param_0];\n  ret;\n}\n"
    ".func with_local(.param .b32 with_local_param_0)\n{\n"
    "  .local .align 4 .b8 depot[16];\n  ret;\n}\n"
    ".func whole_plus_zero(.param .b64 whole_plus_zero_param_0)\n{\n"
    "  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [whole_plus_zero_param_0+0];\n  ret;\n}\n"
    ".visible .entry kern()\n{\n  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n  ret;\n}\n";

static void test_inline(void)
{
    struct ptx_module m;
    CHECK(ptx_parse(inline_sample, sizeof inline_sample - 1, &m) == 0);
    CHECK(ptx_inlinable(function_named(&m, "probe")));
    CHECK(ptx_inlinable(function_named(&m, "whole_plus_zero")));
    CHECK(!ptx_inlinable(function_named(&m, "address_taken")));
    CHECK(!ptx_inlinable(function_named(&m, "narrow")));
    CHECK(!ptx_inlinable(function_named(&m, "with_local")));
    CHECK(!ptx_inlinable(function_named(&m, "kern")));

    struct ptx_function *kern = function_named(&m, "kern");
    struct ptx_body_builder b;
    ptx_builder_init(&b, &m);
    const char *args[] = {"%r1"};
    struct ptx_inline_load loads[] = {{"[words+8]", "mov.u32", "7"}};
    struct ptx_inline_call call = {
        function_named(&m, "probe"), args, ptx_str_of("!%p1"), "_s0", loads, 1};
    ptx_inline(&b, &call);
    for (size_t i = 0; i < kern->nbody; i++)
        ptx_builder_add(&b, kern->body[i]);
    CHECK(ptx_builder_finish(&b, kern) == 0);
    size_t n;
    char *out = ptx_print(&m, &n);
    CHECK_CONTAINS(out, "@%p1 bra \t$__mgpu_inlined_probe_s0;\n{\n");
    CHECK_CONTAINS(out, "mov.b32 \t%r1, %r1;");
    CHECK_CONTAINS(out, "@%p1 bra \t$L__BB0_2_s0;");
    CHECK_CONTAINS(out, "mov.u32 \t%r2, 7;");
    CHECK_CONTAINS(out, "@%p1 bra \t$__mgpu_inlined_probe_s0;\n$L__BB0_2_s0:\n");
    CHECK_CONTAINS(
        out, "$L__BB0_2_s0:\n\tbra \t$__mgpu_inlined_probe_s0;\n}\n$__mgpu_inlined_probe_s0:");
    const char *kernel_body = out ? strstr(out, ".entry kern") : NULL;
    CHECK(kernel_body != NULL && strstr(kernel_body, ".loc") == NULL);
    free(out);
    ptx_module_free(&m);
}

/* The threshold a launch gives its blocks' hashes (ptx_passes.h): every
 * block of a small grid or of a kernel without block-sampled probes, else
 * the lowest 1/B of the range, the set gpu-probes.sh recomputes
 * (x * 0x9E3779B1 mod 2^32 < 2^32 / B). */
static void test_probe_block_threshold(void)
{
    unsigned small[3] = {64, 64, 1}, large[3] = {65536, 1, 1}, huge[3] = {65535, 65535, 65535};
    CHECK(mgpu_grid_probe_block_threshold(small, 32) == 0xFFFFFFFFu);
    CHECK(mgpu_grid_probe_block_threshold(large, 1) == 0xFFFFFFFFu);
    CHECK(mgpu_grid_probe_block_threshold(large, 32) == (1u << 27) - 1);
    CHECK(mgpu_grid_probe_block_threshold(large, 8) == (1u << 29) - 1);
    CHECK(mgpu_grid_probe_block_threshold(huge, 3) == 1431655765u);
    unsigned sampled = 0;
    for (unsigned x = 0; x < 65536; x++)
        sampled += x * 0x9E3779B1u <= mgpu_grid_probe_block_threshold(large, 32);
    CHECK(sampled == 2048);
}

static void test_scope_pass(void)
{
    struct mgpu_ptx_rewrite rw;
    const char *out = rewrite(sample, MGPU_PASS_SCOPE, &rw);
    CHECK_CONTAINS(out, "atom.sys.global.add.u32 \t%r4, [%rd3], 1;");
    CHECK_CONTAINS(out, "red.sys.global.add.u32 \t[counter], 1;");
    CHECK_CONTAINS(out, "atom.shared.add.u32 \t%r5"); /* shared: unchanged */
    CHECK_CONTAINS(out, "atom.relaxed.sys.global.add.u32");
    CHECK_CONTAINS(out, "atom.acquire.cta.global.add.u32"); /* CTA scope: unchanged */
    CHECK_CONTAINS(out, "membar.sys;");
    CHECK_CONTAINS(out, "membar.cta;");
    CHECK_CONTAINS(out, "fence.acq_rel.sys;");
    CHECK_CONTAINS(out, "fence.proxy.async;");
    CHECK_CONTAINS(out, "ld.acquire.sys.u32");
    CHECK(out && strstr(out, ".gpu") == NULL && strstr(out, "membar.gl") == NULL);
    CHECK(out && strstr(out, "__mgpu") == NULL); /* no other pass ran */
    mgpu_ptx_rewrite_free(&rw);
}

static void test_block_offset_pass(void)
{
    struct mgpu_ptx_rewrite rw;
    const char *out = rewrite(sample, MGPU_PASS_BLOCK_OFFSET, &rw);
    CHECK_CONTAINS(out, "\t.param .align 8 .b8 __mgpu_grid[56]\n)");
    /* the kernel reads its own registers from the parameter... */
    CHECK_CONTAINS(out, "ld.param.u32 \t%__mgpu_ctaid_x_offset, [__mgpu_grid+0];");
    CHECK_CONTAINS(out, "ld.param.u32 \t%__mgpu_nctaid_x, [__mgpu_grid+12];");
    CHECK_CONTAINS(out, "mad.lo.s32 \t%r3, %r1, %r2, %__mgpu_ctaid_z;");
    /* ...and, since it calls a function that reads %ctaid.y, copies it to
     * shared memory, where the function reads it. */
    CHECK_CONTAINS(out, ".shared .align 4 .b8 __mgpu_grid_shared[24];");
    CHECK_CONTAINS(out, "st.shared.u32 \t[__mgpu_grid_shared+20], %__mgpu_grid_word;");
    CHECK_CONTAINS(out, "ld.shared.u32 \t%__mgpu_ctaid_y_offset, [__mgpu_grid_shared+4];");
    mgpu_ptx_rewrite_free(&rw);

    /* Without such a function, no shared copy. */
    static const char plain[] = ".version 8.5\n.target sm_90\n.address_size 64\n"
                                ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<3>;\n"
                                "mov.u32 %r1, %ctaid.x;\nret;\n}\n";
    out = rewrite(plain, MGPU_PASS_ALL, &rw);
    CHECK(out != NULL && strstr(out, "__mgpu_grid_shared") == NULL);
    CHECK_CONTAINS(out, "__mgpu_grid[56]");
    CHECK_CONTAINS(out, ".visible .const .align 4 .u32 __mgpu_device_ordinal;");
    CHECK(rw.globals.nredirected == 0 && rw.globals.nconstants == 0);
    mgpu_ptx_rewrite_free(&rw);
}

static void test_module_globals_pass(void)
{
    struct mgpu_ptx_rewrite rw;
    const char *out = rewrite(sample, MGPU_PASS_MODULE_GLOBALS, &rw);
    CHECK(rw.globals.nredirected == 2);
    if (rw.globals.nredirected == 2) {
        CHECK_STR(rw.globals.redirected[0], "counter");
        CHECK_STR(rw.globals.redirected[1], "table");
    }
    CHECK(rw.globals.nconstants == 1 && rw.globals.constant_sizes[0] == 32);
    CHECK_CONTAINS(out, ".const .align 8 .u64 __mgpu_globals[2];");
    CHECK_CONTAINS(out, "red.global.add.u32 \t[%__mgpu_global_0], 1;");
    CHECK_CONTAINS(out, "mov.u64 \t%rd7, %__mgpu_global_1;");
    CHECK_CONTAINS(out, "ld.global.u64 \t%rd8, [%__mgpu_global_1+8];");
    CHECK_CONTAINS(out, "ld.const.u64 \t%__mgpu_global_1, [__mgpu_globals+8];");
    CHECK_CONTAINS(out, "ld.const.f32 \t%f1, [coeff+4];"); /* constants stay */
    CHECK_CONTAINS(out, "[%rd6]"); /* string literals and other operands stay */
    mgpu_ptx_rewrite_free(&rw);

    char err[256];
    static const char in_initializer[] = ".version 8.5\n.target sm_90\n.address_size 64\n"
                                         ".global .u32 x;\n.global .u64 p = generic(x);\n";
    CHECK(mgpu_ptx_rewrite(in_initializer, sizeof in_initializer - 1, MGPU_PASS_ALL, &rw, err,
                           sizeof err) == -1);
    CHECK_CONTAINS(err, "the initializer of p holds the address of x");
    static const char offset_operand[] = ".version 8.5\n.target sm_90\n.address_size 64\n"
                                         ".global .u32 x[4];\n.visible .entry k()\n{\n"
                                         ".reg .b64 %rd<2>;\nmov.u64 %rd1, x+4;\nret;\n}\n";
    CHECK(mgpu_ptx_rewrite(offset_operand, sizeof offset_operand - 1, MGPU_PASS_ALL, &rw, err,
                           sizeof err) == -1);
    CHECK_CONTAINS(err, "uses the address of x in a way mgpu cannot redirect");

    /* An error quoting operand text is one printable line of bounded length,
     * whatever bytes the operand holds. */
    char raw[1024];
    int n = snprintf(raw, sizeof raw,
                     ".version 8.5\n.target sm_90\n.address_size 64\n"
                     ".global .u32 x[4];\n.visible .entry k()\n{\n"
                     ".reg .b64 %%rd<2>;\nmov.u64 %%rd1, x\n+\x01\x7f\xff%0300d;\nret;\n}\n",
                     4);
    CHECK(mgpu_ptx_rewrite(raw, (size_t)n, MGPU_PASS_ALL, &rw, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "'x\\n+\\x01\\x7f\\xff000");
    CHECK_CONTAINS(err, "...' uses the address of x");
    CHECK(strlen(err) < 160);
    for (const char *c = err; *c; c++)
        CHECK(*c >= ' ' && *c <= '~');
}

static const struct mgpu_kernel_info *analyse(const char *ptx, struct ptx_module *m,
                                              struct mgpu_ptx_analysis *a)
{
    CHECK(ptx_parse(ptx, strlen(ptx), m) == 0);
    CHECK(mgpu_ptx_analyze(m, a) == 0);
    return a->nkernels ? &a->kernels[0] : NULL;
}

static void test_analysis(void)
{
    struct ptx_module m;
    struct mgpu_ptx_analysis a;
    const struct mgpu_kernel_info *k = analyse(sample, &m, &a);
    CHECK(k != NULL && a.nkernels == 1);
    if (k != NULL && k->nparams == 4) {
        CHECK_STR(k->name, "kern");
        CHECK(k->why == 0);
        /* param 0: loads and atomics; param 1: passed to helper as its
         * first argument, which it loads through; param 3 (a struct): an
         * atomic through the pointer at offset 8 */
        CHECK(k->params[0].use == (MGPU_PARAM_LOAD | MGPU_PARAM_ATOMIC));
        CHECK(k->params[1].use == MGPU_PARAM_LOAD);
        CHECK(k->params[2].use == 0 && k->params[2].floating);
        CHECK(k->params[3].use == MGPU_PARAM_ATOMIC && k->params[3].aggregate);
        /* helper stores through its second argument, a pointer the kernel
         * read from `table`: of unknown origin */
        CHECK(k->notes & MGPU_NOTE_UNKNOWN_STORE);
        CHECK(!(k->notes & MGPU_NOTE_UNKNOWN_LOAD));
        CHECK(k->notes & MGPU_NOTE_GLOBALS);
        CHECK(k->notes & MGPU_NOTE_CONSTANTS);
        CHECK(k->notes & MGPU_NOTE_READS_GRID);
        CHECK(k->notes & MGPU_NOTE_SYNC_SCOPE);
    }
    mgpu_ptx_analysis_free(&a);
    ptx_module_free(&m);

    /* Recursion settles; a device-side launch and an external call are
     * reasons; %ctaid as a vector is one. */
    static const char recursive[] =
        ".version 8.5\n.target sm_90\n.address_size 64\n"
        ".extern .func (.param .b32 r) cudaLaunchDeviceV2(.param .b64 a, .param .b64 b);\n"
        ".func walk(.param .b64 walk_p)\n{\n.reg .b64 %rd<3>;\n"
        "ld.param.u64 %rd1, [walk_p];\nst.global.u32 [%rd1], 0;\n"
        "{\n.param .b64 param0;\nst.param.b64 [param0+0], %rd1;\ncall.uni walk, (param0);\n}\n"
        "ret;\n}\n"
        ".visible .entry k(.param .u64 k_p, .param .u64 k_q)\n{\n.reg .b64 %rd<3>;\n"
        "ld.param.u64 %rd1, [k_p];\n"
        "{\n.param .b64 param0;\nst.param.b64 [param0+0], %rd1;\ncall.uni walk, (param0);\n}\n"
        "ret;\n}\n"
        ".visible .entry launcher(.param .u64 l_p)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<2>;\n"
        "{\n.param .b64 param0;\n.param .b64 param1;\n.param .b32 retval0;\n"
        "call.uni (retval0), cudaLaunchDeviceV2, (param0, param1);\n}\n"
        "mov.v4.u32 {%r1, %r1, %r1, %r1}, %ctaid;\nret;\n}\n";
    k = analyse(recursive, &m, &a);
    CHECK(a.nkernels == 2);
    if (a.nkernels == 2) {
        CHECK(a.kernels[0].why == 0 && a.kernels[0].params[0].use == MGPU_PARAM_STORE);
        CHECK(a.kernels[0].params[1].use == 0);
        CHECK(a.kernels[1].why == (MGPU_WHY_DEVICE_LAUNCH | MGPU_WHY_GRID_VECTOR));
        CHECK(a.kernels[1].detail != NULL);
    }
    mgpu_ptx_analysis_free(&a);
    ptx_module_free(&m);

    static const char unparsed[] = ".version 8.5\n.target sm_90\n.address_size 64\n"
                                   ".visible .entry k()\n{\n@ 12 garbage here;\nret;\n}\n";
    k = analyse(unparsed, &m, &a);
    CHECK(k != NULL && k->why == MGPU_WHY_UNPARSED);
    mgpu_ptx_analysis_free(&a);
    ptx_module_free(&m);
}

/* Privatisable reductions: per parameter, only atomics whose results are
 * never read, of one operation and type (add, min, max of 32/64-bit
 * integers and floats). */
static void test_reductions(void)
{
    static const char ptx[] =
        ".version 8.5\n.target sm_90\n.address_size 64\n"
        ".visible .entry k(.param .u64 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3,\n"
        "  .param .u64 p4, .param .u64 p5, .param .u64 p6, .param .u64 p7, .param .u64 p8)\n{\n"
        ".reg .b64 %rd<12>;\n.reg .b32 %r<12>;\n.reg .f64 %fd<3>;\n.reg .pred %p<2>;\n"
        "ld.param.u64 %rd0, [p0];\nld.param.u64 %rd1, [p1];\nld.param.u64 %rd2, [p2];\n"
        "ld.param.u64 %rd3, [p3];\nld.param.u64 %rd4, [p4];\nld.param.u64 %rd5, [p5];\n"
        "ld.param.u64 %rd6, [p6];\nld.param.u64 %rd7, [p7];\nld.param.u64 %rd8, [p8];\n"
        /* p0: red and a dead atom, add.u32 both */
        "red.global.add.u32 [%rd0], 1;\natom.global.add.u32 %r1, [%rd0+4], 2;\n"
        /* p1: atom whose result a comparison reads */
        "atom.global.add.u32 %r2, [%rd1], 1;\nsetp.eq.s32 %p1, %r2, 0;\n"
        /* p2: atom whose result is stored to shared memory */
        "atom.global.max.s32 %r3, [%rd2], 1;\nst.shared.u32 [%r4], %r3;\n"
        /* p3: two operations */
        "red.global.min.u64 [%rd3], %rd9;\nred.global.max.u64 [%rd3], %rd9;\n"
        /* p4: max.f64 through generic addressing, and an exchange is none */
        "red.max.f64 [%rd4], %fd1;\natom.global.exch.b32 %r5, [%rd5], 1;\n"
        /* p6: a vector reduction; p7: a load too; p8: a shared atomic is not its */
        "red.global.add.v2.f32 [%rd6], {%r6, %r7};\n"
        "red.global.add.s32 [%rd7], 1;\nld.global.u32 %r8, [%rd7];\n"
        "atom.shared.add.u32 %r9, [%r10], 1;\nred.global.add.f32 [%rd8], %r9;\n"
        "ret;\n}\n";
    struct ptx_module m;
    struct mgpu_ptx_analysis a;
    const struct mgpu_kernel_info *k = analyse(ptx, &m, &a);
    CHECK(k != NULL && k->nparams == 9);
    if (k != NULL && k->nparams == 9) {
        CHECK(k->params[0].reduction == MGPU_REDUCTION(MGPU_REDUCE_ADD, MGPU_REDUCE_U32));
        CHECK_STR(mgpu_reduction_text(k->params[0].reduction), "add.u32");
        CHECK(k->params[1].use == MGPU_PARAM_ATOMIC && k->params[1].reduction == 0);
        CHECK(k->params[2].reduction == 0);
        CHECK(k->params[3].reduction == 0);
        CHECK(k->params[4].reduction == MGPU_REDUCTION(MGPU_REDUCE_MAX, MGPU_REDUCE_F64));
        CHECK(mgpu_reduction_element_size(k->params[4].reduction) == 8);
        CHECK(k->params[5].reduction == 0);
        CHECK(k->params[6].reduction == 0);
        CHECK(k->params[7].reduction == 0);
        CHECK(k->params[8].reduction == MGPU_REDUCTION(MGPU_REDUCE_ADD, MGPU_REDUCE_F32));
    }
    CHECK_STR(mgpu_reduction_text(0), "none");
    CHECK_STR(mgpu_reduction_text(0xff), "none");
    mgpu_ptx_analysis_free(&a);
    ptx_module_free(&m);
}

/* Parses exactly `size` bytes copied to the heap (so ASan sees a read past
 * them), prints, and checks that the print parses to the same printed text. */
static bool parses_and_round_trips(const char *text, size_t size)
{
    char *copy = malloc(size ? size : 1);
    if (copy == NULL)
        return false;
    if (size)
        memcpy(copy, text, size);
    struct ptx_module m, again;
    bool ok = false;
    if (ptx_parse(copy, size, &m) == 0) {
        size_t n1, n2;
        char *once = ptx_print(&m, &n1);
        if (once != NULL && ptx_parse(once, n1, &again) == 0) {
            char *twice = ptx_print(&again, &n2);
            ok = twice != NULL && n1 == n2 && memcmp(once, twice, n1) == 0;
            if (!ok)
                fprintf(stderr, "round trip of %zu bytes differs:\n%s\n----\n%s\n", size, once,
                        twice ? twice : "(null)");
            free(twice);
            ptx_module_free(&again);
        }
        free(once);
        ptx_module_free(&m);
    }
    free(copy);
    return ok;
}

/* Every comparison of a word stops at the word's end and every scanner at
 * the text's end: a NUL is just a byte of the text, and a text may stop in
 * the middle of anything. */
static void test_bounded_reads(void)
{
    /* ".v" then a NUL: a comparison with ".v2" must not read on past the
     * word into the NUL and beyond. */
    static const char nul_word[] = ".version 8.0\n.global .v\0";
    CHECK(parses_and_round_trips(nul_word, sizeof nul_word - 1));
    struct ptx_str v = {"ld\0x", 3};
    CHECK(!ptx_str_is(v, "ld"));
    struct ptx_str nul = {"\0", 1};
    CHECK(!ptx_str_is(nul, ""));
    /* Ends inside the parameter list, a parameter, a string, a comment, a
     * bracket: each exactly at the end of the buffer. */
    static const char *const cuts[] = {
        ".entry f(",
        ".entry f(.param .u64 a",
        ".entry f(.param .u64 a,",
        ".visible .entry f(.param .b8 a[",
        ".entry f(.param \"abc",
        ".entry f(/* abc",
        ".func (.param .b32 r) g(",
        ".entry f(.param .u64 a)\n{\n\tld.param.u64 %rd1, [a",
        ".entry f()\n{\n\tmov.u32 %r1, \"ab",
        ".entry f()\n{\n\tmov.u32 %r1, 1; /* abc",
        ".target sm_9",
        ".target compute_",
        ".version 8.",
        /* found by fuzzing print(parse(x)) == print(parse(print(parse(x)))) */
        ".func ri{{,",   /* the printer's '}' closed the open inner block */
        " .entry a(.(y", /* a '(' in the list hid the printer's ')' */
        ".entry _((",
        ".entry a{){", /* a '{' left open in a statement swallowed the body's '}' */
        ".visible",    /* the printer's newline became part of the statement */
        "\"",          /* nothing but an open string: an empty statement */
        ".func (r) Z(\n//\n// c, d", /* a list of only comments */
        ".entry x\"//",                 /* the tail skipped the comment, not the string */
        ".entry Z{@\tl:;",               /* a guard of no predicate lost its '@' (10-minute run) */
        ".entry PK\n{L_\n:\n0;\n3",      /* a label split over lines became one when printed */
        ".entry Z{a;L//c\n:\nret;\n}",    /* ... or split by a comment */
    };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        CHECK(parses_and_round_trips(cuts[i], strlen(cuts[i])));
    static const char nul_brace[] = ".func.b32 fu4\0\0\0{\0{n ";
    CHECK(parses_and_round_trips(nul_brace, sizeof nul_brace - 1));
    /* No text at all: no arithmetic on a NULL pointer */
    struct ptx_module m;
    CHECK(ptx_parse(NULL, 0, &m) == 0 && m.ntop == 0);
    size_t printed_size = 1;
    char *printed = ptx_print(&m, &printed_size);
    CHECK(printed != NULL && printed_size == 0);
    free(printed);
    ptx_module_free(&m);
    CHECK(ptx_parse(".entry f(.param .u64 a", 22, &m) == 0);
    struct ptx_function *f = function_named(&m, "f");
    CHECK(f != NULL && f->nparams == 1 && f->params[0].size == 8 &&
          ptx_str_is(f->params[0].name, "a"));
    ptx_module_free(&m);
    char *target = malloc(12);
    memcpy(target, ".target sm_", 11);
    target[11] = '9';
    CHECK(mgpu_ptx_target_arch(target, 12) == 9);
    free(target);
}

/* Blocks nested 256 deep parse; deeper is an error naming the line, found
 * before the parser builds a statement per '{' of a file of them. */
static void test_nesting_limit(void)
{
    static const char head[] = ".version 8.0\n.target sm_90\n.entry f()\n{\n";
    size_t deep = 1 << 20, size = sizeof head - 1 + 2 * deep;
    char *text = malloc(size);
    memcpy(text, head, sizeof head - 1);
    memset(text + sizeof head - 1, '{', deep);
    memset(text + sizeof head - 1 + deep, '}', deep);
    struct ptx_module m;
    CHECK(ptx_parse(text, size, &m) == -1);
    CHECK_STR(m.error, "line 5: blocks nested deeper than 256");
    ptx_module_free(&m);
    struct mgpu_ptx_rewrite rw;
    char err[256];
    CHECK(mgpu_ptx_rewrite(text, size, MGPU_PASS_ALL, &rw, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "blocks nested deeper than 256");
    /* 256 levels are fine */
    size_t ok = sizeof head - 1 + 2 * 256;
    memmove(text + sizeof head - 1 + 256, text + size - 256, 256);
    CHECK(ptx_parse(text, ok, &m) == 0 && m.ntop == 3);
    ptx_module_free(&m);
    free(text);
}

/* Memory is proportional to the text with a small constant however tiny
 * its statements: a megabyte of ';', '{}', 'ret;' or 'x;' in a kernel (or
 * ';' at the top level) holds at most 40 bytes of module per byte of text.
 * (A statement the size of a function for each '{' and ';' took 144.) A
 * run of ';' is one statement that prints back as it was: ptxas rejects
 * an empty statement, so the printed text must still be rejected. */
static void test_memory_per_byte(void)
{
    static const char head[] = ".version 8.0\n.target sm_90\n.entry f()\n{\n";
    static const char *const units[] = {";", "{}", "ret;", "x;", " ; ", NULL};
    size_t body = 1 << 20;
    char *text = malloc(sizeof head + body + 2);
    for (int top = 0; top < 2; top++)
        for (const char *const *u = units; *u; u++) {
            if (top && strcmp(*u, ";") != 0)
                continue;
            size_t n = top ? 0 : sizeof head - 1, len = strlen(*u);
            memcpy(text, head, n);
            for (size_t i = 0; i + len <= body; i += len, n += len)
                memcpy(text + n, *u, len);
            if (!top)
                text[n++] = '}';
            text[n] = '\0';
            struct ptx_module m;
            CHECK(ptx_parse(text, n, &m) == 0);
            size_t held = ptx_module_heap_bytes(&m);
            if (held > 40 * n)
                fprintf(stderr, "%s%s: %zu bytes of module for %zu of text\n",
                        top ? "top level " : "", *u, held, n);
            CHECK(held <= 40 * n);
            if (*u[0] == ';' || *u[0] == ' ') {
                /* all the ';' are one statement, printed as they were */
                const struct ptx_function *f = &m.top[m.ntop - 1]->u.func;
                struct ptx_stmt **list = top ? m.top : f->body;
                size_t count = top ? m.ntop : f->nbody;
                CHECK(count == 1 && list[0]->kind == PTX_VERBATIM && list[0]->unparsed);
                size_t plen;
                char *printed = ptx_print(&m, &plen);
                CHECK(printed != NULL && strstr(printed, *u[0] == ';' ? ";;;;" : ";  ;  ;") != NULL);
                free(printed);
            }
            ptx_module_free(&m);
        }
    free(text);
}

/* Parses, prints, analyses and rewrites; whatever the text, no crash. */
static void exercise(const char *text, size_t size)
{
    char *copy = malloc(size + 1); /* exactly the bytes, so ASan sees any overrun */
    if (copy == NULL)
        return;
    memcpy(copy, text, size);
    copy[size] = '\0';
    struct ptx_module m;
    if (ptx_parse(copy, size, &m) == 0) {
        size_t n;
        free(ptx_print(&m, &n));
        struct mgpu_ptx_analysis a;
        if (mgpu_ptx_analyze(&m, &a) == 0)
            mgpu_ptx_analysis_free(&a);
        ptx_module_free(&m);
    }
    struct mgpu_ptx_rewrite rw;
    char err[256];
    if (mgpu_ptx_rewrite(copy, size, MGPU_PASS_ALL, &rw, err, sizeof err) == 0)
        mgpu_ptx_rewrite_free(&rw);
    free(copy);
}

static void test_robustness(void)
{
    size_t size = sizeof sample - 1;
    for (size_t cut = 0; cut <= size; cut++)
        exercise(sample, cut);
    static const char noise[] = "{}()[];:.,@!%$\"/*\n \t0x_aZ<>=+-|";
    char *mutated = malloc(size);
    srand(12345);
    for (int round = 0; round < 5000 && mutated; round++) {
        memcpy(mutated, sample, size);
        int edits = 1 + rand() % 8;
        for (int e = 0; e < edits; e++)
            mutated[rand() % size] = noise[rand() % (sizeof noise - 1)];
        exercise(mutated, size);
    }
    free(mutated);
    exercise("", 0);
    exercise("}}}}", 4);
    exercise(".entry", 6);
    exercise(".visible .func (", 16);
}

/* A grid-stride loop as nvcc emits it for
 *   for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
 *        i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
 * with a marker line in the body and one after the loop that the
 * variations below replace. */
static const char stride_loop[] =
    ".version 8.5\n.target sm_90\n.address_size 64\n"
    ".visible .entry saxpy(.param .u64 n_param, .param .f32 a_param, .param .u64 x_param,\n"
    "  .param .u64 y_param)\n{\n"
    ".reg .pred %p<3>;\n.reg .f32 %f<6>;\n.reg .b32 %r<10>;\n.reg .b64 %rd<21>;\n"
    "ld.param.u64 %rd8, [n_param];\nld.param.f32 %f1, [a_param];\n"
    "ld.param.u64 %rd9, [x_param];\nld.param.u64 %rd10, [y_param];\n"
    "mov.u32 %r1, %ntid.x;\ncvt.u64.u32 %rd1, %r1;\nmov.u32 %r2, %ctaid.x;\n"
    "mul.wide.u32 %rd11, %r2, %r1;\nmov.u32 %r3, %tid.x;\ncvt.u64.u32 %rd12, %r3;\n"
    "add.s64 %rd17, %rd11, %rd12;\nsetp.ge.u64 %p1, %rd17, %rd8;\n@%p1 bra $L__BB0_3;\n"
    "mov.u32 %r4, %nctaid.x;\ncvt.u64.u32 %rd13, %r4;\nmul.lo.s64 %rd3, %rd13, %rd1;\n"
    "cvta.to.global.u64 %rd4, %rd9;\ncvta.to.global.u64 %rd5, %rd10;\n"
    "$L__BB0_2:\nshl.b64 %rd14, %rd17, 2;\nadd.s64 %rd15, %rd5, %rd14;\n"
    "ld.global.f32 %f2, [%rd15];\nadd.s64 %rd16, %rd4, %rd14;\nld.global.f32 %f3, [%rd16];\n"
    "fma.rn.f32 %f4, %f1, %f3, %f2;\nst.global.f32 [%rd15], %f4;\n"
    "// BODY\n"
    "add.s64 %rd17, %rd17, %rd3;\nsetp.lt.u64 %p2, %rd17, %rd8;\n@%p2 bra $L__BB0_2;\n"
    "$L__BB0_3:\n"
    "// AFTER\n"
    "ret;\n}\n";

/* stride_loop with `marker`'s line replaced by `text`. */
static char *stride_variant(const char *marker, const char *text)
{
    static char out[sizeof stride_loop + 256];
    const char *at = strstr(stride_loop, marker);
    size_t head = (size_t)(at - stride_loop);
    snprintf(out, sizeof out, "%.*s%s%s", (int)head, stride_loop, text, at + strlen(marker));
    return out;
}

static void *failing_calloc(size_t count, size_t size)
{
    (void)count;
    (void)size;
    return NULL;
}

static bool finds_stride_loop(const char *ptx, struct ptx_stride_loop *loop)
{
    struct ptx_module m;
    if (ptx_parse(ptx, strlen(ptx), &m) != 0)
        return false;
    bool found =
        ptx_search_stride_loop(function_named(&m, "saxpy"), loop) == PTX_STRIDE_FOUND;
    ptx_module_free(&m);
    return found;
}

static void test_stride_loop(void)
{
    struct ptx_stride_loop loop;
    CHECK(finds_stride_loop(stride_loop, &loop));
    CHECK(loop.bound_param == 0 && loop.width == 64 && !loop.is_signed);
    /* A value computed and used within one iteration, an atomic, a vector
     * load: taken. */
    CHECK(finds_stride_loop(
        stride_variant("// BODY\n", "mul.f32 %f5, %f4, %f4;\nred.global.add.f32 [%rd9], %f5;\n"),
        &loop));
    CHECK(finds_stride_loop(stride_variant("// BODY\n", "ld.global.v2.f32 {%f5, %f6}, [%rd16];\n"
                                                        "add.f32 %f7, %f5, %f6;\n"
                                                        "st.global.f32 [%rd16], %f7;\n"),
                            &loop));

    /* Iterations that depend on one another or on their thread: refused. */
    static const struct {
        const char *marker, *text, *why;
    } refused[] = {
        {"// BODY\n", "add.f32 %f5, %f5, %f2;\n", "a sum carried from one iteration to the next"},
        {"// BODY\n", "add.f32 %f7, %f6, %f5;\nld.global.v2.f32 {%f5, %f6}, [%rd16];\n",
         "a vector register read before it is loaded"},
        {"// AFTER\n", "st.global.f32 [%rd9], %f4;\n", "a value read after the loop"},
        {"// BODY\n", "bar.sync 0;\n", "a barrier"},
        {"// BODY\n", "shfl.sync.down.b32 %r5, %r6, 1, 31, -1;\n", "a warp shuffle"},
        {"// BODY\n", "mov.u32 %r5, %tid.x;\n", "the thread's index"},
        {"// BODY\n", "add.s64 %rd20, %rd17, %rd3;\n", "the step"},
        {"// BODY\n", "@%p1 bra $L__BB0_3;\n", "a second way out"},
        {"// AFTER\n", "add.s64 %rd20, %rd17, 1;\n", "i after the loop"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        bool found = finds_stride_loop(stride_variant(refused[i].marker, refused[i].text), &loop);
        if (found)
            fprintf(stderr, "stride loop taken despite %s\n", refused[i].why);
        CHECK(!found);
    }
    /* A step over another dimension, a bound that is no parameter, a loop
     * that runs while i != n (it may step over the end of a range), a
     * first i that is not the thread's index, and loops that are not kept
     * below the bound both at the start and at each step. */
    static const char *const replaced[][2] = {
        {"mov.u32 %r4, %nctaid.x;", "mov.u32 %r4, %nctaid.y;"},
        {"ld.param.u64 %rd8, [n_param];", "mov.u64 %rd8, 1000;"},
        {"setp.lt.u64 %p2, %rd17, %rd8;", "setp.ne.u64 %p2, %rd17, %rd8;"},
        {"add.s64 %rd17, %rd11, %rd12;", "add.s64 %rd17, %rd11, %rd11;"},
        /* a bound of another size than the runtime reads */
        {".param .u64 n_param", ".param .align 4 .b8 n_param[12]"},
        /* the back edge taken on another value, no test of the first i */
        {"setp.lt.u64 %p2, %rd17, %rd8;", "setp.lt.u64 %p2, %rd14, %rd8;"},
        {"@%p1 bra $L__BB0_3;", "// no test of the first i"},
        {"@%p2 bra $L__BB0_2;", "@!%p2 bra $L__BB0_2;"},
    };
    for (size_t i = 0; i < sizeof replaced / sizeof replaced[0]; i++) {
        bool found = finds_stride_loop(stride_variant(replaced[i][0], replaced[i][1]), &loop);
        if (found)
            fprintf(stderr, "stride loop taken with %s\n", replaced[i][1]);
        CHECK(!found);
    }

    /* The rewrite: i, the step and both comparisons, each under the
     * iteration_split word, so that a launch that sets nothing runs the
     * original loop. */
    struct mgpu_ptx_rewrite rw;
    const char *out = rewrite(stride_loop, MGPU_PASS_ALL | MGPU_PASS_ANALYZE, &rw);
    CHECK_CONTAINS(out, "ld.param.u32 \t%__mgpu_w, [__mgpu_grid+24];");
    CHECK_CONTAINS(out, "@%__mgpu_on sub.s64 \t%rd17, %rd17, %__mgpu_d;");
    CHECK_CONTAINS(out, "ld.param.u64 \t%__mgpu_d, [__mgpu_grid+32];");
    CHECK_CONTAINS(out, "@%__mgpu_on add.s64 \t%rd17, %rd17, %__mgpu_d;");
    CHECK_CONTAINS(out, "mov.u32 \t%__mgpu_nb, %nctaid.x;");
    CHECK_CONTAINS(out, "@%__mgpu_on mul.wide.u32 \t%rd3, %__mgpu_nb, %__mgpu_nt;");
    CHECK_CONTAINS(out, "ld.param.u64 \t%__mgpu_end, [__mgpu_grid+40];");
    CHECK_CONTAINS(out, "min.u64 \t%__mgpu_end, %__mgpu_end, %rd8;");
    CHECK_CONTAINS(out, "setp.ge.u64 \t%p1, %rd17, %__mgpu_end;");
    CHECK_CONTAINS(out, "setp.lt.u64 \t%p2, %rd17, %__mgpu_end;");
    CHECK(out != NULL && rw.analysis.nkernels == 1 &&
          rw.analysis.kernels[0].stride_bound_param == 0);
    mgpu_ptx_rewrite_free(&rw);

    /* A __device__ variable read in the loop: the module-globals pass wraps
     * the read in a block before the block-offset pass runs, and a search
     * then found no loop, while the analysis (of the module as parsed) told
     * the runtime to cut the kernel by iterations. The pass rewrites the
     * loops the analysis found. */
    static char with_global[sizeof stride_loop + 256];
    snprintf(with_global, sizeof with_global, "%s",
             stride_variant("// BODY\n", "ld.global.f32 %f5, [g];\nst.global.f32 [%rd16], %f5;\n"));
    char *decls = strstr(with_global, ".visible .entry");
    memmove(decls + 25, decls, strlen(decls) + 1);
    memcpy(decls, ".global .align 4 .f32 g;\n", 25);
    out = rewrite(with_global, MGPU_PASS_ALL | MGPU_PASS_ANALYZE, &rw);
    CHECK(out != NULL && rw.analysis.nkernels == 1 &&
          rw.analysis.kernels[0].stride_bound_param == 0);
    CHECK_CONTAINS(out, "ld.const.u64 \t%__mgpu_global_0, [__mgpu_globals+0];");
    CHECK_CONTAINS(out, "setp.lt.u64 \t%p2, %rd17, %__mgpu_end;");
    mgpu_ptx_rewrite_free(&rw);

    /* A block that declares registers of the index's and the step's names
     * (a probe inlined into the loop's body) means its own: the rewrite
     * leaves its writes and its comparison as they are, and patches the
     * kernel's once each. */
    struct ptx_module plain, probed;
    struct ptx_stride_loop found;
    CHECK(ptx_parse(stride_loop, sizeof stride_loop - 1, &plain) == 0);
    CHECK(ptx_search_stride_loop(function_named(&plain, "saxpy"), &found) == PTX_STRIDE_FOUND);
    const char *inlined = stride_variant("// BODY\n", "{\n.reg .b64 %rd<20>;\n.reg .pred %p<4>;\n"
                                                      "mov.u64 %rd3, 5;\nmov.u64 %rd17, 7;\n"
                                                      "setp.lt.u64 %p3, %rd17, %rd3;\n}\n");
    CHECK(ptx_parse(inlined, strlen(inlined), &probed) == 0);
    CHECK(ptx_rewrite_stride_loop(&probed, function_named(&probed, "saxpy"), &found) == 0);
    char *printed = ptx_print(&probed, NULL);
    CHECK_CONTAINS(
        printed, "mov.u64 \t%rd3, 5;\n\tmov.u64 \t%rd17, 7;\n\tsetp.lt.u64 \t%p3, %rd17, %rd3;\n}");
    size_t steps = 0, starts = 0;
    for (const char *at = printed; at && (at = strstr(at, "@%__mgpu_on mul.wide.u32")) != NULL;
         at++)
        steps++;
    for (const char *at = printed; at && (at = strstr(at, "[__mgpu_grid+32]")) != NULL; at++)
        starts++;
    CHECK(steps == 1 && starts == 1);
    free(printed);
    ptx_module_free(&probed);
    ptx_module_free(&plain);

    /* Memory running out in the search fails the pass, with the reason,
     * instead of leaving the loop as if there were none. */
    ptx_stride_loop_calloc = failing_calloc;
    char err[256] = "";
    CHECK(mgpu_ptx_rewrite(stride_loop, sizeof stride_loop - 1, MGPU_PASS_BLOCK_OFFSET, &rw, err,
                           sizeof err) == MGPU_PTX_REWRITE_NO_MEMORY);
    CHECK_STR(err, "out of memory searching for grid-stride loops");
    ptx_stride_loop_calloc = calloc;
}

/* --- cost: inputs built to make the analyses slow --------------------------- */

/* A growing PTX text. */
struct text {
    char *p;
    size_t n, cap;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if (t->n + (size_t)n + 1 > t->cap) {
        t->cap = (t->n + (size_t)n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        if (t->p == NULL)
            abort();
    }
    va_start(ap, fmt);
    vsnprintf(t->p + t->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->n += (size_t)n;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A 32-bit grid-stride loop over chain_n, in kernel `name`; `before` goes
 * before the loop's first test, `after` after the loop. */
static void put_stride_kernel(struct text *t, const char *name, const char *before,
                              const char *after)
{
    put(t, ".visible .entry %s(.param .u32 n_param)\n{\n"
           ".reg .pred %%p<8>;\n.reg .b32 %%r<100000>;\n"
           "$L__top:\n"
           "ld.param.u32 %%r1, [n_param];\nmov.u32 %%r2, %%ctaid.x;\nmov.u32 %%r3, %%ntid.x;\n"
           "mov.u32 %%r4, %%tid.x;\nmad.lo.s32 %%r5, %%r2, %%r3, %%r4;\n"
           "mov.u32 %%r6, %%nctaid.x;\nmul.lo.s32 %%r7, %%r6, %%r3;\n"
           "%s"
           "setp.ge.u32 %%p1, %%r5, %%r1;\n@%%p1 bra $L__done;\n"
           "$L__loop:\nadd.s32 %%r5, %%r5, %%r7;\n"
           "setp.lt.u32 %%p2, %%r5, %%r1;\n@%%p2 bra $L__loop;\n$L__done:\n%sret;\n}\n",
        name, before, after);
}

static const char ptx_header[] = ".version 8.0\n.target sm_90\n.address_size 64\n";

/* Analyses t and returns the seconds it took; *a holds the result. */
static double timed_analysis(const struct text *t, struct mgpu_ptx_analysis *a)
{
    double start = seconds_now();
    struct ptx_module m;
    memset(a, 0, sizeof *a);
    CHECK(ptx_parse(t->p, t->n, &m) == 0);
    CHECK(mgpu_ptx_analyze(&m, a) == 0);
    ptx_module_free(&m);
    return seconds_now() - start;
}

/* Generous for a sanitizer build on 2 cores; the code before the fix took
 * minutes on each of these. */
#define COST_SECONDS_MAX 5.0

static void test_cost_of_value_chains(void)
{
    /* 200 mads, each of the one before, feeding a candidate update: the
     * old finder derived each operand of each mad again, to depth 12
     * (3^12 derivations, each a scan of the function). */
    struct text chain = {0}, t = {0};
    put(&chain, "mov.u32 %%r10, %%ntid.x;\nmov.u32 %%r9, 0;\n");
    for (int k = 10; k < 210; k++)
        put(&chain, "mad.lo.s32 %%r%d, %%r%d, %%r%d, %%r%d;\n", k + 1, k, k, k);
    put(&chain, "add.s32 %%r9, %%r9, %%r210;\nst.global.u32 [%%r9], %%r9;\n");
    put(&t, "%s", ptx_header);
    put_stride_kernel(&t, "chain", "", chain.p);
    struct mgpu_ptx_analysis a;
    double took = timed_analysis(&t, &a);
    CHECK(took < COST_SECONDS_MAX);
    CHECK(a.nkernels == 1 && a.kernels[0].why == 0 && a.kernels[0].stride_bound_param == 0);
    mgpu_ptx_analysis_free(&a);
    free(chain.p);
    free(t.p);
}

static void test_cost_of_candidate_updates(void)
{
    /* 5 000 loops, each of the grid-stride shape, over one step: every
     * candidate scanned the whole function several times. Not one loop,
     * so none is taken. */
    struct text t = {0};
    put(&t, "%s.visible .entry adds(.param .u32 n_param)\n{\n"
            ".reg .pred %%p<20000>;\n.reg .b32 %%r<10000>;\n"
            "ld.param.u32 %%r1, [n_param];\nmov.u32 %%r2, %%ctaid.x;\nmov.u32 %%r3, %%ntid.x;\n"
            "mov.u32 %%r4, %%tid.x;\nmov.u32 %%r6, %%nctaid.x;\nmul.lo.s32 %%r7, %%r6, %%r3;\n",
        ptx_header);
    for (int k = 0; k < 5000; k++)
        put(&t, "mad.lo.s32 %%r%d, %%r2, %%r3, %%r4;\nsetp.ge.u32 %%p%d, %%r%d, %%r1;\n"
                "@%%p%d bra $L__done%d;\n$L__loop%d:\nadd.s32 %%r%d, %%r%d, %%r7;\n"
                "setp.lt.u32 %%p%d, %%r%d, %%r1;\n@%%p%d bra $L__loop%d;\n$L__done%d:\n",
            k + 10, 2 * k + 3, k + 10, 2 * k + 3, k, k, k + 10, k + 10, 2 * k + 4, k + 10,
            2 * k + 4, k, k);
    put(&t, "ret;\n}\n");
    struct mgpu_ptx_analysis a;
    double took = timed_analysis(&t, &a);
    CHECK(took < COST_SECONDS_MAX);
    CHECK(a.nkernels == 1 && a.kernels[0].why == 0 && a.kernels[0].stride_bound_param == -1);
    mgpu_ptx_analysis_free(&a);
    free(t.p);
}

static void test_cost_budget(void)
{
    /* 6 000 tests of i before the loop on one predicate, each followed by
     * a branch on it: pairing them costs 18 million steps, past the
     * budget. The kernel is too complex to analyse, soon. */
    struct text guards = {0}, t = {0};
    for (int k = 0; k < 6000; k++)
        put(&guards, "setp.ge.u32 %%p3, %%r5, %%r1;\n@%%p3 bra $L__top;\n");
    put(&t, "%s", ptx_header);
    put_stride_kernel(&t, "guarded", guards.p, "");
    struct mgpu_ptx_analysis a;
    double took = timed_analysis(&t, &a);
    CHECK(took < COST_SECONDS_MAX);
    CHECK(a.nkernels == 1 && a.kernels[0].why == MGPU_WHY_TOO_COMPLEX);
    CHECK_STR(mgpu_unsplittable_text(MGPU_WHY_TOO_COMPLEX), "too complex to analyse");
    mgpu_ptx_analysis_free(&a);
    /* and, as the analysis said, its loop is not rewritten */
    struct mgpu_ptx_rewrite rw;
    const char *out = rewrite(t.p, MGPU_PASS_ALL, &rw);
    CHECK(out != NULL && strstr(out, "__mgpu_end") == NULL);
    mgpu_ptx_rewrite_free(&rw);
    /* The same kernel with a few tests is analysed in full. */
    t.n = 0;
    put(&t, "%s", ptx_header);
    put_stride_kernel(&t, "guarded", "setp.ge.u32 %p3, %r5, %r1;\n@%p3 bra $L__top;\n", "");
    timed_analysis(&t, &a);
    CHECK(a.nkernels == 1 && a.kernels[0].why == 0 && a.kernels[0].stride_bound_param == 0);
    mgpu_ptx_analysis_free(&a);
    free(guards.p);
    free(t.p);
}

static void test_long_call_chain(void)
{
    /* A kernel calls f0, f0 calls f1, ... f99 calls malloc, each defined
     * after its caller: the summaries took a round per call, and stopped
     * after 64 rounds with the kernel thought splittable. */
    enum { DEPTH = 100 };
    struct text t = {0};
    put(&t, "%s.extern .func (.param .b64 r) malloc(.param .b64 p);\n", ptx_header);
    for (int k = 0; k < DEPTH; k++)
        put(&t, ".func f%d();\n", k);
    put(&t, ".visible .entry kernel()\n{\ncall.uni f0;\nret;\n}\n");
    for (int k = 0; k < DEPTH; k++) {
        if (k + 1 < DEPTH)
            put(&t, ".func f%d()\n{\ncall.uni f%d;\nret;\n}\n", k, k + 1);
        else
            put(&t, ".func f%d()\n{\n.reg .b64 %%rd<2>;\n{\n.param .b64 p0;\n"
                    "st.param.b64 [p0], 64;\n.param .b64 r0;\ncall.uni (r0), malloc, (p0);\n}\n"
                    "ret;\n}\n",
                k);
    }
    struct mgpu_ptx_analysis a;
    double took = timed_analysis(&t, &a);
    CHECK(took < COST_SECONDS_MAX);
    CHECK(a.nkernels == 1 && a.kernels[0].why == MGPU_WHY_DEVICE_MALLOC);
    mgpu_ptx_analysis_free(&a);
    free(t.p);
}

/* How far apart neighbouring threads' accesses lie (ptx_thread_stride.h):
 * a coalesced load, a store down a column of run-time pitch, 4-byte fields
 * of 8-byte structs, a pointer loaded from memory (charged to no
 * parameter), a shift by 7, and a loop whose index is written twice. */
static void test_thread_scatter(void)
{
    static const char ptx[] =
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry k(.param .u64 p_out, .param .u64 p_in, .param .u64 p_pairs,\n"
        "    .param .u64 p_tab, .param .u32 p_h)\n{\n"
        ".reg .b32 %r<10>;\n.reg .b64 %rd<20>;\n.reg .f32 %f<4>;\n"
        "ld.param.u64 %rd1, [p_out];\nld.param.u64 %rd2, [p_in];\n"
        "ld.param.u64 %rd3, [p_pairs];\nld.param.u64 %rd4, [p_tab];\nld.param.u32 %r1, [p_h];\n"
        "mov.u32 %r2, %tid.x;\nmov.u32 %r3, %ctaid.x;\nmad.lo.s32 %r4, %r3, 256, %r2;\n"
        "mul.wide.s32 %rd5, %r4, 4;\nadd.s64 %rd6, %rd2, %rd5;\nld.global.f32 %f1, [%rd6];\n"
        "mul.lo.s32 %r5, %r4, %r1;\nmul.wide.s32 %rd7, %r5, 4;\nadd.s64 %rd8, %rd1, %rd7;\n"
        "st.global.f32 [%rd8], %f1;\n"
        "mul.wide.s32 %rd9, %r4, 8;\nadd.s64 %rd10, %rd3, %rd9;\nld.global.f32 %f2, [%rd10+4];\n"
        "ld.global.u64 %rd11, [%rd4];\nadd.s64 %rd13, %rd11, %rd5;\nst.global.f32 [%rd13], %f2;\n"
        "ret;\n}\n"
        ".visible .entry k2(.param .u64 p_a, .param .u64 p_b)\n{\n"
        ".reg .pred %p<2>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<10>;\n.reg .f32 %f<2>;\n"
        "ld.param.u64 %rd1, [p_a];\nld.param.u64 %rd2, [p_b];\nmov.u32 %r1, %tid.x;\n"
        "shl.b32 %r2, %r1, 7;\ncvt.u64.u32 %rd3, %r2;\nadd.s64 %rd4, %rd1, %rd3;\n"
        "ld.global.f32 %f1, [%rd4];\ncvt.u64.u32 %rd5, %r1;\n"
        "$L1:\nshl.b64 %rd6, %rd5, 2;\nadd.s64 %rd7, %rd2, %rd6;\nst.global.f32 [%rd7], %f1;\n"
        "add.s64 %rd5, %rd5, 1024;\nsetp.lt.u64 %p1, %rd5, 4096;\n@%p1 bra $L1;\n"
        "ret;\n}\n"
        ".visible .entry k3(.param .u64 p_v, .param .u64 p_w, .param .u64 p_pairs)\n{\n"
        ".reg .b32 %r<4>;\n.reg .b64 %rd<20>;\n.reg .f32 %f<12>;\n"
        "ld.param.u64 %rd1, [p_v];\nld.param.u64 %rd2, [p_w];\nld.param.u64 %rd3, [p_pairs];\n"
        "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd4, %r1, 32;\n"
        "add.s64 %rd5, %rd1, %rd4;\nld.global.v2.f32 {%f1, %f2}, [%rd5];\n"
        "add.s64 %rd6, %rd5, 8;\nld.global.v2.f32 {%f3, %f4}, [%rd6];\n"
        "ld.global.v2.f32 {%f5, %f6}, [%rd6+8];\nadd.s64 %rd7, %rd6, 16;\n"
        "ld.global.v2.f32 {%f7, %f8}, [%rd7];\n"
        "add.s64 %rd8, %rd2, %rd4;\nld.global.v2.f32 {%f1, %f2}, [%rd8];\n"
        "add.s64 %rd9, %rd8, 16;\nld.global.v2.f32 {%f3, %f4}, [%rd9];\n"
        "mul.wide.u32 %rd10, %r1, 8;\nadd.s64 %rd11, %rd3, %rd10;\n"
        "ld.global.f32 %f9, [%rd11];\nld.global.f32 %f10, [%rd11+4];\n"
        "ret;\n}\n";
    struct ptx_module m;
    struct mgpu_ptx_analysis a;
    const struct mgpu_kernel_info *k = analyse(ptx, &m, &a);
    CHECK(a.nkernels == 3);
    if (k != NULL && k->nparams == 5) {
        CHECK(k->params[0].scatter == 8); /* out[i * h]: a sector per float */
        CHECK(k->params[1].scatter == 1); /* in[i] */
        CHECK(k->params[2].scatter == 2); /* pairs[i].second: 4 of every 8 bytes */
        CHECK(k->params[3].scatter == 1); /* the table's one pointer */
        CHECK(k->params[4].scatter == 1);
    }
    if (a.nkernels == 3 && a.kernels[1].nparams == 2) {
        CHECK(a.kernels[1].params[0].scatter == 8); /* a[tid << 5]: 128 bytes apart */
        CHECK(a.kernels[1].params[1].scatter == 1); /* b[i], i += 1024 */
    }
    /* Threads 32 bytes apart that each read all 32 (four 8-byte loads
     * from registers a constant apart): filled; half of them: 2x; both
     * fields of 8-byte pairs: filled. */
    if (a.nkernels == 3 && a.kernels[2].nparams == 3) {
        CHECK(a.kernels[2].params[0].scatter == 1);
        CHECK(a.kernels[2].params[1].scatter == 2);
        CHECK(a.kernels[2].params[2].scatter == 1);
    }
    mgpu_ptx_analysis_free(&a);
    ptx_module_free(&m);
}

int main(void)
{
    test_parse_structure();
    test_scope_pass();
    test_inline();
    test_probe_block_threshold();
    test_block_offset_pass();
    test_module_globals_pass();
    test_analysis();
    test_thread_scatter();
    test_reductions();
    test_stride_loop();
    test_robustness();
    test_cost_of_value_chains();
    test_cost_of_candidate_updates();
    test_cost_budget();
    test_long_call_chain();
    test_bounded_reads();
    test_nesting_limit();
    test_memory_per_byte();
    CHECK_DONE();
}
