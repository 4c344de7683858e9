/* Whether a GEMM that can be cut is cut (MGPU_SPLIT=auto, the default),
 * per GEMM shape (routine, library, sizes, transposes, types) from
 * measured GPU times, as sched/split_policy.h does for kernels: the first
 * call of a shape runs whole, untimed (cuBLAS picks its kernels and the
 * GPUs' caches are cold); the next is timed whole. A shape whose whole
 * call took under MGPU_GEMM_MIN_MICROSECONDS stays whole (a split's fork,
 * join and per-part calls cost tens of microseconds): it is never tried.
 * So does one whose split, by the estimate of its copies over the links,
 * could not beat it, until its calls have doubled since: the estimate is
 * asked again then, since a mirror's copy is shared over the calls. Otherwise the split is tried,
 * timed, twice, however slow the first (it makes handles, workspaces and NCCL's communicator on the
 * other GPUs: a second there), and from then on the faster way is taken. A call made while a timing
 * of its shape is still out waits for it (at most a second), so that a loop that queues its calls
 * far ahead does not run them all the untried way. MGPU_SPLIT=always cuts every GEMM that can be
 * cut (the tests).
 *
 * On 4 x H100 a BF16 8192^3 torch.mm took 1.37 ms whole and 8.75 ms cut
 * in four (the median of ten, each cut), its FP32 twin 21.2 ms whole and
 * 5.57 ms cut (bench/RESULTS.md): no fixed rule is right for both. */
#ifndef MGPU_GEMM_POLICY_H
#define MGPU_GEMM_POLICY_H

#include "blas/gemm_call.h"

#include <cuda.h>
#include <stdbool.h>

#define MGPU_GEMM_MIN_MICROSECONDS 100.0

/* The timing of one call the policy asked for. */
struct mgpu_gemm_trial {
    void *shape; /* NULL: not timed */
    bool split;
};

/* What the policy was told about the split of a call, asked before its
 * shape's first split try: the estimated split time given the whole
 * call's, with `calls` calls of the shape so far (what a copy made once for
 * several calls, as a mirror is, is shared over; they predict as many to
 * come). Negative: not known; the split is tried. NAN: not known yet (the
 * links still being measured); the call runs whole, untimed. */
typedef double (*mgpu_gemm_estimate_fn)(void *arg, double whole_us, unsigned long calls);

/* Why a call that could be cut runs whole; for the report. */
enum mgpu_gemm_policy_whole {
    MGPU_GEMM_WHOLE_SPLITS,   /* not whole: the call is cut */
    MGPU_GEMM_WHOLE_FIRST,    /* a shape's first calls, before it is measured */
    MGPU_GEMM_WHOLE_SHORT,    /* under MGPU_GEMM_MIN_MICROSECONDS whole */
    MGPU_GEMM_WHOLE_ESTIMATE, /* the estimate says a split cannot pay */
    MGPU_GEMM_WHOLE_MEASURED, /* measured faster whole */
};

/* Whether to cut this call of `lib` (its stream: `stream`, in the current
 * context). Fills *trial; when trial->shape is set, call
 * mgpu_gemm_trial_begin before the call (split or whole) and
 * mgpu_gemm_trial_end after it. *why says why a call runs whole. */
bool mgpu_gemm_policy_choose(const struct mgpu_blas_library *lib, const struct mgpu_gemm_call *call,
                             mgpu_gemm_estimate_fn estimate, void *estimate_arg,
                             struct mgpu_gemm_trial *trial, enum mgpu_gemm_policy_whole *why);
void mgpu_gemm_trial_begin(struct mgpu_gemm_trial *trial, CUstream stream);
/* For the report: one line per GEMM shape measured whole, at most `max`:
 * its best whole and cut times and the way taken ("  measured:
 * cublasSgemm_v2 8192x8192x8192: whole 21.223 ms, cut 5.572 ms (2 tries):
 * cut"); returns how many. */
size_t mgpu_gemm_policy_describe(char (*lines)[160], size_t max);

/* For the report: the cut calls timed as tries, into *tries, and what they
 * took beyond as many whole calls at the shape's best, summed. */
double mgpu_gemm_policy_tries_over_us(unsigned long *tries);
void mgpu_gemm_trial_end(struct mgpu_gemm_trial *trial, CUstream stream, CUresult ran);

#endif
