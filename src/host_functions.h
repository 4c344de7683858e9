/* The program's host functions, wrapped so that mgpu knows when the
 * driver's callback thread runs one: functions queued on a stream
 * (cuLaunchHostFunc, cuStreamAddCallback, also while the stream is
 * captured into a graph) and host nodes added to a graph directly
 * (cuGraphAddHostNode, cuGraphAddNode and their SetParams calls). The
 * driver forbids CUDA calls on that thread, and a synchronisation there
 * would wait for the very callback that makes it; a program that calls
 * exit() in a host function runs mgpu's exit work on that thread, which
 * must then not call the driver. The program reading a host node's
 * parameters back gets its own function and data. */
#ifndef MGPU_HOST_FUNCTIONS_H
#define MGPU_HOST_FUNCTIONS_H

#include <stdbool.h>

/* Whether the calling thread is running one of the program's host
 * functions for the driver. */
bool mgpu_on_callback_thread(void);

#endif
