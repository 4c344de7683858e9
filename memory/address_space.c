/* Owns the free list of the pool's virtual range (see address_space.h). */
#include "memory/address_space.h"

#include "partition/placement.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t round_to_granules(uint64_t bytes)
{
    return (bytes + MGPU_GRANULE_SIZE - 1) / MGPU_GRANULE_SIZE * MGPU_GRANULE_SIZE;
}

int mgpu_address_space_init(struct mgpu_address_space *s, uint64_t base, uint64_t bytes)
{
    memset(s, 0, sizeof *s);
    if (bytes == 0 || base % MGPU_GRANULE_SIZE || bytes % MGPU_GRANULE_SIZE)
        return -1;
    s->free = malloc(16 * sizeof *s->free);
    if (s->free == NULL)
        return -1;
    s->capacity = 16;
    s->base = base;
    s->bytes = bytes;
    s->free[0] = (struct mgpu_address_extent){base, bytes};
    s->nfree = 1;
    return 0;
}

int mgpu_address_space_take(struct mgpu_address_space *s, uint64_t bytes, uint64_t *start)
{
    if (bytes == 0 || bytes > s->bytes)
        return -1;
    bytes = round_to_granules(bytes);
    for (size_t i = 0; i < s->nfree; i++) {
        struct mgpu_address_extent *e = &s->free[i];
        if (e->bytes < bytes)
            continue;
        *start = e->start;
        e->start += bytes;
        e->bytes -= bytes;
        if (e->bytes == 0) {
            memmove(e, e + 1, (s->nfree - i - 1) * sizeof *e);
            s->nfree--;
        }
        return 0;
    }
    return -1;
}

int mgpu_address_space_give(struct mgpu_address_space *s, uint64_t start, uint64_t bytes)
{
    bytes = round_to_granules(bytes);
    if (bytes == 0 || start % MGPU_GRANULE_SIZE || start < s->base ||
        start + bytes > s->base + s->bytes)
        return -1;
    size_t i = 0; /* the first free stretch after `start` */
    while (i < s->nfree && s->free[i].start < start)
        i++;
    if (i > 0 && s->free[i - 1].start + s->free[i - 1].bytes > start)
        return -1;
    if (i < s->nfree && start + bytes > s->free[i].start)
        return -1;
    bool joins_before = i > 0 && s->free[i - 1].start + s->free[i - 1].bytes == start;
    bool joins_after = i < s->nfree && start + bytes == s->free[i].start;
    if (joins_before && joins_after) {
        s->free[i - 1].bytes += bytes + s->free[i].bytes;
        memmove(&s->free[i], &s->free[i + 1], (s->nfree - i - 1) * sizeof *s->free);
        s->nfree--;
    } else if (joins_before) {
        s->free[i - 1].bytes += bytes;
    } else if (joins_after) {
        s->free[i].start = start;
        s->free[i].bytes += bytes;
    } else {
        if (s->nfree == s->capacity) {
            struct mgpu_address_extent *grown = realloc(s->free, 2 * s->capacity * sizeof *s->free);
            if (grown == NULL)
                return -1;
            s->free = grown;
            s->capacity *= 2;
        }
        memmove(&s->free[i + 1], &s->free[i], (s->nfree - i) * sizeof *s->free);
        s->free[i] = (struct mgpu_address_extent){start, bytes};
        s->nfree++;
    }
    return 0;
}

uint64_t mgpu_address_space_free_bytes(const struct mgpu_address_space *s)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < s->nfree; i++)
        sum += s->free[i].bytes;
    return sum;
}

void mgpu_address_space_destroy(struct mgpu_address_space *s)
{
    free(s->free);
    memset(s, 0, sizeof *s);
}
