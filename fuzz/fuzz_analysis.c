/* libFuzzer harness for the kernel analysis (ptx/ptx_analysis.c) and
 * the grid-stride loop finder (ptx_stride_loop.c) on any parsed text: an
 * answer for every kernel, in bounded time (libFuzzer's -timeout turns a
 * slow input into a finding), a reason for every kernel that cannot be
 * split. */
#include "fuzz_input.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_stride_loop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct ptx_module module;
    if (ptx_parse(text, size, &module) != 0) {
        free(text);
        return 0;
    }
    struct mgpu_ptx_analysis analysis;
    if (mgpu_ptx_analyze(&module, &analysis) == 0) {
        for (size_t i = 0; i < analysis.nkernels; i++) {
            const struct mgpu_kernel_info *k = &analysis.kernels[i];
            fuzz_require(k->name != NULL, "every kernel has a name");
            if (k->why != 0)
                fuzz_require(k->stride_bound_param < 0, "an unsplittable kernel has no stride loop");
            fuzz_require(k->stride_bound_param < (int)k->nparams, "the stride bound is a parameter");
        }
        mgpu_ptx_analysis_free(&analysis);
    }
    for (size_t i = 0; i < module.ntop; i++) {
        const struct ptx_stmt *s = module.top[i];
        struct ptx_stride_loop loop;
        if (s->kind == PTX_FUNCTION && s->u.func.has_body &&
            ptx_search_stride_loop(&s->u.func, &loop) == PTX_STRIDE_FOUND)
            fuzz_require(loop.bound_param >= 0 && (size_t)loop.bound_param < s->u.func.nparams,
                         "a stride loop's bound is one of the function's parameters");
    }
    ptx_module_free(&module);
    free(text);
    return 0;
}
