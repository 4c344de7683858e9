/* The bookkeeping of read-only replicas of pool buffers (issue 18), with no
 * driver in it: which buffers have replicas, where each holder's copy is,
 * whether it holds the buffer's current contents, and the memory replicas
 * take on each holder against its budget. The copies themselves (memory,
 * refreshes in stream order) are the caller's.
 *
 * A holder is what keeps one copy: a device, or under MGPU_MIRROR=always on
 * repeated GPUs an entry. A replica is a cache, never the truth: every way
 * the program can change a buffer marks its copies stale (mirror/README.md,
 * "Coherence"), and a stale copy is refreshed before the next read that
 * would use it. A replica covers one of the program's allocations, or one
 * range of one (the operand a split GEMM reads, where a framework's
 * allocator keeps several tensors in one allocation). Replicas never
 * overlap (one that would is not made), so the table is kept sorted by
 * start and a written range finds its replicas by binary search.
 *
 * Not thread-safe: the caller holds its lock. */
#ifndef MGPU_REPLICA_TABLE_H
#define MGPU_REPLICA_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MGPU_REPLICA_MAX_HOLDERS 64

struct mgpu_replica {
    uint64_t start; /* the buffer: one of the program's allocations */
    size_t bytes;
    uint64_t copy[MGPU_REPLICA_MAX_HOLDERS]; /* holder h's copy; 0: none */
    bool fresh[MGPU_REPLICA_MAX_HOLDERS];    /* holds the buffer's current contents */
    uint64_t last_read;                      /* the launch tick that last read it */
    unsigned long stale_marks;               /* writes that made it stale */
    unsigned long refreshes;                 /* copies refreshed, all holders */
    unsigned long long refreshed_bytes;
    unsigned long privatised; /* launches whose reductions its copies took */
    void *owner;              /* the caller's, beside the record */
};

struct mgpu_replica_table {
    struct mgpu_replica **by_start; /* sorted by start */
    size_t count, capacity;
    int nholders;
    size_t budget[MGPU_REPLICA_MAX_HOLDERS]; /* bytes of copies allowed per holder */
    size_t used[MGPU_REPLICA_MAX_HOLDERS];
    uint64_t tick; /* of the launch being prepared */
};

/* An empty table for `nholders` holders (1 to MGPU_REPLICA_MAX_HOLDERS),
 * each allowed `budget` bytes of copies. Returns 0, or -1 for a bad count. */
int mgpu_replica_table_init(struct mgpu_replica_table *t, int nholders, size_t budget);

/* Frees the records (the caller has released the copies they name). */
void mgpu_replica_table_destroy(struct mgpu_replica_table *t);

/* The replica of the buffer that starts at `start`, or NULL. */
struct mgpu_replica *mgpu_replica_table_find(const struct mgpu_replica_table *t, uint64_t start);

/* The first replica that overlaps [start, start + bytes), or NULL. */
struct mgpu_replica *mgpu_replica_table_first_in(const struct mgpu_replica_table *t,
                                                 uint64_t start, size_t bytes);

/* A new replica of [start, start + bytes), with no copy yet. Returns it, or
 * NULL when memory runs out or the range overlaps a buffer already there
 * (the caller took a freed buffer's replica out first). */
struct mgpu_replica *mgpu_replica_table_add(struct mgpu_replica_table *t, uint64_t start,
                                            size_t bytes);

/* The buffer at `start` is freed: its replica, taken out of the table for
 * the caller to release its copies and free; NULL when it had none. */
struct mgpu_replica *mgpu_replica_table_remove(struct mgpu_replica_table *t, uint64_t start);

/* Coherence. The program may have written [start, start + bytes): every
 * copy of every buffer the range touches is stale. Returns how many
 * replicas that made stale. */
size_t mgpu_replica_table_written(struct mgpu_replica_table *t, uint64_t start, size_t bytes);

/* A write mgpu cannot place (a kernel it could not analyse, a graph, a
 * store through a pointer of unknown origin): every copy is stale. */
size_t mgpu_replica_table_written_anywhere(struct mgpu_replica_table *t);

/* A launch is being prepared: later reads are of this launch, and the
 * replicas it reads cannot be evicted to make room for its others. */
void mgpu_replica_table_begin_launch(struct mgpu_replica_table *t);

/* The launch being prepared reads replica r. */
void mgpu_replica_table_read(struct mgpu_replica_table *t, struct mgpu_replica *r);

/* A victim of make_room: holder h's copy of r, taken out of the table's
 * accounting; the caller frees it once the GPU work reading it is done. */
struct mgpu_replica_victim {
    struct mgpu_replica *replica;
    int holder;
    uint64_t copy;
};

/* Room for `bytes` more on holder h: the copies there of the replicas read
 * least recently (not by the launch being prepared) are given up, oldest
 * first, into victims (at most max). Returns how many, or -1 when the
 * budget cannot hold `bytes` even so (nothing given up then). */
int mgpu_replica_table_make_room(struct mgpu_replica_table *t, int holder, size_t bytes,
                                 struct mgpu_replica_victim *victims, int max);

/* Holder h keeps a copy of r at `copy`, not yet filled (stale). Returns 0,
 * or -1 when h already has one or it would pass the budget (make room
 * first). */
int mgpu_replica_table_place(struct mgpu_replica_table *t, struct mgpu_replica *r, int holder,
                             uint64_t copy);

/* Holder h's copy of r was refreshed (in stream order, before any read
 * that uses it): fresh until the next write. */
void mgpu_replica_table_refreshed(struct mgpu_replica_table *t, struct mgpu_replica *r, int holder);

#endif
