/* Owns the replicas' copies (replicas.h): their memory on each GPU, their
 * refreshes queued in the program's streams, the event that orders a read
 * from another stream after a refresh, and their release when the buffer
 * is freed. The bookkeeping is replica_table.c's, under this file's lock.
 * All driver calls go to the real driver. */
#include "mirror/replicas.h"

#include "partition/gpu_contexts.h"
#include "partition/gpu_entries.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "mirror/nccl_collectives.h"
#include "mirror/nccl_watch.h"
#include "mirror/own_writes.h"
#include "ptx/ptx_analysis.h"
#include "base/real_driver.h"
#include "mirror/replica_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* What replicas.c keeps beside each table record. */
struct replica_extra {
    unsigned long long id;                   /* the pool's id of the buffer */
    CUcontext home;                          /* where the buffer lives and `ready` was made */
    CUcontext holder_context[MGPU_MAX_GPUS]; /* of each copy */
    CUevent ready;                           /* after its last refresh */
    CUstream ready_stream;                   /* that refresh's stream; NULL: none yet */
    bool refreshed_now;                      /* in the launch being prepared */
    bool waited_now;
    bool privatised_now;
    unsigned reduction;          /* of the last launch that privatised it; 0: none yet */
    bool by_nccl[MGPU_MAX_GPUS]; /* copies left for NCCL in this launch (first entry per device) */
};

/* Copies of a freed buffer, released once the stream that freed it gets
 * past the free. */
struct pending_release {
    CUevent done;
    CUdeviceptr copy[MGPU_MAX_GPUS];
    CUcontext context[MGPU_MAX_GPUS];
};

#define MAX_READ_PER_LAUNCH 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_replica_table table;
static bool table_ready;
static bool budget_known[MGPU_MAX_GPUS];
static atomic_size_t live;
static struct mgpu_replica *read_now[MAX_READ_PER_LAUNCH];
static int nread_now;
static struct pending_release *pending;
static size_t npending, pending_capacity;
static struct mgpu_replica_stats gone; /* of replicas already removed */

static atomic_bool mirrors_on;
static bool mirrors_configured, copy_per_entry, nccl_allowed;
static size_t budget_bytes;
static double budget_fraction = 0.5;
static unsigned long evictions;

void mgpu_replicas_configure(const struct mgpu_replica_settings *s)
{
    mirrors_configured = s->on;
    copy_per_entry = s->copy_per_entry;
    nccl_allowed = s->nccl;
    budget_bytes = s->budget_bytes;
    budget_fraction = s->budget_fraction;
    mgpu_nccl_allow(s->nccl);
    atomic_store(&mirrors_on, s->on);
}

bool mgpu_replicas_configured(void)
{
    return mirrors_configured;
}

bool mgpu_replicas_on(void)
{
    return atomic_load_explicit(&mirrors_on, memory_order_relaxed);
}

/* NCCL's kernels write the program's buffers through the driver without
 * passing mgpu's hooks: with NCCL in the program no write is sure to be
 * seen, so mirrors go off for the rest of the run. Asked before each new
 * replica, and where the audit module watches (nccl_watch.h) before every
 * read of one, since a program may load NCCL at any time. */
static bool program_uses_nccl(void)
{
    if (!mgpu_nccl_loaded_by_program())
        return false;
    if (atomic_exchange(&mirrors_on, false))
        mgpu_warn("mirrors off: the program uses NCCL, whose writes to its buffers mgpu cannot "
                  "see");
    return true;
}

bool mgpu_replicas_exist(void)
{
    return atomic_load_explicit(&live, memory_order_relaxed) > 0;
}

static struct replica_extra *extra_of(const struct mgpu_replica *r)
{
    return r->owner;
}

/* With `ctx` current, for a driver call on a copy. */
static bool push(CUcontext ctx)
{
    return mgpu_drv_push_context(ctx) == CUDA_SUCCESS;
}

/* One more whenever a copy is made or freed (mgpu_replicas_copies). */
static atomic_ulong copies_version = 1;

static void free_copy(CUdeviceptr copy, CUcontext ctx)
{
    atomic_fetch_add(&copies_version, 1);
    bool pushed = push(ctx);
    mgpu_drv.cuMemFree(copy);
    if (pushed)
        mgpu_drv_pop_context();
}

static void reclaim_pending(void)
{
    size_t kept = 0;
    for (size_t i = 0; i < npending; i++) {
        struct pending_release *p = &pending[i];
        if (mgpu_drv.cuEventQuery(p->done) == CUDA_ERROR_NOT_READY) {
            pending[kept++] = *p;
            continue;
        }
        for (int h = 0; h < MGPU_MAX_GPUS; h++)
            if (p->copy[h] != 0)
                free_copy(p->copy[h], p->context[h]);
        mgpu_drv.cuEventDestroy(p->done);
    }
    npending = kept;
}

/* Replica r's figures added to s. */
static void add_figures(struct mgpu_replica_stats *s, const struct mgpu_replica *r)
{
    s->buffers++;
    s->refreshes += r->refreshes;
    s->stale_marks += r->stale_marks;
    s->refreshed_bytes += r->refreshed_bytes;
    s->privatised += r->privatised;
    for (int h = 0; h < table.nholders; h++)
        s->copies += r->copy[h] != 0;
}

/* A replica taken out of the table: its copies freed at once (the GPUs
 * are idle for it), or once `stream` gets past this point. */
static void release(struct mgpu_replica *r, CUstream stream, bool async)
{
    struct replica_extra *x = extra_of(r);
    add_figures(&gone, r);
    struct pending_release p = {0};
    bool deferred = false;
    if (async && x->home != NULL && push(x->home)) {
        deferred = mgpu_drv.cuEventCreate(&p.done, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS &&
                   mgpu_drv.cuEventRecord(p.done, stream) == CUDA_SUCCESS;
        mgpu_drv_pop_context();
        if (deferred && npending == pending_capacity) {
            size_t capacity = pending_capacity ? 2 * pending_capacity : 16;
            struct pending_release *grown = realloc(pending, capacity * sizeof *grown);
            if (grown != NULL) {
                pending = grown;
                pending_capacity = capacity;
            } else {
                deferred = false;
            }
        }
        if (!deferred && p.done != NULL) {
            /* Cannot wait in stream order: wait for the stream now. */
            mgpu_drv.cuEventSynchronize(p.done);
            mgpu_drv.cuEventDestroy(p.done);
        }
    }
    for (int h = 0; h < table.nholders; h++) {
        if (r->copy[h] == 0)
            continue;
        if (deferred) {
            p.copy[h] = r->copy[h];
            p.context[h] = x->holder_context[h];
        } else {
            free_copy(r->copy[h], x->holder_context[h]);
        }
    }
    if (deferred)
        pending[npending++] = p;
    if (x->ready != NULL)
        mgpu_drv.cuEventDestroy(x->ready);
    free(x);
    free(r);
    atomic_fetch_sub(&live, 1);
}

static bool ensure_table(void)
{
    if (table_ready)
        return true;
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (e == NULL || mgpu_replica_table_init(&table, e->count, 0) != 0)
        return false;
    table_ready = true;
    return true;
}

/* The budget of the holder's device (MGPU_MIRROR_BUDGET: bytes, or a
 * fraction of what it has free when it first holds a copy), shared equally
 * by the entries that stand on that device where each keeps copies of its
 * own. */
static void learn_budget(int gpu, CUcontext ctx)
{
    if (budget_known[gpu])
        return;
    budget_known[gpu] = true;
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    int sharing = 0;
    for (int i = 0; e != NULL && i < e->count; i++)
        sharing += e->device[i] == e->device[gpu] && (copy_per_entry || i == gpu);
    size_t device_budget = budget_bytes;
    if (device_budget == 0) {
        size_t free_bytes = 0, total = 0;
        if (push(ctx)) {
            mgpu_drv.cuMemGetInfo(&free_bytes, &total);
            mgpu_drv_pop_context();
        }
        device_budget = (size_t)((double)free_bytes * budget_fraction);
    }
    table.budget[gpu] = device_budget / (size_t)(sharing > 0 ? sharing : 1);
}

void mgpu_replicas_prepare(CUcontext home)
{
    pthread_mutex_lock(&lock);
    bool allowed = nccl_allowed;
    pthread_mutex_unlock(&lock);
    /* Not under the lock: the communicator's thread goes through the
     * hooks, which may take it. */
    if (allowed)
        mgpu_nccl_ready(home);
}

void mgpu_replicas_begin(void)
{
    pthread_mutex_lock(&lock);
    if (npending > 0)
        reclaim_pending();
    if (table_ready)
        mgpu_replica_table_begin_launch(&table);
    nread_now = 0;
}

/* The replica of the buffer, made when it has none; NULL when it cannot be. */
static struct mgpu_replica *replica_of(CUdeviceptr start, size_t bytes, unsigned long long id,
                                       CUcontext home, CUstream stream)
{
    struct mgpu_replica *r = mgpu_replica_table_find(&table, start);
    if (r != NULL && extra_of(r)->id != id) {
        /* A buffer freed behind mgpu's back and another at its address. */
        mgpu_replica_table_remove(&table, start);
        release(r, stream, true);
        r = NULL;
    }
    if (r != NULL)
        return r;
    if (!mgpu_replicas_on() || program_uses_nccl())
        return NULL;
    struct replica_extra *x = calloc(1, sizeof *x);
    if (x == NULL || (r = mgpu_replica_table_add(&table, start, bytes)) == NULL) {
        free(x);
        return NULL;
    }
    x->id = id;
    x->home = home;
    r->owner = x;
    atomic_fetch_add(&live, 1);
    if (mgpu_drv.cuEventCreate(&x->ready, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
        x->ready = NULL;
        mgpu_replica_table_remove(&table, start);
        release(r, stream, false);
        return NULL;
    }
    mgpu_debug("mirror: a replica of the %zu bytes at 0x%llx", bytes, (unsigned long long)start);
    return r;
}

/* Every context that may still use replica r's copies: the home one
 * (refreshes and combines are queued in the program's streams) and each
 * holder's (its slices, NCCL's streams), each waited for once. */
static void wait_for_users(const struct mgpu_replica *r)
{
    const struct replica_extra *x = extra_of(r);
    CUcontext waited[MGPU_MAX_GPUS + 1];
    int nwaited = 0;
    for (int h = -1; h < table.nholders && h < MGPU_MAX_GPUS; h++) {
        CUcontext ctx = h < 0 ? x->home : x->holder_context[h];
        bool seen = ctx == NULL;
        for (int i = 0; i < nwaited && !seen; i++)
            seen = waited[i] == ctx;
        if (seen)
            continue;
        waited[nwaited++] = ctx;
        mgpu_drv_synchronize_context(ctx);
    }
}

/* Holder gpu's copies given up to make room (the replicas read least
 * recently, never one the launch being prepared reads), freed once the
 * GPU work queued before now, which may still read them, is done. An
 * eviction waits for the GPUs: within the budget none happens. */
static void evict(struct mgpu_replica_victim *victims, int n)
{
    for (int v = 0; v < n; v++) {
        const struct replica_extra *x = extra_of(victims[v].replica);
        wait_for_users(victims[v].replica);
        free_copy(victims[v].copy, x->holder_context[victims[v].holder]);
        mgpu_debug("mirror: the copy of the %zu-byte buffer at 0x%llx on GPU %d evicted",
                   victims[v].replica->bytes, (unsigned long long)victims[v].replica->start,
                   victims[v].holder);
        evictions++;
    }
}

#define VICTIMS_MAX 16

/* GPU gpu's copy of r, made when it has none, evicting others to make
 * room within the budget. */
static bool copy_on(struct mgpu_replica *r, int gpu, CUcontext ctx)
{
    if (r->copy[gpu] != 0)
        return true;
    learn_budget(gpu, ctx);
    struct mgpu_replica_victim victims[VICTIMS_MAX];
    int nvictims = mgpu_replica_table_make_room(&table, gpu, r->bytes, victims, VICTIMS_MAX);
    if (nvictims < 0)
        return false; /* even so it does not fit: the launch reads the buffer itself */
    evict(victims, nvictims);
    CUdeviceptr copy = 0;
    if (!push(ctx))
        return false;
    CUresult made = mgpu_drv.cuMemAlloc(&copy, r->bytes);
    mgpu_drv_pop_context();
    if (made != CUDA_SUCCESS)
        return false;
    if (mgpu_replica_table_place(&table, r, gpu, copy) != 0) {
        free_copy(copy, ctx);
        return false;
    }
    extra_of(r)->holder_context[gpu] = ctx;
    atomic_fetch_add(&copies_version, 1);
    return true;
}

/* Holder gpu's copy of r refreshed from the buffer by a device copy in
 * `stream`. */
static CUresult device_copy(const struct mgpu_replica *r, int gpu, CUstream stream)
{
    const struct replica_extra *x = extra_of(r);
    CUcontext ctx = x->holder_context[gpu];
    /* Across devices through the peer copy where the driver has it; in one
     * address space a plain device copy reaches the other GPU too. */
    struct mgpu_launch_timer timer = {.active = false};
    if (mgpu_timing_traced())
        mgpu_timing_begin_own(&timer, "mirror: refresh by device copy", stream, gpu);
    CUresult copied;
    if (ctx == x->home || mgpu_drv.cuMemcpyPeerAsync == NULL)
        copied = mgpu_drv.cuMemcpyDtoDAsync(r->copy[gpu], r->start, r->bytes, stream);
    else
        copied = mgpu_drv.cuMemcpyPeerAsync(r->copy[gpu], ctx, r->start, x->home, r->bytes, stream);
    if (timer.active)
        mgpu_timing_end(&timer, stream, copied);
    return copied;
}

/* Replica r listed as used by the launch being prepared, and ordered
 * after its last refresh in another stream; false when it cannot be. */
static bool use_in_launch(struct mgpu_replica *r, CUstream stream)
{
    struct replica_extra *x = extra_of(r);
    bool listed = false;
    for (int i = 0; i < nread_now && !listed; i++)
        listed = read_now[i] == r;
    if (!listed) {
        if (nread_now == MAX_READ_PER_LAUNCH)
            return false;
        read_now[nread_now++] = r;
        x->refreshed_now = false;
        x->waited_now = false;
        x->privatised_now = false;
        mgpu_replica_table_read(&table, r);
    }
    /* A refresh made in another stream, read or overwritten here, must be
     * done first. */
    if (x->ready_stream != NULL && x->ready_stream != stream && !x->waited_now) {
        if (mgpu_drv.cuStreamWaitEvent(stream, x->ready, 0) != CUDA_SUCCESS)
            return false;
        x->waited_now = true;
    }
    return true;
}

/* Holder gpu's copy of r made fresh in stream order: by NCCL in
 * mgpu_replicas_end for the first entry of each device, else now. */
static bool refresh(struct mgpu_replica *r, int gpu, CUcontext home, CUstream stream)
{
    struct replica_extra *x = extra_of(r);
    if (r->fresh[gpu])
        return true;
    bool first_on_device = false;
    if (nccl_allowed && mgpu_nccl_ready(home))
        mgpu_nccl_rank_of(gpu, &first_on_device);
    if (first_on_device)
        x->by_nccl[gpu] = true; /* in mgpu_replicas_end, all devices at once */
    else if (device_copy(r, gpu, stream) != CUDA_SUCCESS)
        return false;
    mgpu_replica_table_refreshed(&table, r, gpu);
    x->refreshed_now = true;
    return true;
}

/* The replica of the buffer with a copy on gpu, ready for the launch. */
static struct mgpu_replica *replica_for_launch(CUdeviceptr start, size_t bytes,
                                               unsigned long long id, int gpu, CUcontext ctx,
                                               CUcontext home, CUstream stream)
{
    if (gpu < 0 || gpu >= MGPU_MAX_GPUS || !ensure_table() || gpu >= table.nholders ||
        (mgpu_nccl_bound_by_program() && program_uses_nccl()))
        return NULL;
    struct mgpu_replica *r = replica_of(start, bytes, id, home, stream);
    if (r == NULL || !copy_on(r, gpu, ctx) || !use_in_launch(r, stream))
        return NULL;
    return r;
}

CUdeviceptr mgpu_replicas_read(CUdeviceptr start, size_t bytes, unsigned long long id,
                               CUdeviceptr pointer, int gpu, CUcontext ctx, CUcontext home,
                               CUstream stream)
{
    if (pointer < start || pointer - start >= bytes)
        return 0;
    struct mgpu_replica *r = replica_for_launch(start, bytes, id, gpu, ctx, home, stream);
    if (r == NULL || !refresh(r, gpu, home, stream))
        return 0;
    return r->copy[gpu] + (pointer - start);
}

CUdeviceptr mgpu_replicas_private(CUdeviceptr start, size_t bytes, unsigned long long id, int gpu,
                                  CUcontext ctx, CUcontext home, CUstream stream,
                                  bool from_contents, unsigned reduction)
{
    struct mgpu_replica *r = replica_for_launch(start, bytes, id, gpu, ctx, home, stream);
    if (r == NULL || (from_contents && !refresh(r, gpu, home, stream)))
        return 0;
    struct replica_extra *x = extra_of(r);
    /* Stale now for reads; a refresh by NCCL in mgpu_replicas_end still
     * fills it first. */
    r->fresh[gpu] = false;
    x->reduction = reduction;
    if (!x->privatised_now) {
        x->privatised_now = true;
        r->privatised++;
    }
    return r->copy[gpu];
}

/* Copies for NCCL: every device's first entry must hold one, or none is
 * filled that way. */
static void refresh_by_nccl(struct mgpu_replica *r, CUstream stream)
{
    struct replica_extra *x = extra_of(r);
    bool any = false;
    for (int g = 0; g < table.nholders; g++)
        any |= x->by_nccl[g];
    if (!any)
        return;
    CUdeviceptr copy_of_rank[MGPU_MAX_GPUS] = {0};
    bool complete = true;
    for (int g = 0; g < table.nholders; g++) {
        bool first;
        int rank = mgpu_nccl_rank_of(g, &first);
        if (first)
            copy_of_rank[rank] = r->copy[g];
    }
    for (int k = 0; k < mgpu_nccl_ranks(); k++)
        complete &= copy_of_rank[k] != 0;
    if (!complete || mgpu_nccl_broadcast(r->start, r->bytes, copy_of_rank, stream) != CUDA_SUCCESS)
        for (int g = 0; g < table.nholders; g++)
            if (x->by_nccl[g] && device_copy(r, g, stream) != CUDA_SUCCESS) {
                /* Read from the buffer itself would be right, but the
                 * slice already points at the copy: wait for it all. */
                mgpu_drv.cuStreamSynchronize(stream);
                mgpu_drv.cuMemcpyDtoD(r->copy[g], r->start, r->bytes);
            }
    for (int g = 0; g < table.nholders; g++)
        x->by_nccl[g] = false;
}

void mgpu_replicas_end(CUstream stream)
{
    for (int i = 0; i < nread_now; i++)
        refresh_by_nccl(read_now[i], stream);
    for (int i = 0; i < nread_now; i++) {
        struct replica_extra *x = extra_of(read_now[i]);
        if (x->refreshed_now && mgpu_drv.cuEventRecord(x->ready, stream) == CUDA_SUCCESS)
            x->ready_stream = stream;
    }
    nread_now = 0;
    pthread_mutex_unlock(&lock);
}

void mgpu_replicas_written(CUdeviceptr dst, size_t bytes)
{
    if (!mgpu_replicas_exist())
        return;
    pthread_mutex_lock(&lock);
    mgpu_replica_table_written(&table, dst, bytes);
    pthread_mutex_unlock(&lock);
}

void mgpu_replicas_written_anywhere(void)
{
    if (!mgpu_replicas_exist())
        return;
    pthread_mutex_lock(&lock);
    mgpu_replica_table_written_anywhere(&table);
    pthread_mutex_unlock(&lock);
}

void mgpu_replicas_foreign_write(void)
{
    if (!mgpu_own_writes_active())
        mgpu_replicas_written_anywhere();
}

void mgpu_replicas_freed(CUdeviceptr start, size_t bytes, CUstream stream, bool async)
{
    if (!mgpu_replicas_exist())
        return;
    pthread_mutex_lock(&lock);
    struct mgpu_replica *r;
    while ((r = mgpu_replica_table_first_in(&table, start, bytes > 0 ? bytes : 1)) != NULL) {
        mgpu_replica_table_remove(&table, r->start);
        release(r, stream, async);
    }
    if (npending > 0)
        reclaim_pending();
    pthread_mutex_unlock(&lock);
}

void mgpu_replicas_release_all(void)
{
    pthread_mutex_lock(&lock);
    while (table.count > 0) {
        struct mgpu_replica *r = mgpu_replica_table_remove(&table, table.by_start[0]->start);
        release(r, NULL, false);
    }
    for (size_t i = 0; i < npending; i++)
        mgpu_drv.cuEventSynchronize(pending[i].done);
    reclaim_pending();
    pthread_mutex_unlock(&lock);
}

static void format_size(char *out, size_t len, unsigned long long bytes)
{
    if (bytes < 1024)
        snprintf(out, len, "%llu bytes", bytes);
    else if (bytes < 1024 * 1024)
        snprintf(out, len, "%.2f KiB", (double)bytes / 1024.0);
    else
        snprintf(out, len, "%.2f MiB", (double)bytes / (1024.0 * 1024.0));
}

size_t mgpu_replicas_describe(char (*lines)[160], size_t max)
{
    pthread_mutex_lock(&lock);
    size_t n = 0;
    for (size_t i = 0; i < table.count && n < max; i++) {
        const struct mgpu_replica *r = table.by_start[i];
        int copies = 0;
        for (int h = 0; h < table.nholders; h++)
            copies += r->copy[h] != 0;
        char size[32], refreshed[32], privatised[64] = "";
        format_size(size, sizeof size, r->bytes);
        format_size(refreshed, sizeof refreshed, r->refreshed_bytes);
        const struct replica_extra *x = extra_of(r);
        if (r->privatised > 0)
            snprintf(privatised, sizeof privatised, ", privatised in %lu launches (%s)",
                     r->privatised, mgpu_reduction_text(x->reduction));
        snprintf(lines[n++], 160,
                 "buffer of %s: copies on %d GPUs, %lu refreshes (%s), %lu stale marks%s", size,
                 copies, r->refreshes, refreshed, r->stale_marks, privatised);
    }
    pthread_mutex_unlock(&lock);
    return n;
}

void mgpu_replicas_stats(struct mgpu_replica_stats *out)
{
    pthread_mutex_lock(&lock);
    *out = gone;
    for (size_t i = 0; i < table.count; i++)
        add_figures(out, table.by_start[i]);
    out->evictions = evictions;
    pthread_mutex_unlock(&lock);
}

unsigned long mgpu_replicas_copies_version(void)
{
    return atomic_load(&copies_version);
}

size_t mgpu_replicas_copies(uint64_t (*ranges)[2], size_t max)
{
    pthread_mutex_lock(&lock);
    size_t n = 0;
    for (size_t i = 0; table_ready && i < table.count; i++) {
        const struct mgpu_replica *r = table.by_start[i];
        for (int h = 0; h < table.nholders; h++) {
            if (r->copy[h] == 0)
                continue;
            if (n < max) {
                ranges[n][0] = r->copy[h];
                ranges[n][1] = r->copy[h] + r->bytes;
            }
            n++;
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}
