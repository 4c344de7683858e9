/* Errors and printf output of the slices that ran on the other GPUs. A
 * fault in a slice on GPU g poisons GPU g's context, not (until the driver
 * notices it and fails every context of the process) the home context the
 * program synchronises. So after each of the program's synchronising calls
 * and blocking copies mgpu asks the other GPUs' slice streams, and returns
 * a slice's error as the driver would have returned the kernel's: from
 * that call and every later one. (The slice watch may find the fault
 * first; launches keep succeeding, as they do after a fault on one GPU
 * until the program synchronises.) Device printf output is flushed by a
 * synchronisation of the context that printed it, so after a kernel that
 * prints was split, the program's synchronisations also synchronise the
 * other GPUs' contexts. */
#ifndef MGPU_SLICE_ERRORS_H
#define MGPU_SLICE_ERRORS_H

#include "partition/grid_split.h"
#include "modules/program_modules.h"

#include <cuda.h>
#include <stdbool.h>

/* A split launch put work on the GPUs of `slices`, whose contexts are
 * contexts[0 .. ngpus-1]; `prints` when its kernel calls printf. */
void mgpu_slice_errors_launched(const CUcontext *contexts, int ngpus, bool prints,
                                const struct mgpu_grid_slice *slices, int nslices);

/* A slice stream of GPU `gpu` failed with `error`, found by the slice
 * watch between the program's synchronisations, or a slice could not be
 * queued there: the error becomes the sticky answer of the next
 * synchronising call at once. */
void mgpu_slice_errors_found(int gpu, CUresult error);

/* After one of the program's synchronising calls returned `result`: that
 * result, or the first error of a slice, which stays the answer of every
 * later call. `waited` says the call waited for work (a synchronise, not
 * a query); only then is printf output flushed. Costs one relaxed load
 * while nothing was split. */
CUresult mgpu_slice_errors_check(CUresult result, bool waited);

#endif
