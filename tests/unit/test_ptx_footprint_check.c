/* Unit tests of the footprint soundness check (ptx/ptx_footprint_check.c)
 * on two kernels written here in the shape nvcc emits: out[g] = in[g] +
 * in[g + 1] with g the thread's index in the grid, and one that reads
 * through a pointer loaded from memory (its footprint unknown: every
 * buffer whole). What a slice touched inside its prediction is no escape
 * and counts for tightness; a byte before or past it, a write where only
 * reads were predicted, a parameter no slot names, or (unknown footprint)
 * a byte outside the buffer is one; a struct's pointer past its first 8
 * bytes is unbounded, not an escape. */
#include "check.h"
#include "footprint_kernel.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_footprint.h"
#include "ptx/ptx_footprint_check.h"
#include "ptx/ptx_module.h"

#include <stdint.h>
#include <string.h>

#define HEAD ".version 8.0\n.target sm_90\n.address_size 64\n"

static const char pairs[] =
    HEAD ".visible .entry pairs(.param .u64 pairs_param_0, .param .u64 pairs_param_1)\n"
         "{\n.reg .b32 %r<6>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<3>;\n"
         "ld.param.u64 %rd1, [pairs_param_0];\nld.param.u64 %rd2, [pairs_param_1];\n"
         "mov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\nmov.u32 %r3, %tid.x;\n"
         "mad.lo.s32 %r4, %r1, %r2, %r3;\n"
         "cvta.to.global.u64 %rd3, %rd1;\nmul.wide.s32 %rd4, %r4, 4;\n"
         "add.s64 %rd5, %rd3, %rd4;\nld.global.f32 %f1, [%rd5];\n"
         "ld.global.f32 %f2, [%rd5+4];\nadd.f32 %f1, %f1, %f2;\n"
         "cvta.to.global.u64 %rd6, %rd2;\nadd.s64 %rd7, %rd6, %rd4;\n"
         "st.global.f32 [%rd7], %f1;\nret;\n}\n";

static const char indirect[] =
    HEAD ".visible .entry indirect(.param .u64 indirect_param_0)\n"
         "{\n.reg .b64 %rd<5>;\n.reg .f32 %f<2>;\n"
         "ld.param.u64 %rd1, [indirect_param_0];\ncvta.to.global.u64 %rd2, %rd1;\n"
         "ld.global.u64 %rd3, [%rd2];\ncvta.to.global.u64 %rd4, %rd3;\n"
         "ld.global.f32 %f1, [%rd4];\nret;\n}\n";

/* A struct parameter whose second pointer (its bytes 8..15) is read: the
 * probe measures from the first pointer, so the footprint's slot at
 * offset 8 bounds nothing it can compare. */
static const char second[] =
    HEAD ".visible .entry second(.param .align 8 .b8 second_param_0[16])\n"
         "{\n.reg .b32 %r<3>;\n.reg .b64 %rd<5>;\n.reg .f32 %f<2>;\n"
         "ld.param.u64 %rd1, [second_param_0+8];\ncvta.to.global.u64 %rd2, %rd1;\n"
         "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd2, %rd3;\n"
         "ld.global.f32 %f1, [%rd4];\nret;\n}\n";

static struct mgpu_fp_touched span(long long lo, long long hi)
{
    return (struct mgpu_fp_touched){true, lo, hi};
}

/* The check's verdict on the slice of blocks [begin, end) along x. */
static struct mgpu_fp_verdict check_blocks(const struct kernel *k, const struct mgpu_fp_launch *l,
                                           unsigned begin, unsigned end,
                                           const struct mgpu_fp_param_touch *touch, size_t nparams)
{
    struct mgpu_fp_verdict v = {0};
    mgpu_fp_check_slice(&k->fp, l, 0, begin, end, touch, nparams, &v);
    return v;
}

int main(void)
{
    struct kernel k;
    CHECK(footprint_of(pairs, &k) && !k.fp.unknown);
    uint64_t in = 0x10000, out = 0x20000;
    void *params[] = {&in, &out};
    size_t sizes[] = {8, 8};
    struct mgpu_fp_launch l = {{64, 1, 1}, {128, 1, 1}, params, sizes, 2};
    /* Blocks [2, 4): g from 256 to 511, in[256] .. in[512] read, out[256]
     * .. out[511] written. */
    struct mgpu_fp_param_touch touch[3];
    memset(touch, 0, sizeof touch);
    touch[0] = (struct mgpu_fp_param_touch){
        .read = span(1024, 2052), .buffer_lo = 0, .buffer_hi = 64 * 128 * 4};
    touch[1] = (struct mgpu_fp_param_touch){
        .written = span(1024, 2048), .buffer_lo = 0, .buffer_hi = 64 * 128 * 4};
    struct mgpu_fp_verdict v = check_blocks(&k, &l, 2, 4, touch, 2);
    CHECK(v.escapes == 0 && v.checked == 2);
    CHECK(v.predicted_bytes == v.touched_bytes && v.touched_bytes == 1028 + 1024);

    /* A byte before the slice's reads, one past its writes: two escapes. */
    touch[0].read = span(1020, 2052);
    touch[1].written = span(1024, 2052);
    v = check_blocks(&k, &l, 2, 4, touch, 2);
    CHECK(v.escapes == 2 && v.checked == 2);

    /* Touching less than predicted is sound, only loose. */
    touch[0].read = span(1536, 2052);
    touch[1].written = span(1024, 1536);
    v = check_blocks(&k, &l, 2, 4, touch, 2);
    CHECK(v.escapes == 0 && v.touched_bytes < v.predicted_bytes);

    /* Predicted at the launch, compared after it ran: the same verdict. */
    struct mgpu_fp_param_prediction pred[2];
    CHECK(mgpu_fp_predict_slice(&k.fp, &l, 0, 2, 4, 2, pred));
    CHECK(pred[0].named && pred[1].named && pred[0].read.lo == 1024 && pred[0].read.hi == 2052 &&
          !pred[0].written.any && pred[1].written.lo == 1024 && pred[1].written.hi == 2048);
    struct mgpu_fp_verdict later = {0};
    mgpu_fp_compare(pred, touch, 2, &later);
    CHECK(later.escapes == v.escapes && later.checked == v.checked &&
          later.touched_bytes == v.touched_bytes && later.predicted_bytes == v.predicted_bytes);

    /* A write through `in` (only read, predicted) and a third parameter
     * that no slot names: escapes. */
    touch[0].written = span(1024, 1028);
    touch[2].read = span(0, 4);
    v = check_blocks(&k, &l, 2, 4, touch, 3);
    CHECK(v.escapes == 2 && v.checked == 4);
    kernel_free(&k);

    /* Unknown footprint: every parameter's whole buffer; 1 KiB around the
     * pointer here. Inside: no escape; past its end: one. */
    CHECK(footprint_of(indirect, &k) && k.fp.unknown);
    void *one[] = {&in};
    struct mgpu_fp_launch l1 = {{8, 1, 1}, {32, 1, 1}, one, sizes, 1};
    struct mgpu_fp_param_touch t1 = {.read = span(-256, 512), .buffer_lo = -512, .buffer_hi = 512};
    v = check_blocks(&k, &l1, 0, 4, &t1, 1);
    CHECK(v.escapes == 0 && v.checked == 1 && v.predicted_bytes == 1024);
    t1.read = span(0, 516);
    v = check_blocks(&k, &l1, 0, 4, &t1, 1);
    CHECK(v.escapes == 1);
    kernel_free(&k);

    /* The struct's second pointer read: no bound to hold it to (not an
     * escape, whatever the distance from the first pointer), counted as
     * unbounded; a write through it, which no slot makes, is one. */
    CHECK(footprint_of(second, &k) && !k.fp.unknown);
    uint64_t two[2] = {0x10000, 0x90000};
    void *sp[] = {two};
    size_t ssize[] = {16};
    struct mgpu_fp_launch l2 = {{8, 1, 1}, {32, 1, 1}, sp, ssize, 1};
    struct mgpu_fp_param_touch t2 = {
        .read = span(0x80000, 0x80080), .buffer_lo = 0, .buffer_hi = 4096};
    v = check_blocks(&k, &l2, 0, 4, &t2, 1);
    CHECK(v.escapes == 0 && v.checked == 1 && v.unbounded == 1);
    t2.written = span(0x80000, 0x80004);
    v = check_blocks(&k, &l2, 0, 4, &t2, 1);
    CHECK(v.escapes == 1 && v.unbounded == 1);
    kernel_free(&k);
    return check_failures != 0;
}
