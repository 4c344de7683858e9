/* When to mirror (issue 18, item 5): MGPU_MIRROR=always mirrors every
 * split launch that has something to mirror, never none; auto decides per
 * kernel and grid shape from measured GPU times, as MGPU_SPLIT=auto
 * decides splitting. The first split launch of a shape with something to
 * mirror runs without mirrors, untimed (it pays one-off costs); the next
 * are timed with events, one at a time: once without mirrors, then twice
 * with them (the first of which makes the copies and fills them, the
 * second shows the steady state: refreshed again only if the program
 * wrote the buffers between). From then on the shape is mirrored only if
 * its best mirrored time beats the time without by MGPU_MIRROR_GAIN. A
 * timing includes the refreshes queued before the launch, so a buffer the
 * program rewrites before every launch pays for its refresh each time.
 * Launches made while a timing is out run without mirrors: never waiting,
 * since without is what a launch would do with mirrors off. A shape whose
 * split launch takes under MGPU_MIRROR_MIN_MICROSECONDS without mirrors is
 * never tried with them: a refresh costs tens of microseconds (NCCL's
 * latency, or a device copy's), more than such a launch could gain.
 * A split that the split policy tries and keeps with its reductions
 * privatised (split_policy.h: held back only by atomics that privatised
 * copies avoid) is mirrored untimed: that policy's timings already
 * compare it, privatised, with the whole launch.
 * A grid-stride loop cut by iterations is never tried with mirrors: the
 * slice plan gives each GPU the iterations next to its data
 * (sched/slice_plan.c), so the loop's reads of its own elements are local
 * already, and a try would copy every buffer it loads and, on distinct
 * devices, make NCCL's communicator inside the program's loop. On 2 x
 * H200 a loop of 60 launches of 2048 blocks (tests/gpu/split_launch
 * grid-stride) took 7.5 ms per launch, 0.4 s of its 0.45 s the
 * communicator's, against 0.33 ms without mirrors. A loop that reads other iterations'
 * elements (all of a vector, as a matrix-vector product does) reads them
 * where they lie; MGPU_MIRROR=always mirrors it. */
#ifndef MGPU_MIRROR_POLICY_H
#define MGPU_MIRROR_POLICY_H

#include <cuda.h>
#include <stdbool.h>

/* Mirrored is kept only when at least this much faster (times are noisy). */
#define MGPU_MIRROR_GAIN 0.95
#define MGPU_MIRROR_MIN_MICROSECONDS 50.0

struct mgpu_mirror_trial {
    void *shape; /* NULL: not timed */
};

/* Whether this split launch of `kernel` with this grid and block mirrors;
 * `privatise`: the split policy wants its reductions privatised;
 * `by_iterations`: its slices cut a grid-stride loop by iterations;
 * `mirrored_us`: the split policy's best split try of the shape, made
 * mirrored (split_policy.h), or 0: taken as both mirrored samples, the
 * shape warm, so that only one launch is timed without; `copies_us`
 * (NULL: nothing), asked with `arg` only before a first mirrored try:
 * what making the launch's copies from nothing would take, in
 * microseconds, the most such a try is expected to cost, for the budget
 * for trying (base/try_budget.h; a try that does not fit runs
 * unmirrored, untimed). Fills *trial; when trial->shape is set, call
 * mgpu_mirror_trial_begin before the launch's refreshes and
 * mgpu_mirror_trial_end after it. */
typedef double (*mgpu_mirror_copies_fn)(void *arg);
bool mgpu_mirror_policy_choose(const void *kernel, const unsigned grid[3], const unsigned block[3],
                               bool privatise, bool by_iterations, double mirrored_us,
                               mgpu_mirror_copies_fn copies_us, void *arg,
                               struct mgpu_mirror_trial *trial);
void mgpu_mirror_trial_begin(struct mgpu_mirror_trial *trial, CUstream stream);
void mgpu_mirror_trial_end(struct mgpu_mirror_trial *trial, CUstream stream, CUresult launched);

/* For the report: shapes timed both ways, and of those, mirrored; shapes
 * whose splits privatised untimed, for the split policy. */
struct mgpu_mirror_policy_stats {
    unsigned long decided, mirrored, privatised;
};
void mgpu_mirror_policy_stats(struct mgpu_mirror_policy_stats *out);

/* For the report: the split launches timed with mirrors as this policy's
 * tries (not those the split policy's mirrored tries seeded), into *tries,
 * and what they took beyond as many split launches without mirrors at the
 * shape's best, summed. */
double mgpu_mirror_policy_tries_over_us(unsigned long *tries);

#endif
