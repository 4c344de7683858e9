/* Small device allocations packed into shared 2 MiB granules: one size
 * class per power of two from 256 bytes (cudaMalloc's alignment) to 1 MiB,
 * each granule cut into slots of one class. Larger requests take whole
 * granules elsewhere. Thousands of small allocations then cost a few
 * granules, not thousands. Granules come from a source the caller gives
 * (the pool on GPUs, a simulated map in tests); the allocator only does the
 * bookkeeping. Not thread-safe: the caller holds its lock. */
#ifndef MGPU_SUBALLOC_H
#define MGPU_SUBALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MGPU_SUBALLOC_MIN ((size_t)256)
#define MGPU_SUBALLOC_MAX ((size_t)1 << 20)
#define MGPU_SUBALLOC_CLASSES 13 /* 256 B .. 1 MiB */

struct mgpu_granule_source {
    /* One more granule: a 2 MiB-aligned address, mapped. 0, or -1 when the
     * GPUs are out of memory. */
    int (*get)(void *ctx, uint64_t *address);
    void (*put)(void *ctx, uint64_t address);
    void *ctx;
};

struct mgpu_slab;

struct mgpu_suballoc {
    struct mgpu_granule_source source;
    struct mgpu_slab *partial[MGPU_SUBALLOC_CLASSES]; /* slabs with a free slot */
    struct mgpu_slab **table;                         /* by granule address */
    size_t table_capacity, slabs;
    size_t bytes_in_use; /* rounded up to the classes */
};

void mgpu_suballoc_init(struct mgpu_suballoc *a, const struct mgpu_granule_source *source);

/* `bytes` (1 .. MGPU_SUBALLOC_MAX) at a 256-byte aligned address; *rounded
 * is the slot's size. Returns 0, or -1 when no granule can be had (nothing
 * is then held for this request). */
int mgpu_suballoc_alloc(struct mgpu_suballoc *a, size_t bytes, uint64_t *address, size_t *rounded);

/* Frees the allocation that starts at `address`; *rounded gets its slot
 * size. Returns -1, changing nothing, when no live allocation starts
 * there (never allocated, or already freed). */
int mgpu_suballoc_free(struct mgpu_suballoc *a, uint64_t address, size_t *rounded);

/* The live allocation holding `address`: its start and slot size. */
bool mgpu_suballoc_find(const struct mgpu_suballoc *a, uint64_t address, uint64_t *start,
                        size_t *size);

/* Granules held now. */
size_t mgpu_suballoc_granules(const struct mgpu_suballoc *a);

/* Gives every granule back. */
void mgpu_suballoc_destroy(struct mgpu_suballoc *a);

#endif
