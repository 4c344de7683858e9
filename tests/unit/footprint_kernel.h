/* For the footprint unit tests: a PTX module of one kernel, parsed,
 * analysed and its footprint derived, and freed again. */
#ifndef MGPU_TEST_FOOTPRINT_KERNEL_H
#define MGPU_TEST_FOOTPRINT_KERNEL_H

#include "ptx/ptx_analysis.h"
#include "ptx/ptx_footprint.h"
#include "ptx/ptx_module.h"

#include <stdbool.h>
#include <string.h>

struct kernel {
    struct ptx_module module;
    struct mgpu_ptx_analysis analysis;
    struct mgpu_kernel_footprint fp;
};

/* The footprint of the module's only kernel; false where the text does not
 * parse, holds other than one kernel, or has no footprint. */
static inline bool footprint_of(const char *text, struct kernel *k)
{
    memset(k, 0, sizeof *k);
    if (ptx_parse(text, strlen(text), &k->module) != 0 ||
        mgpu_ptx_analyze_accesses(&k->module, &k->analysis) != 0 || k->analysis.nkernels != 1)
        return false;
    struct ptx_function *f = ptx_find_function(&k->module, ptx_str_of(k->analysis.kernels[0].name));
    return f != NULL && mgpu_ptx_footprint(f, k->analysis.kernels[0].access_param, &k->fp) == 0;
}

static inline void kernel_free(struct kernel *k)
{
    mgpu_kernel_footprint_free(&k->fp);
    mgpu_ptx_analysis_free(&k->analysis);
    ptx_module_free(&k->module);
}

#endif
