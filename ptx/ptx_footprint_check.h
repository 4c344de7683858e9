/* The footprint soundness check (issue 45, item 2): what a slice of a
 * launch touched through each parameter's pointer, as the footprint-check
 * probe records it (probes/tools/footprint-check.cu), against the bytes
 * the kernel's footprint predicted for that slice (ptx_footprint.h). An
 * escape is a byte touched outside the prediction: the footprint would
 * then be unsound, and a decision taken from it could be wrong. No
 * driver. */
#ifndef MGPU_PTX_FOOTPRINT_CHECK_H
#define MGPU_PTX_FOOTPRINT_CHECK_H

#include "ptx/ptx_footprint.h"

#include <stdbool.h>

/* Bytes touched through one parameter's pointer in one direction:
 * [lo, hi) as offsets from the pointer's value at the launch. */
struct mgpu_fp_touched {
    bool any;
    long long lo, hi;
};

/* One parameter of the launch: what its pointer touched, read (loads) and
 * written (stores and atomics), and the bytes of its buffer around the
 * pointer, [buffer_lo, buffer_hi) as offsets from it (what a prediction of
 * the whole buffer allows). */
struct mgpu_fp_param_touch {
    struct mgpu_fp_touched read, written;
    long long buffer_lo, buffer_hi;
};

/* The sums over the slices checked. */
struct mgpu_fp_verdict {
    unsigned long escapes; /* a direction of a parameter touched outside its prediction */
    unsigned long checked; /* directions touched and compared */
    double predicted_bytes, touched_bytes; /* over the directions compared: the tightness */
    unsigned long unbounded; /* directions touched where the prediction claims no bound */
};

/* What the footprint predicts for one parameter of a slice: the bytes read
 * (loads and atomics) and written (stores and atomics) through its
 * pointer; `named` false when no pointer slot names it (and the footprint
 * is known): any byte touched through it is then an escape. A direction
 * is unbounded where a slot of the parameter past its first 8 bytes (or
 * any of a struct's pointers) uses it: the probe measures from the
 * pointer in the first 8 bytes, and the footprint claims no bound for
 * another pointer's accesses (nor does the runtime's estimate use one:
 * sched/split_estimate.c falls back to shares), so nothing there escapes
 * (CUB's DeviceReduceKernel in bench/corpus/thrust_sort: its loop's loads
 * through "any pointer" of its iterator, counted as 80 escapes before). */
struct mgpu_fp_param_prediction {
    bool named;
    bool read_unbounded, written_unbounded;
    struct mgpu_fp_range read, written;
};

/* The predictions for the slice of blocks [begin, end) along grid
 * dimension `dim` of launch `l` of the kernel whose footprint is `fp`, for
 * parameters 0 .. nparams-1, into out[] (made at the launch, compared
 * after it ran: mgpu_fp_compare). Returns false when memory runs out. */
bool mgpu_fp_predict_slice(const struct mgpu_kernel_footprint *fp, const struct mgpu_fp_launch *l,
                           int dim, unsigned begin, unsigned end, size_t nparams,
                           struct mgpu_fp_param_prediction *out);

/* Adds to *v what the slice touched (touch[p]) against its predictions. */
void mgpu_fp_compare(const struct mgpu_fp_param_prediction *pred,
                     const struct mgpu_fp_param_touch *touch, size_t nparams,
                     struct mgpu_fp_verdict *v);

/* Both at once: compares the slice of blocks [begin, end) along grid dimension `dim` of
 * launch `l` of the kernel whose footprint is `fp`, for the launch's
 * parameters 0 .. nparams-1 (touch[p]; a parameter that no pointer slot
 * names, and no unknown footprint covers, touched at all is an escape),
 * and adds to *v. Reads are checked against the slot's loads
 * and atomics, writes against its stores and atomics. */
void mgpu_fp_check_slice(const struct mgpu_kernel_footprint *fp, const struct mgpu_fp_launch *l,
                         int dim, unsigned begin, unsigned end,
                         const struct mgpu_fp_param_touch *touch, size_t nparams,
                         struct mgpu_fp_verdict *v);

#endif
