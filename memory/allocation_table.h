/* The program's live allocations in the pool: one record per allocation,
 * found by its start (frees, pointer queries) or by any address inside a
 * large one (pointer queries, copies). Small allocations are found inside
 * through the sub-allocator, then here by their start. No driver in it.
 * Not thread-safe: the pool holds its lock. */
#ifndef MGPU_ALLOCATION_TABLE_H
#define MGPU_ALLOCATION_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Physical memory behind part of a large allocation: one handle on one GPU. */
struct mgpu_chunk {
    uint64_t offset, bytes; /* within the allocation's span */
    int gpu;
    unsigned long long handle; /* CUmemGenericAllocationHandle */
};

struct mgpu_allocation {
    uint64_t start;
    size_t bytes;  /* as the program asked */
    uint64_t span; /* address space it takes: whole granules, or its slot */
    bool small;    /* a slot of the sub-allocator, on a shared granule */
    bool shared;   /* mapped by another process (cuIpcGetMemHandle): never migrated */
    void *context; /* the CUcontext current when it was made */
    void *mempool; /* the CUmemoryPool of a stream-ordered one, else NULL */
    unsigned long long id;
    size_t nchunks;
    struct mgpu_chunk *chunks;
};

struct mgpu_allocation_table {
    struct mgpu_allocation **slots; /* open addressing by start */
    size_t capacity, count;
    struct mgpu_allocation **large; /* large ones sorted by start */
    size_t nlarge, large_capacity;
};

/* Returns 0, or -1 when memory for the table runs out (nothing added). */
int mgpu_allocation_table_add(struct mgpu_allocation_table *t, struct mgpu_allocation *a);

/* The record that starts at `start`, taken out of the table, or NULL. */
struct mgpu_allocation *mgpu_allocation_table_remove(struct mgpu_allocation_table *t,
                                                     uint64_t start);

struct mgpu_allocation *mgpu_allocation_table_at(const struct mgpu_allocation_table *t,
                                                 uint64_t start);

/* The large allocation whose span holds `address`, or NULL. */
struct mgpu_allocation *mgpu_allocation_table_large_holding(const struct mgpu_allocation_table *t,
                                                            uint64_t address);

/* Calls fn on every record (the table must not change meanwhile). */
void mgpu_allocation_table_each(const struct mgpu_allocation_table *t,
                                void (*fn)(struct mgpu_allocation *a, void *ctx), void *ctx);

void mgpu_allocation_table_destroy(struct mgpu_allocation_table *t);

#endif
