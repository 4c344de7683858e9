/* Unit tests of ptx/ptx_contract.c on hand-written kernel bodies: a
 * multiply whose one use is an add or sub, parted by a statement that will
 * have a probe call before it, is planned as the FMA ptxas would make (a
 * neg into the product's register where the product is subtracted or
 * subtracts); pairs ptxas would not fuse, or that no call parts, are left
 * alone. Fails with the plan emptied. */
#include "check.h"
#include "ptx/ptx_contract.h"
#include "ptx/ptx_module.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_BODY 64

/* Plans the body of kernel k (a few declarations and `body`), a probe
 * call before every ld and st; the replacement texts, ';'-joined with the
 * index of each, into out ("" when none). */
static void plan(const char *body, char *out, size_t outlen)
{
    static char text[4096];
    snprintf(text, sizeof text,
             ".version 8.5\n.target sm_90\n.address_size 64\n"
             ".visible .entry k(.param .u64 k_p0)\n{\n"
             ".reg .pred %%p<4>;\n.reg .f32 %%f<16>;\n.reg .f64 %%fd<8>;\n.reg .b64 %%rd<8>;\n"
             "%s}\n",
             body);
    struct ptx_module m;
    out[0] = '\0';
    CHECK(ptx_parse(text, strlen(text), &m) == 0);
    struct ptx_function *f = ptx_find_function(&m, ptx_str_of("k"));
    CHECK(f != NULL);
    if (f == NULL || f->nbody > MAX_BODY) {
        ptx_module_free(&m);
        return;
    }
    bool glue[MAX_BODY] = {false};
    const char *replace[MAX_BODY];
    for (size_t i = 0; i < f->nbody; i++) {
        const struct ptx_stmt *s = f->body[i];
        glue[i] = s->kind == PTX_INSTRUCTION &&
                  (ptx_str_is(s->u.ins.opcode, "ld") || ptx_str_is(s->u.ins.opcode, "st")) &&
                  !(s->u.ins.nmods > 0 && ptx_str_is(s->u.ins.mods[0], "param"));
    }
    size_t n = ptx_contract_plan(&m, f->body, f->nbody, glue, replace);
    size_t listed = 0;
    for (size_t i = 0; i < f->nbody; i++)
        if (replace[i] != NULL) {
            size_t used = strlen(out);
            snprintf(out + used, outlen - used, "%s%zu: %s", listed ? " | " : "", i, replace[i]);
            listed++;
        }
    CHECK(n == listed);
    ptx_module_free(&m);
}

int main(void)
{
    char got[1024];
    /* lu_trailing's update: x - a*b, a load parting them (indices count the four .reg lines). */
    plan("ld.param.u64 %rd1, [k_p0];\n"
         "ld.global.f32 %f1, [%rd1];\n"
         "mul.f32 %f3, %f2, %f1;\n"
         "ld.global.f32 %f4, [%rd1+4];\n"
         "sub.f32 %f5, %f4, %f3;\n"
         "st.global.f32 [%rd1+8], %f5;\n",
         got, sizeof got);
    CHECK_STR(got, "8: neg.f32 %f3, %f2;\nfma.rn.f32 %f5, %f3, %f1, %f4;");
    /* a*b + x and x + a*b, ftz kept; a*b - x. */
    plan("mul.ftz.f32 %f3, %f2, %f1;\n"
         "ld.global.f32 %f4, [%rd1];\n"
         "add.ftz.f32 %f5, %f3, %f4;\n"
         "mul.f64 %fd3, %fd1, 0d4000000000000000;\n"
         "ld.global.f64 %fd4, [%rd1];\n"
         "add.f64 %fd5, %fd4, %fd3;\n"
         "mul.f32 %f6, %f1, %f1;\n"
         "st.global.f32 [%rd1], %f5;\n"
         "sub.f32 %f7, %f6, %f5;\n",
         got, sizeof got);
    CHECK_STR(got, "6: fma.rn.ftz.f32 %f5, %f2, %f1, %f4; | "
                   "9: fma.rn.f64 %fd5, %fd1, 0d4000000000000000, %fd4; | "
                   "12: neg.f32 %f6, %f5;\nfma.rn.f32 %f7, %f1, %f1, %f6;");
    /* Left alone: nothing between them; a rounding modifier; the product
     * read twice; an operand written between; a label, a guard or mixed
     * ftz between or on them; the sum of a product with itself. */
    plan("mul.f32 %f3, %f2, %f1;\n"
         "sub.f32 %f5, %f4, %f3;\n"
         "mul.rn.f32 %f6, %f2, %f1;\n"
         "ld.global.f32 %f4, [%rd1];\n"
         "add.f32 %f7, %f6, %f4;\n"
         "mul.f32 %f8, %f2, %f1;\n"
         "ld.global.f32 %f4, [%rd1];\n"
         "add.f32 %f9, %f8, %f4;\n"
         "st.global.f32 [%rd1], %f8;\n"
         "mul.f32 %f10, %f2, %f1;\n"
         "ld.global.f32 %f2, [%rd1];\n"
         "add.f32 %f11, %f10, %f4;\n"
         "mul.f32 %f12, %f2, %f1;\n"
         "ld.global.f32 %f4, [%rd1];\n"
         "$L1:\n"
         "add.f32 %f13, %f12, %f4;\n"
         "mul.f32 %f14, %f2, %f1;\n"
         "ld.global.f32 %f4, [%rd1];\n"
         "@%p1 add.f32 %f15, %f14, %f4;\n"
         "mul.ftz.f32 %f1, %f2, %f2;\n"
         "ld.global.f32 %f4, [%rd1];\n"
         "add.f32 %f0, %f1, %f4;\n"
         "mul.f32 %f5, %f2, %f2;\n"
         "ld.global.f32 %f4, [%rd1];\n"
         "add.f32 %f6, %f5, %f5;\n",
         got, sizeof got);
    CHECK_STR(got, "");
    return check_failures;
}
