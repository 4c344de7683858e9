/* When to split: MGPU_SPLIT=always splits every launch that can be split;
 * auto (the default) decides per kernel and grid shape from measured GPU
 * times. The first launch of a shape runs as the prior guess says,
 * untimed, since it pays one-off costs: whole under MGPU_PLACEMENT=auto,
 * where buffers start on the home GPU as the plain program's would
 * (principle 6); under the other placements, or with MGPU_SPREAD_MIN set,
 * split when the grid has at least MGPU_SPLIT_PRIOR_THREADS threads. The
 * next ones are timed with events, one at a time: the prior's way, the
 * other way, and split once more; from then on the faster way is taken
 * (the best of two split launches against the whole one; one, when it took
 * twice the whole launch or more, unless its tries were privatised,
 * mirrored or made after a spread). A shape the prior keeps whole is first
 * tried split only once its launches so far add up to
 * MGPU_SPLIT_TRY_AFTER_MICROSECONDS of whole time (their count times the
 * whole time measured); until then it runs whole, untimed and not waited
 * for. A launch made while one of these timings is still out waits for it
 * (at most a second): a loop queues its launches long before the first one
 * ends, and they would otherwise all follow the guess. A shape whose whole
 * launch takes under MGPU_SPLIT_MIN_MICROSECONDS stays whole, since the
 * host cost of a split launch is of that order; so does one whose split,
 * by the estimate of where its data lie (split_estimate.h), could not beat
 * its whole launch: it is never tried; and so does, untimed, a grid no
 * larger than one of the same kernel and block that ran whole under
 * MGPU_SPLIT_MIN_MICROSECONDS (the shrinking grids of an elimination),
 * unless the kernel has a grid-stride loop. Under MGPU_MIRROR=auto, a
 * split that the estimate holds back only for atomics it could privatise
 * is tried privatised, two tries deciding, and privatises whenever it
 * splits (trial->privatise; mirror_policy.h). Under MGPU_MIRROR=auto, a
 * shape whose launches have buffers that mirrors could serve
 * (mgpu_mirror_candidates, asked at its first split try) makes its split
 * tries with them mirrored
 * (trial->mirrored): a tiled GEMM's slices each read all of B, which over
 * the links (re-read tile by tile) keep a split slower than whole, and
 * mirrored make it 3.9x faster on 4 GPUs; the mirror policy's own tries
 * came only after a split was chosen. Once such a shape splits, the mirror
 * policy is told the best mirrored try (trial->mirrored_split_us) and
 * times it once without.
 *
 * Decided with placement (issue 19, item 2): a split that the estimate
 * holds back only because its buffers lie on one GPU is estimated again as
 * it would run with them spread (split_estimate.h, `spread`); when that,
 * with the copies the spread takes shared over the launches of the shape
 * so far, beats the whole launch, the buffers are spread before its first
 * try (trial->spread_first; placement_follow.h), and measured times decide
 * from there. A spread that would pay but for its copies is asked again
 * each time the shape's launches double (the whole launches run meanwhile
 * are the plain program's; spreading once they have lost what the copies
 * cost is at most twice as dear as knowing the future); once it paid, or
 * could never pay, it is not asked again. The moves stay bounded by
 * placement's. */
#ifndef MGPU_SPLIT_POLICY_H
#define MGPU_SPLIT_POLICY_H

#include "sched/split_estimate.h"

#include <cuda.h>
#include <stdbool.h>

#define MGPU_SPLIT_MIN_MICROSECONDS 30.0
/* A split try that loses costs about MGPU_SPLIT_MIN_MICROSECONDS more than
 * the whole launch (its fork and join, and the wait for its timing), so
 * two tries after this much whole time cost at most about 5 % of it. A
 * program that runs a shape only a few times keeps it whole:
 * tests/programs/conv2d's six launches of 45 us, two of them tried split,
 * took 0.293 ms against 0.273 ms on one GPU (-n 4, 4 x H200). */
#define MGPU_SPLIT_TRY_AFTER_MICROSECONDS (40.0 * MGPU_SPLIT_MIN_MICROSECONDS)
/* Below 2^24 threads a memory-bound kernel takes tens of microseconds on an
 * H200, where a first split launch loses more than it can gain: under 2^20,
 * stencil3d's 6 launches of 27 us split twice and took 0.38 ms against
 * 0.11 ms whole (-n 2, 4 x H200). */
#define MGPU_SPLIT_PRIOR_THREADS (1u << 24)

/* The timing of one launch the policy asked for. */
struct mgpu_split_trial {
    void *shape; /* NULL: not timed */
    bool split;
    /* the split is to privatise its reductions (MGPU_MIRROR=auto; see
     * split_may_pay in split_policy.c) */
    bool privatise;
    /* the launch's buffers are to be spread before it (split after a
     * move: mgpu_follow_spread_for_split), and its slices planned after */
    bool spread_first;
    /* a split try of a shape with buffers mirrors could serve: made with
     * them mirrored, whatever the mirror policy would say */
    bool mirrored;
    /* once the shape is decided split after mirrored tries: the best of
     * them, in microseconds, for the mirror policy (mirror_policy.h);
     * 0 otherwise */
    double mirrored_split_us;
};

/* Whether to split this launch of `kernel` with this grid and block on
 * `stream` (a stream of the current context). `estimate` (NULL: none) is
 * asked before a shape's first split try (split_estimate.h). Fills *trial;
 * when trial->shape is set, call mgpu_split_trial_begin before the launch
 * and mgpu_split_trial_end after it. */
bool mgpu_split_policy_choose(const void *kernel, const unsigned grid[3], const unsigned block[3],
                              const struct mgpu_split_estimate *estimate,
                              struct mgpu_split_trial *trial);
void mgpu_split_trial_begin(struct mgpu_split_trial *trial, CUstream stream);
/* For the report: a line per kernel shape the policy decides, the ones of
 * most GPU time first (at most `max`, 16 at most): its whole and split
 * times and tries, or why its split was not tried (the estimate, a
 * spread waiting for launches to pay for it), and the way it goes now.
 * Returns how many. */
size_t mgpu_split_policy_describe(char (*lines)[160], size_t max);

/* For the report: the split launches timed as tries, into *tries, and
 * what they took beyond as many whole launches at the shape's best
 * (mgpu_shape_timings_tries_over_us), summed over the shapes. */
double mgpu_split_policy_tries_over_us(unsigned long *tries);
void mgpu_split_trial_end(struct mgpu_split_trial *trial, CUstream stream, CUresult launched);

#endif
