/* Rewriting a PTX module for split launches: parse, run the passes, print.
 * This is what the runtime and `mgpu-ptx rewrite` call. */
#ifndef MGPU_PTX_REWRITE_H
#define MGPU_PTX_REWRITE_H

#include "ptx/ptx_analysis.h"
#include "ptx/ptx_passes.h"

#include <stddef.h>

enum mgpu_ptx_pass {
    MGPU_PASS_BLOCK_OFFSET = 1,
    MGPU_PASS_SCOPE = 2,
    MGPU_PASS_DEVICE_ORDINAL = 4,
    MGPU_PASS_MODULE_GLOBALS = 8,
    MGPU_PASS_ALL = 15,
    /* Not a pass: also analyse the kernels as parsed, into out->analysis,
     * so that callers that want both parse once. */
    MGPU_PASS_ANALYZE = 16,
};

struct mgpu_ptx_rewrite {
    char *ptx; /* NUL-terminated */
    size_t size;
    unsigned passes;
    struct ptx_globals_plan globals;   /* from the module-globals pass */
    struct mgpu_ptx_analysis analysis; /* with MGPU_PASS_ANALYZE */
};

/* What mgpu_ptx_rewrite returns when memory ran out, which says nothing
 * about the PTX: a caller must not take it for a verdict on the kernels. */
#define MGPU_PTX_REWRITE_NO_MEMORY (-2)

/* Rewrites PTX text with the given passes (0: parse and print only).
 * Returns 0; MGPU_PTX_REWRITE_NO_MEMORY; or -1 when the PTX cannot be
 * parsed or rewritten. Either failure leaves a one-line reason in err. */
int mgpu_ptx_rewrite(const char *ptx, size_t size, unsigned passes, struct mgpu_ptx_rewrite *out,
                     char *err, size_t errlen);
/* The same, with probes linked in and called (ptx_probes.h) when `probes`
 * is not NULL; their pass runs before the block-offset pass, which must be
 * among `passes`. */
struct ptx_probe_inject;
int mgpu_ptx_rewrite_probed(const char *ptx, size_t size, unsigned passes,
                            const struct ptx_probe_inject *probes, struct mgpu_ptx_rewrite *out,
                            char *err, size_t errlen);
void mgpu_ptx_rewrite_free(struct mgpu_ptx_rewrite *r);

/* Parses "all", "none" or a comma-separated list of pass names
 * (block-offset, scope, device-ordinal, module-globals). Returns -1 for an
 * unknown name. */
long mgpu_ptx_parse_passes(const char *list);

#endif
