/* Owns the table of live allocations (see allocation_table.h): a hash by
 * start with linear probing and backward-shift deletion, and a sorted array
 * of the large ones for lookups inside them. */
#include "memory/allocation_table.h"

#include "base/pointer_hash.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t start, size_t capacity)
{
    return mgpu_pointer_hash((const void *)(uintptr_t)start) & (capacity - 1);
}

static void place(struct mgpu_allocation **slots, size_t capacity, struct mgpu_allocation *a)
{
    size_t i = slot_of(a->start, capacity);
    while (slots[i] != NULL)
        i = (i + 1) & (capacity - 1);
    slots[i] = a;
}

static int grow_hash(struct mgpu_allocation_table *t)
{
    size_t capacity = t->capacity ? 2 * t->capacity : 1024;
    struct mgpu_allocation **slots = calloc(capacity, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < t->capacity; i++)
        if (t->slots[i] != NULL)
            place(slots, capacity, t->slots[i]);
    free(t->slots);
    t->slots = slots;
    t->capacity = capacity;
    return 0;
}

/* Index in `large` of the first record starting at or after `address`. */
static size_t large_index(const struct mgpu_allocation_table *t, uint64_t address)
{
    size_t lo = 0, hi = t->nlarge;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->large[mid]->start < address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int mgpu_allocation_table_add(struct mgpu_allocation_table *t, struct mgpu_allocation *a)
{
    if ((t->count + 1) * 2 > t->capacity && grow_hash(t) != 0)
        return -1;
    if (!a->small) {
        if (t->nlarge == t->large_capacity) {
            size_t capacity = t->large_capacity ? 2 * t->large_capacity : 64;
            struct mgpu_allocation **grown = realloc(t->large, capacity * sizeof *grown);
            if (grown == NULL)
                return -1;
            t->large = grown;
            t->large_capacity = capacity;
        }
        size_t i = large_index(t, a->start);
        memmove(&t->large[i + 1], &t->large[i], (t->nlarge - i) * sizeof *t->large);
        t->large[i] = a;
        t->nlarge++;
    }
    place(t->slots, t->capacity, a);
    t->count++;
    return 0;
}

struct mgpu_allocation *mgpu_allocation_table_at(const struct mgpu_allocation_table *t,
                                                 uint64_t start)
{
    if (t->capacity == 0)
        return NULL;
    for (size_t i = slot_of(start, t->capacity); t->slots[i] != NULL;
         i = (i + 1) & (t->capacity - 1))
        if (t->slots[i]->start == start)
            return t->slots[i];
    return NULL;
}

struct mgpu_allocation *mgpu_allocation_table_remove(struct mgpu_allocation_table *t,
                                                     uint64_t start)
{
    if (t->capacity == 0)
        return NULL;
    size_t mask = t->capacity - 1, i = slot_of(start, t->capacity);
    while (t->slots[i] != NULL && t->slots[i]->start != start)
        i = (i + 1) & mask;
    struct mgpu_allocation *a = t->slots[i];
    if (a == NULL)
        return NULL;
    /* Backward-shift deletion keeps every probe chain unbroken. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; t->slots[j] != NULL; j = (j + 1) & mask) {
        size_t home = slot_of(t->slots[j]->start, t->capacity);
        bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            t->slots[hole] = t->slots[j];
            hole = j;
        }
    }
    t->slots[hole] = NULL;
    t->count--;
    if (!a->small) {
        size_t k = large_index(t, start);
        if (k < t->nlarge && t->large[k] == a) {
            memmove(&t->large[k], &t->large[k + 1], (t->nlarge - k - 1) * sizeof *t->large);
            t->nlarge--;
        }
    }
    return a;
}

struct mgpu_allocation *mgpu_allocation_table_large_holding(const struct mgpu_allocation_table *t,
                                                            uint64_t address)
{
    size_t i = large_index(t, address + 1);
    if (i == 0)
        return NULL;
    struct mgpu_allocation *a = t->large[i - 1];
    return address < a->start + a->span ? a : NULL;
}

void mgpu_allocation_table_each(const struct mgpu_allocation_table *t,
                                void (*fn)(struct mgpu_allocation *a, void *ctx), void *ctx)
{
    for (size_t i = 0; i < t->capacity; i++)
        if (t->slots[i] != NULL)
            fn(t->slots[i], ctx);
}

void mgpu_allocation_table_destroy(struct mgpu_allocation_table *t)
{
    free(t->slots);
    free(t->large);
    memset(t, 0, sizeof *t);
}
