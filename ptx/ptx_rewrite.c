/* Owns running the rewriting passes over PTX text, in a fixed order, and
 * naming them. */
#include "ptx/ptx_rewrite.h"

#include "ptx/ptx_probes.h"
#include "ptx/ptx_stride_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned pass;
} pass_names[] = {
    {"block-offset", MGPU_PASS_BLOCK_OFFSET},
    {"scope", MGPU_PASS_SCOPE},
    {"device-ordinal", MGPU_PASS_DEVICE_ORDINAL},
    {"module-globals", MGPU_PASS_MODULE_GLOBALS},
};

long mgpu_ptx_parse_passes(const char *list)
{
    if (strcmp(list, "all") == 0)
        return MGPU_PASS_ALL;
    if (strcmp(list, "none") == 0)
        return 0;
    long passes = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        size_t i;
        for (i = 0; i < sizeof pass_names / sizeof pass_names[0]; i++)
            if (strlen(pass_names[i].name) == n && strncmp(p, pass_names[i].name, n) == 0)
                break;
        if (i == sizeof pass_names / sizeof pass_names[0])
            return -1;
        passes |= pass_names[i].pass;
        p += n;
        if (*p == ',')
            p++;
    }
    return passes;
}

int mgpu_ptx_rewrite(const char *ptx, size_t size, unsigned passes, struct mgpu_ptx_rewrite *out,
                     char *err, size_t errlen)
{
    return mgpu_ptx_rewrite_probed(ptx, size, passes, NULL, out, err, errlen);
}

int mgpu_ptx_rewrite_probed(const char *ptx, size_t size, unsigned passes,
                            const struct ptx_probe_inject *probes, struct mgpu_ptx_rewrite *out,
                            char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (probes != NULL && !(passes & MGPU_PASS_BLOCK_OFFSET)) {
        snprintf(err, errlen, "probes need the block-offset pass");
        return -1;
    }
    out->passes = passes;
    struct ptx_module m;
    if (ptx_parse(ptx, size, &m) != 0) {
        snprintf(err, errlen, "cannot parse %zu bytes of PTX: %s", size, m.error);
        return strcmp(m.error, "out of memory") == 0 ? MGPU_PTX_REWRITE_NO_MEMORY : -1;
    }
    /* The analysis, the loop search and the passes other than the
     * globals' fail for nothing but memory. */
    int rc = MGPU_PTX_REWRITE_NO_MEMORY;
    /* The probe files' modules: the module holds their statements until
     * it is printed. */
    struct ptx_module *probe_modules = NULL;
    size_t nprobe_modules = 0;
    struct ptx_stride_plan loops = {NULL, 0};
    if ((passes & MGPU_PASS_ANALYZE) && mgpu_ptx_analyze(&m, &out->analysis) != 0) {
        snprintf(err, errlen, "out of memory analysing PTX");
        goto out;
    }
    /* Before any pass changes the bodies, as the analysis saw them. */
    if ((passes & MGPU_PASS_BLOCK_OFFSET) && ptx_stride_plan_build(&m, &loops) != 0) {
        snprintf(err, errlen, "out of memory searching for grid-stride loops");
        goto out;
    }
    /* Globals first: the block-offset pass wraps instructions in blocks and
     * the globals pass must see the program's own instructions. */
    if ((passes & MGPU_PASS_MODULE_GLOBALS) &&
        ptx_pass_module_globals(&m, &out->globals, err, errlen) != 0) {
        if (strcmp(err, "out of memory") != 0)
            rc = -1;
        goto out;
    }
    /* Before the probes join the module: a probe's atomics update its own
     * GPU's maps, so they stay GPU-scoped (system-scoped, the two per
     * block thread-count then had cost vector_add 1.18x on an H200). */
    snprintf(err, errlen, "out of memory rewriting PTX");
    if ((passes & MGPU_PASS_SCOPE) && ptx_pass_scope(&m) != 0)
        goto out;
    err[0] = '\0';
    /* After the globals pass, which must not take the .const words the
     * probes pass declares for the program's __constant__ variables. */
    if (probes != NULL) {
        probe_modules = calloc(probes->set->nfiles + 1, sizeof *probe_modules);
        if (probe_modules == NULL) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        nprobe_modules = probes->set->nfiles;
        if (ptx_pass_probes(&m, probes, &loops, probe_modules, err, errlen) != 0) {
            if (strcmp(err, "out of memory") != 0)
                rc = -1;
            goto out;
        }
    }
    snprintf(err, errlen, "out of memory rewriting PTX");
    if ((passes & MGPU_PASS_BLOCK_OFFSET) && ptx_pass_block_offset(&m, &loops) != 0)
        goto out;
    if ((passes & MGPU_PASS_DEVICE_ORDINAL) && ptx_pass_device_ordinal(&m) != 0)
        goto out;
    out->ptx = ptx_print(&m, &out->size);
    if (out->ptx == NULL)
        goto out;
    rc = 0;
out:
    ptx_stride_plan_free(&loops);
    ptx_module_free(&m);
    for (size_t i = 0; i < nprobe_modules; i++)
        ptx_module_free(&probe_modules[i]);
    free(probe_modules);
    if (rc != 0)
        mgpu_ptx_rewrite_free(out);
    return rc;
}

void mgpu_ptx_rewrite_free(struct mgpu_ptx_rewrite *r)
{
    free(r->ptx);
    ptx_globals_plan_free(&r->globals);
    mgpu_ptx_analysis_free(&r->analysis);
    memset(r, 0, sizeof *r);
}
