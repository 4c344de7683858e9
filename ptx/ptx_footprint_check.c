/* Owns comparing what a slice touched with what its kernel's footprint
 * predicted (ptx_footprint_check.h). */
#include "ptx/ptx_footprint_check.h"

#include <stdlib.h>

/* Compares one direction; whether it escaped. */
static bool compare(const struct mgpu_fp_touched *t, const struct mgpu_fp_range *r,
                    const struct mgpu_fp_param_touch *p, struct mgpu_fp_verdict *v)
{
    if (!t->any)
        return false;
    v->checked++;
    v->touched_bytes += (double)(t->hi - t->lo);
    if (r == NULL || !r->any)
        return true;
    long long lo = r->whole ? p->buffer_lo : r->lo, hi = r->whole ? p->buffer_hi : r->hi;
    v->predicted_bytes += (double)(hi - lo);
    return t->lo < lo || t->hi > hi;
}

void mgpu_fp_check_slice(const struct mgpu_kernel_footprint *fp, const struct mgpu_fp_launch *l,
                         int dim, unsigned begin, unsigned end,
                         const struct mgpu_fp_param_touch *touch, size_t nparams,
                         struct mgpu_fp_verdict *v)
{
    size_t nslots = fp->nslots;
    struct mgpu_fp_range *reads = calloc(nslots ? nslots : 1, sizeof *reads);
    struct mgpu_fp_range *writes = calloc(nslots ? nslots : 1, sizeof *writes);
    if (reads == NULL || writes == NULL) {
        free(reads);
        free(writes);
        return;
    }
    mgpu_fp_slice(fp, l, dim, begin, end, reads, writes);
    static const struct mgpu_fp_range whole = {.whole = true, .any = true};
    for (size_t p = 0; p < nparams; p++) {
        const struct mgpu_fp_range *r = NULL, *w = NULL;
        if (fp->unknown) {
            r = w = &whole;
        } else {
            for (size_t s = 0; s < nslots; s++)
                if (fp->slots[s].param == (int)p && fp->slots[s].offset == 0) {
                    r = &reads[s];
                    w = &writes[s];
                }
        }
        v->escapes += compare(&touch[p].read, r, &touch[p], v);
        v->escapes += compare(&touch[p].written, w, &touch[p], v);
    }
    free(reads);
    free(writes);
}
