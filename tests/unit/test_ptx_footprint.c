/* Unit tests of kernels' footprints (ptx/ptx_footprint.c) on PTX written
 * in the shapes nvcc emits: each kernel's slots, and the bytes a slice of
 * its grid reads and writes at a launch, against what its threads touch.
 * A 1D stencil with halos, a 2D kernel cut by rows, a column walk, index
 * arithmetic with shifts, masks and remainders, a pointer in a struct
 * passed by value, atomics, a register written again after its first use;
 * and what must widen to the whole buffer or the
 * whole kernel: a loop's pointer, a pointer loaded from memory, a call, a
 * 32-bit index that may wrap, a register written under a guard. Shared
 * and local memory are not a parameter's. */
#include "check.h"
#include "footprint_kernel.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_footprint.h"
#include "ptx/ptx_module.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEAD ".version 8.0\n.target sm_90\n.address_size 64\n"

/* The stencil1d test program's kernel, as nvcc 13 wrote it (trimmed):
 * in[g - 3], in[g], in[g + 256] read, out[g] written, g = ctaid.x *
 * ntid.x + tid.x. */
static const char stencil[] = HEAD
    ".visible .entry st(.param .u64 st_param_0, .param .u64 st_param_1, .param .u32 st_param_2)\n"
    "{\n.reg .pred %p<4>;\n.reg .b32 %r<40>;\n.reg .b64 %rd<9>;\n"
    ".shared .align 4 .b8 temp[1048];\n"
    "ld.param.u64 %rd3, [st_param_0];\nld.param.u64 %rd2, [st_param_1];\n"
    "ld.param.u32 %r10, [st_param_2];\nmov.u32 %r12, %ntid.x;\nmov.u32 %r13, %ctaid.x;\n"
    "mov.u32 %r1, %tid.x;\nmad.lo.s32 %r2, %r13, %r12, %r1;\n"
    "setp.ge.s32 %p1, %r2, %r10;\ncvta.to.global.u64 %rd4, %rd3;\n"
    "mul.wide.s32 %rd5, %r2, 4;\nadd.s64 %rd1, %rd4, %rd5;\nmov.u32 %r33, 0;\n"
    "@%p1 bra $L1;\nld.global.u32 %r33, [%rd1];\n$L1:\n"
    "shl.b32 %r14, %r1, 2;\nmov.u32 %r15, temp;\nadd.s32 %r5, %r15, %r14;\n"
    "st.shared.u32 [%r5+12], %r33;\n"
    "ld.global.u32 %r34, [%rd1+-12];\nld.global.u32 %r35, [%rd1+1024];\n"
    "bar.sync 0;\ncvta.to.global.u64 %rd6, %rd2;\nadd.s64 %rd7, %rd6, %rd5;\n"
    "st.global.u32 [%rd7], %r34;\nret;\n}\n";

/* y[row * width + col] = x[col * height + row]: rows and columns from the
 * 2D grid; x read along a column (a transpose's walk). */
static const char grid2d[] = HEAD
    ".visible .entry tr(.param .u64 tr_param_0, .param .u64 tr_param_1, .param .u32 tr_param_2,"
    " .param .u32 tr_param_3)\n"
    "{\n.reg .b32 %r<20>;\n.reg .b64 %rd<12>;\n.reg .f32 %f<2>;\n"
    "ld.param.u64 %rd1, [tr_param_0];\nld.param.u64 %rd2, [tr_param_1];\n"
    "ld.param.u32 %r1, [tr_param_2];\nld.param.u32 %r2, [tr_param_3];\n"
    "mov.u32 %r3, %ctaid.y;\nmov.u32 %r4, %ntid.y;\nmov.u32 %r5, %tid.y;\n"
    "mad.lo.s32 %r6, %r3, %r4, %r5;\n"
    "mov.u32 %r7, %ctaid.x;\nmov.u32 %r8, %ntid.x;\nmov.u32 %r9, %tid.x;\n"
    "mad.lo.s32 %r10, %r7, %r8, %r9;\n"
    "mad.lo.s32 %r11, %r10, %r2, %r6;\n"
    "cvta.to.global.u64 %rd3, %rd2;\nmul.wide.s32 %rd4, %r11, 4;\nadd.s64 %rd5, %rd3, %rd4;\n"
    "ld.global.f32 %f1, [%rd5];\n"
    "mad.lo.s32 %r12, %r6, %r1, %r10;\n"
    "cvta.to.global.u64 %rd6, %rd1;\nmul.wide.s32 %rd7, %r12, 4;\nadd.s64 %rd8, %rd6, %rd7;\n"
    "st.global.f32 [%rd8], %f1;\nret;\n}\n";

/* Index arithmetic: a warp's index (tid >> 5), a lane mask (& 31), a
 * remainder, a division, min and selp; 8-byte loads. */
static const char arith[] =
    HEAD ".visible .entry ar(.param .u64 ar_param_0, .param .u64 ar_param_1)\n"
         "{\n.reg .pred %p<2>;\n.reg .b32 %r<20>;\n.reg .b64 %rd<16>;\n"
         "ld.param.u64 %rd1, [ar_param_0];\nld.param.u64 %rd2, [ar_param_1];\n"
         "mov.u32 %r1, %tid.x;\nshr.u32 %r2, %r1, 5;\nand.b32 %r3, %r1, 31;\n"
         "rem.u32 %r4, %r1, 10;\ndiv.u32 %r5, %r1, 3;\nmin.u32 %r6, %r1, 100;\n"
         "setp.lt.u32 %p1, %r1, 7;\nselp.b32 %r7, %r2, %r3, %p1;\n"
         "add.s32 %r8, %r4, %r5;\nadd.s32 %r9, %r8, %r6;\nadd.s32 %r10, %r9, %r7;\n"
         "cvt.u64.u32 %rd3, %r10;\nshl.b64 %rd4, %rd3, 3;\nadd.s64 %rd5, %rd1, %rd4;\n"
         "ld.global.u64 %rd6, [%rd5];\n"
         /* a 32-bit index that goes below zero, zero-extended: wraps */
         "add.s32 %r11, %r1, -1;\ncvt.u64.u32 %rd7, %r11;\nshl.b64 %rd8, %rd7, 2;\n"
         "add.s64 %rd9, %rd2, %rd8;\nst.global.u32 [%rd9], %r1;\nret;\n}\n";

/* A struct passed by value holding two pointers (at bytes 0 and 8) and a
 * count (at 16); an atomic add through the second. */
static const char byvalue[] =
    HEAD ".visible .entry bv(.param .align 8 .b8 bv_param_0[24])\n"
         "{\n.reg .b32 %r<8>;\n.reg .b64 %rd<10>;\n"
         "ld.param.u64 %rd1, [bv_param_0];\nld.param.u64 %rd2, [bv_param_0+8];\n"
         "ld.param.u32 %r1, [bv_param_0+16];\n"
         "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %tid.x;\nmad.lo.s32 %r4, %r2, 128, %r3;\n"
         "cvta.to.global.u64 %rd3, %rd1;\nmul.wide.u32 %rd4, %r4, 4;\nadd.s64 %rd5, %rd3, %rd4;\n"
         "ld.global.u32 %r5, [%rd5];\n"
         "rem.u32 %r6, %r5, %r1;\n"
         "cvta.to.global.u64 %rd6, %rd2;\nmul.wide.u32 %rd7, %r2, 4;\nadd.s64 %rd8, %rd6, %rd7;\n"
         "atom.global.add.u32 %r7, [%rd8], 1;\nret;\n}\n";

/* A loop walking a pointer (written twice: before and in the loop), a
 * pointer loaded from memory, and a plain access after them. */
static const char loop[] = HEAD
    ".visible .entry lp(.param .u64 lp_param_0, .param .u64 lp_param_1, .param .u32 lp_param_2)\n"
    "{\n.reg .pred %p<2>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<10>;\n.reg .f32 %f<4>;\n"
    "ld.param.u64 %rd1, [lp_param_0];\nld.param.u64 %rd2, [lp_param_1];\n"
    "ld.param.u32 %r1, [lp_param_2];\n"
    "cvta.to.global.u64 %rd3, %rd1;\nmov.u32 %r2, 0;\nmov.f32 %f1, 0f00000000;\n"
    "$L_loop:\nld.global.f32 %f2, [%rd3];\nadd.f32 %f1, %f1, %f2;\n"
    "add.s64 %rd3, %rd3, 4;\nadd.s32 %r2, %r2, 1;\nsetp.lt.s32 %p1, %r2, %r1;\n"
    "@%p1 bra $L_loop;\n"
    "cvta.to.global.u64 %rd4, %rd2;\nmov.u32 %r3, %tid.x;\nmul.wide.u32 %rd5, %r3, 4;\n"
    "add.s64 %rd6, %rd4, %rd5;\nst.global.f32 [%rd6], %f1;\nret;\n}\n";

static const char loaded[] =
    HEAD ".visible .entry ld(.param .u64 ld_param_0)\n"
         "{\n.reg .b64 %rd<6>;\n.reg .f32 %f<2>;\n"
         "ld.param.u64 %rd1, [ld_param_0];\ncvta.to.global.u64 %rd2, %rd1;\n"
         "ld.global.u64 %rd3, [%rd2];\ncvta.to.global.u64 %rd4, %rd3;\n"
         "ld.global.f32 %f1, [%rd4];\nret;\n}\n";

static const char calls[] = HEAD ".func helper(.param .b64 helper_param_0)\n{\nret;\n}\n"
                                 ".visible .entry cl(.param .u64 cl_param_0)\n"
                                 "{\n.reg .b64 %rd<3>;\n"
                                 "ld.param.u64 %rd1, [cl_param_0];\n"
                                 "{\n.param .b64 param0;\nst.param.b64 [param0], %rd1;\n"
                                 "call.uni helper, (param0);\n}\nret;\n}\n";

/* A 64-bit mask of all ones (past what a long long holds): not a bound. */
static const char mask64[] =
    HEAD ".visible .entry mk(.param .u64 mk_param_0)\n"
         "{\n.reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n"
         "ld.param.u64 %rd1, [mk_param_0];\nmov.u32 %r1, %tid.x;\nadd.s32 %r2, %r1, -4;\n"
         "cvt.s64.s32 %rd2, %r2;\nand.b64 %rd3, %rd2, 0xffffffffffffffff;\n"
         "cvta.to.global.u64 %rd4, %rd1;\nadd.s64 %rd5, %rd4, %rd3;\n"
         "st.global.u8 [%rd5], %r1;\nret;\n}\n";

/* A register written under a guard and again: not followed. */
static const char guarded[] =
    HEAD ".visible .entry gd(.param .u64 gd_param_0)\n"
         "{\n.reg .pred %p<2>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<6>;\n"
         "ld.param.u64 %rd1, [gd_param_0];\nmov.u32 %r1, %tid.x;\nmov.u32 %r2, 0;\n"
         "setp.gt.u32 %p1, %r1, 3;\n@%p1 mov.u32 %r2, %r1;\n"
         "cvta.to.global.u64 %rd2, %rd1;\nmul.wide.u32 %rd3, %r2, 4;\nadd.s64 %rd4, %rd2, %rd3;\n"
         "st.global.u32 [%rd4], %r1;\nret;\n}\n";

/* A register nvcc reuses (reduce_sum's thread index, later a loop's
 * counter): read before its second write and outside every loop, the
 * first write's value (in[tid] bounded); in the loop and after it,
 * unknown (table[k] and in[k] anywhere). */
static const char reused[] =
    HEAD ".visible .entry ru(.param .u64 ru_param_0, .param .u64 ru_param_1)\n"
         "{\n.reg .pred %p<2>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<12>;\n.reg .f32 %f<4>;\n"
         "ld.param.u64 %rd1, [ru_param_0];\nld.param.u64 %rd8, [ru_param_1];\n"
         "cvta.to.global.u64 %rd3, %rd1;\ncvta.to.global.u64 %rd9, %rd8;\n"
         "mov.u32 %r1, %tid.x;\ncvt.u64.u32 %rd2, %r1;\nshl.b64 %rd4, %rd2, 2;\n"
         "add.s64 %rd5, %rd3, %rd4;\nld.global.f32 %f1, [%rd5];\nmov.u64 %rd2, 0;\n"
         "$L_sum:\nshl.b64 %rd6, %rd2, 2;\nadd.s64 %rd7, %rd9, %rd6;\n"
         "ld.global.f32 %f2, [%rd7];\nadd.f32 %f1, %f1, %f2;\nadd.s64 %rd2, %rd2, 1;\n"
         "setp.lt.u64 %p1, %rd2, 8;\n@%p1 bra $L_sum;\nst.global.f32 [%rd5], %f1;\n"
         "shl.b64 %rd10, %rd2, 2;\nadd.s64 %rd11, %rd3, %rd10;\nst.global.f32 [%rd11], %f1;\n"
         "ret;\n}\n";

static int slot(const struct kernel *k, int param, unsigned offset)
{
    for (size_t i = 0; i < k->fp.nslots; i++)
        if (k->fp.slots[i].param == param && k->fp.slots[i].offset == offset)
            return (int)i;
    return -1;
}

static bool range_is(const struct mgpu_fp_range *r, long long lo, long long hi)
{
    if (!(r->any && !r->whole && r->lo == lo && r->hi == hi))
        fprintf(stderr, "  range: any %d whole %d [%lld, %lld), want [%lld, %lld)\n", r->any,
                r->whole, r->lo, r->hi, lo, hi);
    return r->any && !r->whole && r->lo == lo && r->hi == hi;
}

#define MAX_SLOTS 8

int main(void)
{
    struct kernel k;
    struct mgpu_fp_range reads[MAX_SLOTS], writes[MAX_SLOTS];

    /* The stencil: 3907 blocks of 256, the slice of blocks [10, 20). */
    CHECK(footprint_of(stencil, &k));
    CHECK(!k.fp.unknown && k.fp.nslots == 2);
    {
        int n = 1000000;
        uint64_t in = 0x1000, out = 0x2000;
        void *params[] = {&in, &out, &n};
        size_t sizes[] = {8, 8, 4};
        struct mgpu_fp_launch l = {{3907, 1, 1}, {256, 1, 1}, params, sizes, 3};
        mgpu_fp_slice(&k.fp, &l, 0, 10, 20, reads, writes);
        int s_in = slot(&k, 0, 0), s_out = slot(&k, 1, 0);
        CHECK(s_in >= 0 && s_out >= 0);
        if (s_in >= 0 && s_out >= 0) {
            /* g from 2560 to 5119: in[g - 3] .. in[g + 256], out[g] */
            CHECK(range_is(&reads[s_in], 2560 * 4 - 12, 5119 * 4 + 1024 + 4));
            CHECK(!writes[s_in].any);
            CHECK(range_is(&writes[s_out], 2560 * 4, 5120 * 4));
            CHECK(!reads[s_out].any);
        }
        /* the first slice's halo lies before the buffer: the range says so,
         * the caller clamps it to the buffer */
        mgpu_fp_slice(&k.fp, &l, 0, 0, 1, reads, writes);
        CHECK(range_is(&reads[0], -12, 255 * 4 + 1028));
    }
    kernel_free(&k);

    /* 2D, cut by rows (y): grid 4 x 8 of 16 x 16, width 64, height 128. */
    CHECK(footprint_of(grid2d, &k));
    CHECK(!k.fp.unknown && k.fp.nslots == 2);
    {
        int width = 64, height = 128;
        uint64_t y = 0x1000, x = 0x2000;
        void *params[] = {&y, &x, &width, &height};
        size_t sizes[] = {8, 8, 4, 4};
        struct mgpu_fp_launch l = {{4, 8, 1}, {16, 16, 1}, params, sizes, 4};
        mgpu_fp_slice(&k.fp, &l, 1, 2, 4, reads, writes);
        int sy = slot(&k, 0, 0), sx = slot(&k, 1, 0);
        CHECK(sy >= 0 && sx >= 0);
        if (sy >= 0 && sx >= 0) {
            /* rows 32..63, columns 0..63: y's rows exactly */
            CHECK(range_is(&writes[sy], 32 * 64 * 4, 64 * 64 * 4));
            /* x[col * 128 + row]: every column, rows 32..63 of each */
            CHECK(range_is(&reads[sx], 32 * 4, (63 * 128 + 63) * 4 + 4));
        }
    }
    kernel_free(&k);

    /* Index arithmetic, 100 threads (tid 0..99). */
    CHECK(footprint_of(arith, &k));
    CHECK(!k.fp.unknown && k.fp.nslots == 2);
    {
        uint64_t a = 0x1000, b = 0x2000;
        void *params[] = {&a, &b};
        size_t sizes[] = {8, 8};
        struct mgpu_fp_launch l = {{1, 1, 1}, {100, 1, 1}, params, sizes, 2};
        mgpu_fp_slice(&k.fp, &l, 0, 0, 1, reads, writes);
        /* rem 10: 0..9; div 3: 0..33; min(tid, 100): 0..99; selp of tid>>5
         * (0..3) and tid&31 (0..31): 0..31; the sum 0..172, 8 bytes each */
        CHECK(range_is(&reads[slot(&k, 0, 0)], 0, 172 * 8 + 8));
        /* tid - 1 zero-extended: -1 wraps to 2^32 - 1 */
        CHECK(range_is(&writes[slot(&k, 1, 0)], 0, 4 * 4294967295ll + 4));
    }
    kernel_free(&k);

    /* The struct: pointers at bytes 0 and 8 are slots of their own. */
    CHECK(footprint_of(byvalue, &k));
    CHECK(!k.fp.unknown && k.fp.nslots == 2);
    {
        struct {
            uint64_t a, b;
            uint32_t n, pad;
        } arg = {0x1000, 0x2000, 7, 0};
        void *params[] = {&arg};
        size_t sizes[] = {24};
        struct mgpu_fp_launch l = {{64, 1, 1}, {128, 1, 1}, params, sizes, 1};
        mgpu_fp_slice(&k.fp, &l, 0, 8, 16, reads, writes);
        int s0 = slot(&k, 0, 0), s8 = slot(&k, 0, 8);
        CHECK(s0 >= 0 && s8 >= 0);
        if (s0 >= 0 && s8 >= 0) {
            CHECK(range_is(&reads[s0], 8 * 128 * 4, 16 * 128 * 4));
            CHECK(!writes[s0].any);
            /* the atomic at [ctaid.x]: read and written */
            CHECK(range_is(&reads[s8], 8 * 4, 16 * 4));
            CHECK(range_is(&writes[s8], 8 * 4, 16 * 4));
        }
    }
    kernel_free(&k);

    /* The loop's pointer: param 0 read anywhere; param 1 still bounded. */
    CHECK(footprint_of(loop, &k));
    CHECK(!k.fp.unknown);
    {
        int s0 = slot(&k, 0, 0), s1 = slot(&k, 1, 0);
        CHECK(s0 >= 0 && s1 >= 0);
        if (s0 >= 0 && s1 >= 0) {
            CHECK(k.fp.slots[s0].whole == MGPU_FP_LOAD);
            int n = 10;
            uint64_t a = 0x1000, b = 0x2000;
            void *params[] = {&a, &b, &n};
            size_t sizes[] = {8, 8, 4};
            struct mgpu_fp_launch l = {{4, 1, 1}, {32, 1, 1}, params, sizes, 3};
            mgpu_fp_slice(&k.fp, &l, 0, 1, 2, reads, writes);
            CHECK(reads[s0].whole && !writes[s0].any);
            CHECK(range_is(&writes[s1], 0, 32 * 4));
        }
    }
    kernel_free(&k);

    /* The reused register: in[tid] read in [0, 32 * 4) by a slice of
     * blocks of 32 threads, written anywhere (in[k] after the loop), the
     * table read anywhere. */
    CHECK(footprint_of(reused, &k));
    CHECK(!k.fp.unknown);
    {
        int s0 = slot(&k, 0, 0), s1 = slot(&k, 1, 0);
        CHECK(s0 >= 0 && s1 >= 0);
        if (s0 >= 0 && s1 >= 0 && k.fp.nslots <= MAX_SLOTS) {
            uint64_t a = 0x1000, t = 0x2000;
            void *params[] = {&a, &t};
            size_t sizes[] = {8, 8};
            struct mgpu_fp_launch l = {{4, 1, 1}, {32, 1, 1}, params, sizes, 2};
            mgpu_fp_slice(&k.fp, &l, 0, 1, 2, reads, writes);
            CHECK(range_is(&reads[s0], 0, 32 * 4));
            CHECK(writes[s0].whole);
            CHECK(reads[s1].whole && !writes[s1].any);
        }
    }
    kernel_free(&k);

    /* A pointer loaded from memory, a call: the whole kernel unknown. */
    CHECK(footprint_of(loaded, &k));
    CHECK(k.fp.unknown && strstr(k.fp.reason, "not traced to a parameter") != NULL);
    if (k.fp.nslots > 0 && k.fp.nslots <= MAX_SLOTS) {
        struct mgpu_fp_launch l = {{1, 1, 1}, {1, 1, 1}, NULL, NULL, 0};
        mgpu_fp_slice(&k.fp, &l, 0, 0, 1, reads, writes);
        CHECK(reads[0].whole && writes[0].whole);
    }
    kernel_free(&k);
    CHECK(footprint_of(calls, &k));
    CHECK(k.fp.unknown && strstr(k.fp.reason, "call") != NULL);
    kernel_free(&k);

    /* Written under a guard: the index is not followed, the store anywhere. */
    CHECK(footprint_of(guarded, &k));
    CHECK(!k.fp.unknown && k.fp.nslots == 1 && k.fp.naccesses == 0 &&
          k.fp.slots[0].whole == MGPU_FP_STORE);
    kernel_free(&k);

    /* The all-ones mask: the store's offset (tid - 4, negative in the
     * first threads) is not bounded below by 0. */
    CHECK(footprint_of(mask64, &k));
    {
        uint64_t p = 0x1000;
        void *params[] = {&p};
        size_t sizes[] = {8};
        struct mgpu_fp_launch l = {{1, 1, 1}, {8, 1, 1}, params, sizes, 1};
        mgpu_fp_slice(&k.fp, &l, 0, 0, 1, reads, writes);
        CHECK(k.fp.nslots == 1 && (writes[0].whole || writes[0].lo <= -4));
    }
    kernel_free(&k);

    /* The text of the stencil's offsets. */
    CHECK(footprint_of(stencil, &k));
    {
        char text[128];
        bool found = false;
        for (size_t i = 0; i < k.fp.naccesses; i++)
            found |= strcmp(mgpu_fp_node_text(&k.fp, k.fp.accesses[i].offset, text, sizeof text),
                            "s32(ctaid.x*ntid.x + tid.x)*4 + 1024") == 0;
        CHECK(found);
        /* a launch without its parameters' values: still bounded (the
         * stencil reads none) */
        struct mgpu_fp_launch l = {{3907, 1, 1}, {256, 1, 1}, NULL, NULL, 0};
        long long lo, hi;
        CHECK(mgpu_fp_node_bounds(&k.fp, k.fp.accesses[0].offset, &l, 0, 1, 2, &lo, &hi));
        CHECK(lo == 256 * 4 && hi == 511 * 4);
    }
    kernel_free(&k);
    return check_failures != 0;
}
