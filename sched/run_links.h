/* The run's cost model of its links (partition/link_model.h), measured once,
 * the first time a decision needs it (partition/link_measure.h: a few
 * milliseconds per pair of devices), and shown with -v. Shared by the
 * placement that follows the kernels and the split's estimate. */
#ifndef MGPU_RUN_LINKS_H
#define MGPU_RUN_LINKS_H

#include "partition/link_model.h"

/* The model of the run's GPU entries, or NULL when it cannot be had (the
 * run's GPUs not known yet, a measurement that failed: said once with -v)
 * or not yet (mgpu_run_links_pending): the first call starts the
 * measurement on a thread of its own (unless mgpu_run_links_start has);
 * under MGPU_SPLIT=auto no call waits for it; otherwise (tests) the first
 * waits at most a second.
 * Thread-safe; the model does not change once made. */
const struct mgpu_link_model *mgpu_run_links(void);

/* Whether the model is still to come, under MGPU_SPLIT=auto: not measured
 * yet, nor failed, and the program not ending. A decision that needs it
 * waits (runs the launch as the program would) rather than decide
 * without it. */
bool mgpu_run_links_pending(void);

/* Starts the measurement on its thread, if it has not started, without
 * waiting: a launch that will ask for the model soon. */
void mgpu_run_links_start(void);

/* At exit, before anything is torn down: the measurement, if its thread is
 * still at it, told to give up between two copies and waited for at most
 * wait_ms (a thread left running while the libraries' exit handlers run
 * may call into what they have freed: under ThreadSanitizer, the stress
 * client's runs crashed so). */
void mgpu_run_links_stop(unsigned wait_ms);

/* Frees the memory the measurement kept (it was made inside a launch,
 * where freeing would wait for the program's queued work): at exit, after
 * mgpu_run_links_stop; left to the driver while the measurement runs. */
void mgpu_run_links_release(void);

#endif
