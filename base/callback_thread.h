/* Whether the calling thread runs one of the program's host functions for
 * the driver. The hooks of src/hooks/host_function_hooks.c wrap them so
 * that mgpu knows: functions queued on a stream
 * (cuLaunchHostFunc, cuStreamAddCallback, also while the stream is
 * captured into a graph) and host nodes added to a graph directly
 * (cuGraphAddHostNode, cuGraphAddNode and their SetParams calls). The
 * driver forbids CUDA calls on that thread, and a synchronisation there
 * would wait for the very callback that makes it; a program that calls
 * exit() in a host function runs mgpu's exit work on that thread, which
 * must then not call the driver. The program reading a host node's
 * parameters back gets its own function and data. */
#ifndef MGPU_CALLBACK_THREAD_H
#define MGPU_CALLBACK_THREAD_H

#include <stdbool.h>

/* Whether the calling thread is running one of the program's host
 * functions for the driver. */
bool mgpu_on_callback_thread(void);

/* Around the program's function, in the wrapper that runs it. */
void mgpu_callback_enter(void);
void mgpu_callback_leave(void);

#endif
