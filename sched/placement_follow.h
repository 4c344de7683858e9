/* Placement that follows the kernels (issue 19, MGPU_PLACEMENT=auto): a
 * buffer starts on the home GPU, where the plain program would have it
 * (principle 6; one of MGPU_SPREAD_MIN or more, where that is set, starts
 * distributed: memory_pool.h), and it moves after the launches that use
 * it. Each launch from a
 * rewritten module counts for the pool buffers its parameters point into (the
 * analysis's uses); a kernel mgpu knows nothing of, or one that loads or
 * stores through pointers of unknown origin, counts for every large
 * buffer. A buffer that MGPU_FOLLOW_STREAK launches in a row used whole on
 * one GPU moves there; one on a single GPU that as many split launches in
 * a row used is spread; each only when the launches observed so far would
 * have cost more where it lies than there, by more than the copy times
 * one more than the moves it made (the run's link model, its copy times
 * scaled by how much longer the moves so far took than it said: a move
 * remaps 2 MiB granules besides copying them). A buffer moves
 * at most MGPU_FOLLOW_MOVES_MAX times, then stays: one used both ways in
 * turn never gathers a streak, so it does not move at all.
 *
 * A split that the split policy finds pays only once its buffers are
 * spread spreads them before its first try (mgpu_follow_spread_for_split):
 * whether a launch splits and where its data lie decided together.
 *
 * A move waits for the home GPU's work and copies the buffer (memory_pool.h,
 * mgpu_pool_migrate), between the launch that completed the streak and
 * the next. It is safe only while no other host thread launches
 * meanwhile: once a second thread has launched kernels, nothing moves
 * again (said once with -v). Thread-safe. */
#ifndef MGPU_PLACEMENT_FOLLOW_H
#define MGPU_PLACEMENT_FOLLOW_H

#include "modules/program_modules.h"

#include <stdbool.h>
#include <stddef.h>

/* 4 MiB: an n-body's positions (8 MiB) start on the home GPU and are
 * spread once split launches read them. */
#define MGPU_FOLLOW_MIN_BYTES ((size_t)4 << 20)
#define MGPU_FOLLOW_STREAK 4
#define MGPU_FOLLOW_MOVES_MAX 3

/* Set by the runtime before the program runs (MGPU_PLACEMENT=auto). */
void mgpu_follow_configure(bool on);
bool mgpu_follow_on(void);

/* After a launch that succeeded: k the kernel in the rewritten modules (NULL for a kernel
 * mgpu has no analysis of), with the launch's params or buffer; `whole_gpu`
 * the GPU it ran on whole, or -1 when it was split. May move buffers. */
void mgpu_follow_launch(const struct mgpu_gpu_kernels *k, void *const *params, const void *buffer,
                        int whole_gpu);

/* Decided with the split (split_policy.h): before a split launch of an
 * analysed kernel, the seconds the run's link model gives to spread the
 * launch's buffers of MGPU_FOLLOW_MIN_BYTES or more that lie on one GPU,
 * as the pool spreads them; negative when none of them can move (placement
 * off, a second launching thread, each spread already or moved the most
 * allowed) or there is no model. */
double mgpu_follow_spread_seconds(const struct mgpu_gpu_kernels *k, void *const *params,
                                  const void *buffer);
/* Spreads those buffers, each a move; returns how many moved. */
int mgpu_follow_spread_for_split(const struct mgpu_gpu_kernels *k, void *const *params,
                                 const void *buffer);

/* For the report. */
struct mgpu_follow_stats {
    unsigned long moves;
    unsigned long deferred; /* put off: the home GPU still busy after MOVE_WAIT_MS */
    unsigned long long bytes_moved;
    double move_ms;
    bool stopped; /* a second launching thread turned moves off */
};
void mgpu_follow_stats(struct mgpu_follow_stats *out);

/* One line per large buffer alive (where it is and why), at most `max`;
 * returns how many. */
size_t mgpu_follow_describe(char (*lines)[160], size_t max);

#endif
