/* The free stretches of the pool's reserved virtual range: first fit,
 * granule-aligned, neighbours merged on return. No driver in it, so tests
 * check it without a GPU. Not thread-safe: the pool holds its lock. */
#ifndef MGPU_ADDRESS_SPACE_H
#define MGPU_ADDRESS_SPACE_H

#include <stddef.h>
#include <stdint.h>

struct mgpu_address_extent {
    uint64_t start, bytes;
};

struct mgpu_address_space {
    uint64_t base, bytes;
    struct mgpu_address_extent *free; /* sorted by start, never touching */
    size_t nfree, capacity;
};

/* [base, base + bytes), both multiples of MGPU_GRANULE_SIZE. Returns 0 or -1. */
int mgpu_address_space_init(struct mgpu_address_space *s, uint64_t base, uint64_t bytes);

/* `bytes` (rounded up to granules) from the lowest stretch that holds them.
 * Returns 0, or -1 when no stretch is large enough. */
int mgpu_address_space_take(struct mgpu_address_space *s, uint64_t bytes, uint64_t *start);

/* Gives back what take returned. Returns -1 when it overlaps free space or
 * lies outside the range (nothing changes then). */
int mgpu_address_space_give(struct mgpu_address_space *s, uint64_t start, uint64_t bytes);

uint64_t mgpu_address_space_free_bytes(const struct mgpu_address_space *s);

void mgpu_address_space_destroy(struct mgpu_address_space *s);

#endif
