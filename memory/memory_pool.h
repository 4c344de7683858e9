/* The distributed memory pool: device memory the program allocates gets
 * one virtual address, mapped on every selected GPU, with its physical
 * 2 MiB granules placed by a policy (partition/placement.h). Built on the
 * driver's virtual memory management: one reserved address range
 * (cuMemAddressReserve), physical memory per GPU (cuMemCreate, cuMemMap)
 * and access for every GPU (cuMemSetAccess). Large allocations take whole
 * granules; small ones share granules on the home GPU through the
 * sub-allocator. Thread-safe. */
#ifndef MGPU_MEMORY_POOL_H
#define MGPU_MEMORY_POOL_H

#include "base/config.h"
#include "base/context_wait.h"
#include "partition/placement.h"

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the runtime decides for the pool before the program runs. */
struct mgpu_pool_settings {
    bool off;            /* allocations go to the driver */
    const char *why_off; /* then, for the report ("MGPU_MEMORY=driver") */
    enum mgpu_placement placement;
    size_t spread_min;     /* smaller buffers start on the home GPU; 0: none */
    void (*started)(void); /* called once the pool holds memory to give back */
};
void mgpu_pool_configure(const struct mgpu_pool_settings *settings);

/* From now on every new buffer starts on the home GPU, whatever its size:
 * for when nothing will move buffers any more (sched/placement_follow.c
 * stops once a second thread launches kernels), so that a buffer spread
 * at its allocation would stay spread under every whole launch. */
void mgpu_pool_new_buffers_home(void);

/* Whether an allocation made with `ctx` current goes to the pool. The first
 * call starts the pool over the run's GPUs (gpu_contexts.h: each entry its
 * own part of every buffer, on the device it stands on); it stays off (and
 * everything passes through to the driver) when the settings say so, with
 * one GPU, when a device lacks virtual memory management or a pair of
 * devices lacks peer access (said once on stderr), or for a context of a
 * device other than device 0. */
bool mgpu_pool_serves(CUcontext ctx);

/* Whether `address` lies in the pool's reserved range. Lock-free and cheap,
 * for the copy hooks' fast path. */
bool mgpu_pool_holds(CUdeviceptr address);

/* A new allocation of `bytes` (> 0) for the program; `mempool` is the
 * CUmemoryPool of a stream-ordered allocation, else NULL. Returns the
 * driver's codes: CUDA_ERROR_OUT_OF_MEMORY when the GPUs together cannot
 * hold it (nothing is then kept). */
CUresult mgpu_pool_alloc(CUdeviceptr *address, size_t bytes, CUcontext ctx, CUmemoryPool mempool);

/* Frees the allocation that starts at `address` once the GPUs' work before
 * it is done. `freed_error` is what the driver answers for a pointer it
 * never allocated; it is returned for such a pointer, a freed one or one
 * inside an allocation. */
CUresult mgpu_pool_free(CUdeviceptr address, CUresult freed_error);

/* The same, in stream order: the memory is reused only after the work that
 * `stream` holds at this call has finished. */
CUresult mgpu_pool_free_async(CUdeviceptr address, CUstream stream, CUresult freed_error);

/* The program's allocation that holds `address`. */
struct mgpu_pool_block {
    CUdeviceptr start;
    size_t bytes;
    CUcontext context;
    CUmemoryPool mempool;
    unsigned long long id; /* unique over the run, never reused */
    bool shared;           /* mapped by another process (mgpu_pool_share) */
};
bool mgpu_pool_find(CUdeviceptr address, struct mgpu_pool_block *out);

/* Whether [address, address + bytes) starts inside one of the program's
 * allocations and runs past its end. The driver refuses a copy or set
 * that leaves one of its own allocations (CUDA_ERROR_INVALID_VALUE); past
 * the end of a pool allocation lies mapped memory (the next allocation,
 * the rest of its granule) that the driver would write or read. False
 * outside the pool without taking a lock. */
bool mgpu_pool_overruns(CUdeviceptr address, size_t bytes);

/* Splits [address, address + bytes) into runs of one owning GPU (offsets
 * relative to `address`). Returns the number of runs (more than `max` when
 * they did not fit), or 0 when the range is not inside one allocation. */
size_t mgpu_pool_runs(CUdeviceptr address, size_t bytes, struct mgpu_owner_run *runs, size_t max);

/* How many bytes of [address, address + bytes) each GPU of the pool holds,
 * into held[] (zeroed first). Returns how many GPUs hold some of it: 0 when
 * the range is not inside one allocation. For the questions the scheduler
 * and the BLAS split ask of a buffer (who holds most, does one GPU hold it
 * all), without a bound on its runs. */
int mgpu_pool_bytes_by_gpu(CUdeviceptr address, size_t bytes, size_t held[MGPU_MAX_GPUS]);

/* The GPUs of the pool (the run's entries) and the primary context of the
 * device each stands on, retained now where the pool had not needed it
 * yet; 0 while it is off (or a context cannot be had). */
int mgpu_pool_gpus(CUcontext contexts[MGPU_MAX_GPUS]);

/* The home GPU's primary context, without making the others'; NULL while
 * the pool is off. */
CUcontext mgpu_pool_home_context(void);

/* Moves the granules of [address, address + bytes) of one large
 * allocation to `gpu` (copy, then remap; the address does not change).
 * Call it between kernels: it waits for the home context to be idle.
 * Returns CUDA_ERROR_INVALID_VALUE for a range outside one allocation. */
CUresult mgpu_pool_migrate(CUdeviceptr address, size_t bytes, int gpu);

/* Waits at most bound_ms for the home context to be idle, as a migration
 * does first: so that a move's own time can be told from the program's
 * queued work, and so that a move made inside a launch is put off rather
 * than wait for work that waits for the program's thread
 * (base/context_wait.h). */
enum mgpu_context_wait mgpu_pool_wait_for_home_within(unsigned bound_ms);

/* Lays the large allocation that starts at `start` out again as the
 * pool's placement has it (after migrations moved its granules), in the
 * same way. */
CUresult mgpu_pool_spread(CUdeviceptr start);

/* The runs of one owner the large allocation that starts at `start` would
 * have as the pool's placement lays it out (what mgpu_pool_spread makes),
 * at most `max`; returns how many there are, 0 for no such allocation. */
size_t mgpu_pool_spread_runs(CUdeviceptr start, struct mgpu_owner_run *runs, size_t max);

/* As mgpu_pool_bytes_by_gpu, for [address, address + bytes) of a large
 * allocation laid out as the pool spreads it (mgpu_pool_spread), wherever
 * its pages lie now: what a spread would leave each GPU. Returns 0 for a
 * range outside one large allocation. */
int mgpu_pool_spread_bytes_by_gpu(CUdeviceptr address, size_t bytes, size_t held[MGPU_MAX_GPUS]);

/* The program's large allocations (at most `max` into out); returns how
 * many there are. */
size_t mgpu_pool_large_buffers(struct mgpu_pool_block *out, size_t max);

/* The physical memory under the pool allocation holding `address`, for
 * another process to map (cuIpcGetMemHandle, memory/pool_ipc.c): each
 * piece one physical allocation (exportable as a file descriptor) at
 * `offset` from out->map_base, the whole laid out over out->map_bytes; the
 * allocation itself starts at out->start (out->bytes long, pool id
 * out->id). A small allocation shares its granule with its neighbours,
 * which the other process then maps too, as the driver's own IPC of a
 * sub-allocated buffer does. From then on the allocation is never
 * migrated: the other process maps these pages. Returns the number of
 * pieces, 0 when the address is in no allocation, the pieces are more
 * than `max`, or the driver made no shareable memory. With pieces NULL
 * only counts them (up to `max`, and marks the allocation shared). */
struct mgpu_pool_piece {
    uint64_t offset, bytes;
    CUmemGenericAllocationHandle handle;
    int gpu;
};
struct mgpu_pool_shared {
    uint64_t start, bytes, map_base, map_bytes;
    unsigned long long id;
};
size_t mgpu_pool_share(CUdeviceptr address, struct mgpu_pool_shared *out,
                       struct mgpu_pool_piece *pieces, size_t max);

/* The owner of the byte at `address`, or -1 outside the pool. */
int mgpu_pool_owner(CUdeviceptr address);

/* Which GPU owns each 2 MiB granule of the pool's reserved range, for
 * probes that ask on the GPU where an address lies (issue 20). */
struct mgpu_pool_layout {
    uint64_t base;          /* the range's first address; 0 while the pool is off */
    size_t granules;        /* granules in the range */
    unsigned granule_shift; /* log2 of the granule size */
    uint64_t version;       /* mgpu_pool_layout_version() when it was read */
};
#define MGPU_POOL_NO_OWNER 0xff
/* Changes whenever a granule is mapped, unmapped or moved. Lock-free. */
uint64_t mgpu_pool_layout_version(void);
/* Fills *layout and, when `owners` holds `max` >= the granules, each
 * granule's owner (a GPU entry, or MGPU_POOL_NO_OWNER). Returns the number
 * of granules (0 while the pool is off). */
size_t mgpu_pool_owner_map(struct mgpu_pool_layout *layout, uint8_t *owners, size_t max);

struct mgpu_pool_usage {
    bool active;
    const char *placement;
    char why_off[256]; /* when not active, after a start was tried */
    int gpus;
    size_t now[MGPU_MAX_GPUS], peak[MGPU_MAX_GPUS]; /* physical bytes held */
    size_t peak_total;
    unsigned long migrations;
};
void mgpu_pool_usage(struct mgpu_pool_usage *out);

/* Gives every granule and the address range back (at exit). */
void mgpu_pool_release_all(void);

#endif
