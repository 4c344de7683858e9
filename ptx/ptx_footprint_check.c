/* Owns comparing what a slice touched with what its kernel's footprint
 * predicted (ptx_footprint_check.h). */
#include "ptx/ptx_footprint_check.h"

#include <stdlib.h>

/* Compares one direction; whether it escaped. */
static bool compare(const struct mgpu_fp_touched *t, const struct mgpu_fp_range *r, bool named,
                    bool unbounded, const struct mgpu_fp_param_touch *p, struct mgpu_fp_verdict *v)
{
    if (!t->any)
        return false;
    v->checked++;
    if (named && unbounded) {
        v->unbounded++; /* no claim to hold it to, nor a tightness */
        return false;
    }
    v->touched_bytes += (double)(t->hi - t->lo);
    if (!named || !r->any)
        return true;
    long long lo = r->whole ? p->buffer_lo : r->lo, hi = r->whole ? p->buffer_hi : r->hi;
    v->predicted_bytes += (double)(hi - lo);
    return t->lo < lo || t->hi > hi;
}

bool mgpu_fp_predict_slice(const struct mgpu_kernel_footprint *fp, const struct mgpu_fp_launch *l,
                           int dim, unsigned begin, unsigned end, size_t nparams,
                           struct mgpu_fp_param_prediction *out)
{
    size_t nslots = fp->nslots;
    struct mgpu_fp_range *reads = calloc(nslots ? nslots : 1, sizeof *reads);
    struct mgpu_fp_range *writes = calloc(nslots ? nslots : 1, sizeof *writes);
    if (reads == NULL || writes == NULL) {
        free(reads);
        free(writes);
        return false;
    }
    mgpu_fp_slice(fp, l, dim, begin, end, reads, writes);
    static const struct mgpu_fp_range whole = {.whole = true, .any = true};
    for (size_t p = 0; p < nparams; p++) {
        out[p] = (struct mgpu_fp_param_prediction){.named = fp->unknown};
        if (fp->unknown) {
            out[p].read = out[p].written = whole;
            continue;
        }
        for (size_t s = 0; s < nslots; s++) {
            if (fp->slots[s].param != (int)p)
                continue;
            out[p].named = true;
            if (fp->slots[s].offset == 0) {
                out[p].read = reads[s];
                out[p].written = writes[s];
            } else {
                out[p].read_unbounded = out[p].read_unbounded || reads[s].any;
                out[p].written_unbounded = out[p].written_unbounded || writes[s].any;
            }
        }
    }
    free(reads);
    free(writes);
    return true;
}

void mgpu_fp_compare(const struct mgpu_fp_param_prediction *pred,
                     const struct mgpu_fp_param_touch *touch, size_t nparams,
                     struct mgpu_fp_verdict *v)
{
    for (size_t p = 0; p < nparams; p++) {
        v->escapes += compare(&touch[p].read, &pred[p].read, pred[p].named, pred[p].read_unbounded,
                              &touch[p], v);
        v->escapes += compare(&touch[p].written, &pred[p].written, pred[p].named,
                              pred[p].written_unbounded, &touch[p], v);
    }
}

void mgpu_fp_check_slice(const struct mgpu_kernel_footprint *fp, const struct mgpu_fp_launch *l,
                         int dim, unsigned begin, unsigned end,
                         const struct mgpu_fp_param_touch *touch, size_t nparams,
                         struct mgpu_fp_verdict *v)
{
    struct mgpu_fp_param_prediction *pred = calloc(nparams ? nparams : 1, sizeof *pred);
    if (pred != NULL && mgpu_fp_predict_slice(fp, l, dim, begin, end, nparams, pred))
        mgpu_fp_compare(pred, touch, nparams, v);
    free(pred);
}
