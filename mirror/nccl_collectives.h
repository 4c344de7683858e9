/* mgpu's own NCCL collectives for mirrors (issue 18): one communicator over
 * the run's distinct devices, made the first time a collective needs it
 * (ncclCommInitAll; NCCL's own driver calls reach the real driver, as
 * every call from libnccl does under mgpu). Replicas are refreshed by one
 * ncclBroadcast per part of the buffer, from the device that holds the
 * part into every device's copy; privatised reductions are combined by
 * one ncclReduce into the buffer. The collectives run on NCCL streams of
 * their own, forked from the program's stream and joined back to it, like
 * a split launch. On one device the communicator has one rank, and the
 * broadcast copies the buffer into that device's copy.
 *
 * NCCL is loaded at run time (libnccl.so.2); without it, or when the
 * program's home context is not device 0's primary context (NCCL works in
 * primary contexts), replicas are refreshed by device copies instead.
 * Not thread-safe: replicas.c calls it under its lock. */
#ifndef MGPU_NCCL_COLLECTIVES_H
#define MGPU_NCCL_COLLECTIVES_H

#include "base/config.h"

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether the program uses NCCL of its own, whose kernels write its
 * buffers unseen by mgpu: as the audit module saw it bind NCCL's functions
 * (nccl_watch.h) where it watches; else whether libnccl.so.2 was in the
 * process before mgpu loaded it (a later load is then not noticed). */
bool mgpu_nccl_loaded_by_program(void);

/* Whether mgpu may use NCCL at all (MGPU_NCCL); set before the program runs. */
void mgpu_nccl_allow(bool allowed);

/* Whether collectives can go through NCCL. The first call starts making
 * the communicator on a thread of its own (said on stderr with -v, or why
 * not) and, under MGPU_MIRROR=always, waits for it at most 5 s; until it
 * is made, every call answers false at once and the mirrors use device
 * copies. `home` is the context of the program's stream. */
bool mgpu_nccl_ready(CUcontext home);

/* At exit, before anything is torn down: the communicator's thread, if it
 * is still making it, waited for at most wait_ms (a thread left running
 * while the libraries' exit handlers run may call into what they freed). */
void mgpu_nccl_wait_made(unsigned wait_ms);

/* The rank of the device entry `gpu` stands on, and whether it is the
 * first entry on that device (the one whose copy NCCL fills). */
int mgpu_nccl_rank_of(int gpu, bool *first_on_device);
int mgpu_nccl_ranks(void);

/* Fills copy_of_rank[r] (every rank's, none 0) from the pool buffer
 * [start, start + bytes), each part broadcast from the device holding it,
 * forked from and joined to `stream`. Returns CUDA_SUCCESS, or an error
 * with nothing left for `stream` to wait for. */
CUresult mgpu_nccl_broadcast(CUdeviceptr start, size_t bytes, const CUdeviceptr *copy_of_rank,
                             CUstream stream);

/* Combines send_of_rank[r] (count elements each, every rank's; rank 0's
 * is `buffer` itself) into `buffer` on rank 0 with the reduction `code`
 * (ptx_analysis.h: add, min or max of a 32/64-bit integer or float),
 * forked from and joined to `stream`. Returns CUDA_SUCCESS, or an error
 * with nothing left for `stream` to wait for. */
CUresult mgpu_nccl_reduce(CUdeviceptr buffer, const CUdeviceptr *send_of_rank, size_t count,
                          unsigned code, CUstream stream);

/* For the report. */
struct mgpu_nccl_stats {
    int ranks; /* 0: no communicator was made */
    unsigned long collectives;
    unsigned long long bytes;
};
void mgpu_nccl_stats(struct mgpu_nccl_stats *out);

#endif
