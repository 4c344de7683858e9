/* The slice watch: one thread that, while slices run on other GPUs, looks
 * every millisecond for a slice stream that has failed
 * (mgpu_slice_streams_watch). Its error becomes the answer of the
 * program's next synchronisation (slice_errors.h), and, with sequence
 * flags, the watch writes the flag the faulted GPU never will, so that
 * the program's stream does not wait for ever. It sleeps while no slice
 * is outstanding. */
#ifndef MGPU_SLICE_WATCH_H
#define MGPU_SLICE_WATCH_H

/* Called after a split launch has put slices on other GPUs: wakes the
 * watch if it sleeps (and starts it the first time). Cheap when it is
 * awake. */
void mgpu_slice_watch_awaiting(void);

#endif
