/* The run's GPUs inside the program, and the contexts mgpu loads code into
 * on each: the program's own context on the home device (device 0, the
 * one the program sees as the virtual device), and the primary context of
 * each other device, retained the first time it is needed and kept until
 * the process ends. The run's GPUs are entries (partition/gpu_entries.h):
 * several entries may stand on one device and then share its context. */
#ifndef MGPU_GPU_CONTEXTS_H
#define MGPU_GPU_CONTEXTS_H

#include "base/config.h"
#include "partition/gpu_entries.h"

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* The run's GPU entries: MGPU_ENTRIES (set by mgpu-run) over the
 * driver's devices, or every device once. NULL while the driver is not
 * initialised; a list the driver's devices do not match is said once and
 * replaced by every device once. */
const struct mgpu_gpu_entries *mgpu_run_gpus(void);

/* Fills out[g] with entry g's context: `home` for the entries on device 0,
 * the primary context of its device for the others; *count is the number
 * of entries. Peer access is enabled both ways between every pair of
 * distinct devices. Returns 0, or -1 with a one-line reason in
 * err (also when `home` is not a context of device 0: a program that drives
 * the other GPUs itself is left alone). */
int mgpu_gpu_contexts(CUcontext home, CUcontext out[MGPU_MAX_GPUS], int *count, char *err,
                      size_t errlen);

/* Starts, once, a thread of mgpu's own that makes what mgpu_gpu_contexts
 * makes (the other devices' primary contexts, peer access both ways), so
 * that a module's first launch off the home GPU finds them: called when
 * the program's first module is rewritten for several devices. The thread
 * begins 0.1 s later, so that a program that ends by then never makes
 * them (each costs about 0.1 s to make, and its teardown at exit). Making
 * a context takes about 0.1 s per H200, one device after another (the
 * driver serialises them), and does not hold up the program's work on
 * the home GPU (4 x H200: 2 000 launches of 0.1 ms took as long with
 * three contexts and module loads made meanwhile). Never waits. Not under
 * MGPU_SPLIT=never, where no launch leaves the home GPU. */
void mgpu_gpu_contexts_warm(CUcontext home);
/* Whether the warming thread has finished (made them, or could not). */
bool mgpu_gpu_contexts_warmed(void);
/* At exit: the warming thread, if it is still at it, stops before the
 * next device and is waited for at most wait_ms. */
void mgpu_gpu_contexts_stop_warming(unsigned wait_ms);

/* The checks of mgpu_gpu_contexts without making anything: `home` is a
 * context of device 0 and the driver has the context calls; *count is the
 * number of entries. Returns 0, or -1 with a one-line reason in err. */
int mgpu_gpu_home_check(CUcontext home, int *count, char *err, size_t errlen);

/* The device of context `ctx`, asked with it pushed current. */
CUresult mgpu_context_device(CUcontext ctx, CUdevice *dev);

/* The program's cuCtxEnablePeerAccess and cuCtxDisablePeerAccess (through
 * the driver's `enable` and `disable`), answered as the driver alone would
 * answer them: access mgpu enabled for its split launches is neither
 * reported to the program as already enabled nor switched off by it. */
CUresult mgpu_program_enable_peer(CUcontext peer, unsigned flags,
                                  CUresult (*enable)(CUcontext, unsigned));
CUresult mgpu_program_disable_peer(CUcontext peer, CUresult (*disable)(CUcontext));

#endif
