/* The flag watch: one thread that, while a split launch's sequence flags
 * are awaited, looks every millisecond for a GPU that has faulted and so
 * will never write its flag, and writes the flag in its place
 * (mgpu_slice_streams_release_faulted). Without it, a fault in one GPU's
 * slice would leave the program's stream waiting for ever; with it, the
 * program's next synchronising call returns the fault (slice_errors.h).
 * It sleeps while nothing is awaited. */
#ifndef MGPU_FLAG_WATCH_H
#define MGPU_FLAG_WATCH_H

/* Called after a launch has issued flags: wakes the watch if it sleeps
 * (and starts it the first time). Cheap when it is awake. */
void mgpu_flag_watch_awaiting(void);

#endif
