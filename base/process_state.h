/* What mgpu must know of the process around the program's CUDA calls to
 * end safely: whether it is a child made by fork() after the parent
 * initialised the driver. The driver is unusable there (every call answers
 * CUDA_ERROR_NOT_INITIALIZED), and mgpu's worker and watch threads are the
 * parent's, gone, with whatever locks they held. Every hook then answers
 * as the driver does, before it touches any of mgpu's state
 * (MGPU_HOOK_ENTRY), and the exit does nothing: the parent's memory is the
 * parent's. And how many of the program's threads that called the driver
 * are still alive, so that the end of the process unmaps nothing a thread
 * may still be copying from. (The other fact, whether a thread runs one
 * of the program's host functions, is callback_thread.h's.) */
#ifndef MGPU_PROCESS_STATE_H
#define MGPU_PROCESS_STATE_H

#include <stdatomic.h>
#include <stdbool.h>

/* Set in the child of fork() when the parent had initialised the driver;
 * read by every hook (hook_table.h), hence a plain atomic. */
extern atomic_bool mgpu_forked_child;

/* Registers the fork handler; once, when the runtime starts. */
void mgpu_process_state_start(void);

/* The program's cuInit succeeded. */
void mgpu_process_driver_initialised(void);

/* Every hook's entry (MGPU_HOOK_ENTRY): the calling thread is one of the
 * program's that use the driver, counted until it ends. Cheap after the
 * first call on a thread. */
extern _Thread_local bool mgpu_thread_counted;
void mgpu_process_count_thread(void);
static inline void mgpu_process_thread_calls_driver(void)
{
    if (!mgpu_thread_counted)
        mgpu_process_count_thread();
}

/* A thread of mgpu's own (a GPU's worker, which calls libraries whose
 * driver calls reach the hooks): never counted. */
void mgpu_process_thread_is_mgpus(void);

/* The program's threads counted and still alive, the calling one left
 * out. */
int mgpu_process_other_driver_threads(void);

#endif
