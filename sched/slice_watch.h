/* The slice watch: one thread that, while slices run on other GPUs, looks
 * every millisecond for a slice stream that has failed
 * (mgpu_slice_streams_watch). Its error becomes the answer of the
 * program's next synchronisation (slice_errors.h), and, with sequence
 * flags, the watch writes the flag the faulted GPU never will, so that
 * the program's stream does not wait for ever. It sleeps while no slice
 * is outstanding. */
#ifndef MGPU_SLICE_WATCH_H
#define MGPU_SLICE_WATCH_H

#include <stdbool.h>

/* Called after a split launch has put slices on other GPUs: wakes the
 * watch if it sleeps (and starts it the first time). Cheap when it is
 * awake. */
void mgpu_slice_watch_awaiting(void);

/* At exit, after the memory pool has waited for the GPUs (the watch may
 * have to write a faulted GPU's flag for that wait to end): asks the watch
 * to stop and waits up to `seconds` for it, so that it is in no driver
 * call when the driver is torn down. A watch stuck behind a lock that a
 * thread of the program holds is left running rather than waited for.
 * Returns whether it stopped (true when it never started). */
bool mgpu_slice_watch_stop(int seconds);

#endif
