/* Read-only replicas of pool buffers on the run's GPUs (issue 18), with
 * MGPU_MIRROR=always: each GPU of a split launch reads a buffer the launch
 * only reads from a copy in its own memory, refreshed from the buffer (the
 * truth, always valid) when the program may have written it since. The
 * bookkeeping is replica_table.h's; this file makes the copies, refreshes
 * them in stream order and releases them. Every way the program can write
 * device memory must tell it (mirror/README.md, "Coherence").
 *
 * Each GPU entry keeps its own copy (entries of one device too), so that on
 * one GPU listed several times every rule is exercised. Refreshes are
 * device copies queued in the program's stream before the launch's fork;
 * a read from another stream first waits for the refresh (an event).
 * Thread-safe. */
#ifndef MGPU_REPLICAS_H
#define MGPU_REPLICAS_H

#include "base/config.h"

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Set by the runtime before the program runs. */
struct mgpu_replica_settings {
    bool on;             /* MGPU_MIRROR always or auto */
    bool copy_per_entry; /* always: each GPU entry keeps its own copies; else the
                          * first entry of each device keeps them for all */
    bool nccl;           /* refreshes and combines may use NCCL (MGPU_NCCL) */
    /* The memory copies may take on each device (MGPU_MIRROR_BUDGET): these
     * bytes, or with 0 this fraction of what the device has free when it
     * first holds a copy; shared by the entries on it that keep copies. */
    size_t budget_bytes;
    double budget_fraction;
};
void mgpu_replicas_configure(const struct mgpu_replica_settings *settings);

/* Whether mirrors are on now (they go off for good when the program turns
 * out to use NCCL), and whether the run asked for them. */
bool mgpu_replicas_on(void);
bool mgpu_replicas_configured(void);

/* Whether any replica exists, so that writes must be told: a relaxed load,
 * for every write hook's fast path. */
bool mgpu_replicas_exist(void);

/* Makes NCCL's communicator now, if mirrors will use it and it is not made
 * yet (`home`: the program's context), so that a launch can be timed
 * without it. */
void mgpu_replicas_prepare(CUcontext home);

/* One launch's reads, between begin and end (which hold the replicas'
 * lock): GPU `gpu`'s (context `ctx`) address for `pointer`, a pointer into
 * [start, start + bytes): a pool buffer, or a range of one (pool id `id`
 * either way), read
 * by the launch in `stream` (of the home context `home`): its fresh copy,
 * made and refreshed as needed, plus the pointer's offset; 0 when it gets
 * none (out of budget or memory: it reads the buffer itself). */
void mgpu_replicas_begin(void);
CUdeviceptr mgpu_replicas_read(CUdeviceptr start, size_t bytes, unsigned long long id,
                               CUdeviceptr pointer, int gpu, CUcontext ctx, CUcontext home,
                               CUstream stream);
void mgpu_replicas_end(CUstream stream);

/* Between begin and end too: GPU gpu's copy of the buffer as a private
 * copy for a privatised reduction (private_reductions.h) of the launch:
 * its base address, or 0 when it gets none. With `from_contents` it is
 * refreshed like a read (min and max start from the buffer's contents);
 * else its contents are left for the caller to set. Either way it is
 * stale from then on. `reduction` names the operation for the report. */
CUdeviceptr mgpu_replicas_private(CUdeviceptr start, size_t bytes, unsigned long long id, int gpu,
                                  CUcontext ctx, CUcontext home, CUstream stream,
                                  bool from_contents, unsigned reduction);

/* Coherence: the program may have written [dst, dst + bytes); or somewhere
 * mgpu cannot tell; or freed the buffer [start, start + bytes), whose
 * replicas, of the whole or of ranges of it, go (in stream order on
 * `stream`, or at once with stream NULL and the GPUs idle). */
void mgpu_replicas_written(CUdeviceptr dst, size_t bytes);
void mgpu_replicas_written_anywhere(void);
void mgpu_replicas_freed(CUdeviceptr start, size_t bytes, CUstream stream, bool async);

/* Writes by a library whose driver calls bypass mgpu's hooks (libnccl,
 * MGPU_PASSTHROUGH): they may change anything, except while mgpu itself
 * is inside the library's call (its own NCCL refresh, between
 * mgpu_own_writes_begin and _end on that thread, own_writes.h). */
void mgpu_replicas_foreign_write(void);

/* At exit, after every GPU's work is done: every copy freed. */
void mgpu_replicas_release_all(void);

/* For the report: replicas made, refreshes and their bytes. */
struct mgpu_replica_stats {
    unsigned long buffers, copies, refreshes, stale_marks, privatised;
    unsigned long evictions; /* copies given up to make room within the budget */
    unsigned long long refreshed_bytes;
};
void mgpu_replicas_stats(struct mgpu_replica_stats *out);

/* Where every copy lies now, [start, end) each, at most `max` of them;
 * returns how many there are (for probes that tell a replica's address,
 * issue 20). The version changes whenever a copy is made or freed. */
size_t mgpu_replicas_copies(uint64_t (*ranges)[2], size_t max);
unsigned long mgpu_replicas_copies_version(void);

/* One line per buffer replicated now (size, copies, refreshes), at most
 * `max`, into lines; returns how many. */
size_t mgpu_replicas_describe(char (*lines)[160], size_t max);

#endif
