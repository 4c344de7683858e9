/* Starting a thread of mgpu's own that nobody joins (detached_thread.c). */
#ifndef MGPU_BASE_DETACHED_THREAD_H
#define MGPU_BASE_DETACHED_THREAD_H

#include <stdbool.h>

/* Runs fn(arg) on a new detached thread; false when none can be made (the
 * caller then does without, or does the work itself). */
bool mgpu_thread_start_detached(void *(*fn)(void *), void *arg);

#endif
