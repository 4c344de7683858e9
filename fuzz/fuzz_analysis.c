/* libFuzzer harness for the kernel analysis (ptx/ptx_analysis.c), the
 * grid-stride loop finder (ptx_stride_loop.c) and footprints
 * (ptx_footprint.c) on any parsed text: an answer for every kernel, in
 * bounded time (libFuzzer's -timeout turns a slow input into a finding), a
 * reason for every kernel that cannot be split; footprints whose nodes
 * refer only to earlier nodes, and a slice's ranges ordered. */
#include "fuzz_input.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_footprint.h"
#include "ptx/ptx_stride_loop.h"

/* Kernel f's footprint, checked, and one slice of a launch without
 * parameter values instantiated. */
static void check_footprint(const struct ptx_function *f, const int *access_param)
{
    struct mgpu_kernel_footprint fp;
    if (mgpu_ptx_footprint(f, access_param, &fp) != 0)
        return;
    for (size_t n = 0; n < fp.nnodes; n++)
        fuzz_require(fp.nodes[n].a < (int)n && fp.nodes[n].b < (int)n,
                     "a footprint's node refers to earlier nodes only");
    for (size_t i = 0; i < fp.naccesses; i++)
        fuzz_require(fp.accesses[i].slot >= 0 && (size_t)fp.accesses[i].slot < fp.nslots &&
                         fp.accesses[i].offset >= 0 && (size_t)fp.accesses[i].offset < fp.nnodes,
                     "an access names a slot and a node");
    struct mgpu_fp_range *r = malloc(2 * (fp.nslots + 1) * sizeof *r);
    if (r != NULL) {
        struct mgpu_fp_launch l = {{7, 3, 2}, {32, 2, 1}, NULL, NULL, 0};
        mgpu_fp_slice(&fp, &l, 1, 1, 3, r, r + fp.nslots);
        for (size_t i = 0; i < 2 * fp.nslots; i++)
            fuzz_require(r[i].whole || !r[i].any || r[i].lo <= r[i].hi,
                         "a slice's range is ordered");
        free(r);
    }
    mgpu_kernel_footprint_free(&fp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct ptx_module module;
    if (ptx_parse(text, size, &module) != 0) {
        free(text);
        return 0;
    }
    struct mgpu_ptx_analysis analysis;
    if (mgpu_ptx_analyze_accesses(&module, &analysis) == 0) {
        for (size_t i = 0; i < analysis.nkernels; i++) {
            const struct mgpu_kernel_info *k = &analysis.kernels[i];
            fuzz_require(k->name != NULL, "every kernel has a name");
            struct ptx_function *f = ptx_find_function(&module, ptx_str_of(k->name));
            if (f != NULL && f->has_body && f->nbody == k->nbody)
                check_footprint(f, k->access_param);
            if (k->why != 0)
                fuzz_require(k->stride_bound_param < 0,
                             "an unsplittable kernel has no stride loop");
            fuzz_require(k->stride_bound_param < (int)k->nparams,
                         "the stride bound is a parameter");
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
