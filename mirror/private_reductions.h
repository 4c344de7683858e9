/* Privatised reductions (issue 18, item 4): a buffer that a split kernel
 * reaches only through one parameter, with atomics of one operation and
 * type whose results it never reads (ptx_analysis.h), is updated by each
 * GPU's slice in a private copy of its own, and the copies are combined
 * into the buffer after the slices. The home slice updates the buffer
 * itself; a slice whose GPU got no copy does too (atomics on the buffer
 * stay right). A copy starts from the operation's identity for add (set
 * in the slice's own stream, before its launch) and from the buffer's
 * contents for min and max (refreshed like a replica before the fork:
 * min and max do not mind seeing a value twice). The copies are those of
 * replicas.h, so they share its memory budget and its release on free.
 *
 * The combine runs in the program's stream after the joins: copies of
 * one device are folded by mgpu's own kernel (NCCL refuses one device
 * twice); then, with NCCL ready over several devices and one copy on each
 * other device, one ncclReduce into the buffer on the home GPU; else
 * mgpu's kernel folds the rest into the buffer, reading the other GPUs'
 * copies over peer access. Integer results are exact; float sums may
 * differ in the last bits, as float atomics do from run to run.
 *
 * The combine kernels are PTX made here, loaded once in the home context;
 * mgpu_private_reductions_prepare loads them where the program loads a
 * module that has reductions, since a module load waits for every stream
 * (also one held in a host function) and a launch must not. */
#ifndef MGPU_PRIVATE_REDUCTIONS_H
#define MGPU_PRIVATE_REDUCTIONS_H

#include "base/config.h"

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

struct mgpu_private_buffer {
    CUdeviceptr start; /* the pool buffer */
    size_t bytes;
    unsigned reduction;              /* MGPU_REDUCTION(op, type) */
    CUdeviceptr copy[MGPU_MAX_GPUS]; /* entry g's private copy's base; 0: none */
};

/* Loads the combine kernels in `home` (current or not); true when they
 * are there. Thread-safe; the first call decides. */
bool mgpu_private_reductions_prepare(CUcontext home);

/* Whether the combine kernels are loaded in `home`, loading them if never
 * tried (a library loaded with no context current). */
bool mgpu_private_reductions_ready(CUcontext home);

/* Before slice `gpu`'s launch, in its stream (its context current): its
 * copy set to the operation's identity where that is not done already. */
CUresult mgpu_private_reduction_start(const struct mgpu_private_buffer *b, int gpu,
                                      CUstream stream);

/* After the slices' join, in the program's stream (the home context
 * current): every copy combined into the buffer. */
CUresult mgpu_private_reduction_combine(const struct mgpu_private_buffer *b, CUstream stream);

/* For the report. */
struct mgpu_private_reduction_stats {
    unsigned long combines;     /* privatised buffers combined after a launch */
    unsigned long kernel_folds; /* copies folded by mgpu's kernel */
    unsigned long nccl_reduces; /* combines that ended in one ncclReduce */
};
void mgpu_private_reduction_stats(struct mgpu_private_reduction_stats *out);

#endif
