/* Owns the size-class sub-allocator (see suballoc.h): slabs of one granule
 * each, a bitmap of used slots per slab, a list of slabs with room per
 * class, and a hash from granule address to slab. */
#include "memory/suballoc.h"

#include "partition/placement.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS_MAX (MGPU_GRANULE_SIZE / MGPU_SUBALLOC_MIN)

struct mgpu_slab {
    uint64_t base;
    unsigned cls;
    unsigned used, capacity;
    unsigned hint;                 /* a word of `bits` that may have a free slot */
    struct mgpu_slab *prev, *next; /* in the class's list of slabs with room */
    bool listed;
    uint64_t bits[SLOTS_MAX / 64];
};

static size_t class_size(unsigned cls)
{
    return MGPU_SUBALLOC_MIN << cls;
}

static unsigned class_of(size_t bytes)
{
    unsigned cls = 0;
    while (class_size(cls) < bytes)
        cls++;
    return cls;
}

static size_t slot_of(uint64_t key, size_t capacity)
{
    uint64_t x = key / MGPU_GRANULE_SIZE;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ULL;
    return (size_t)(x >> 17) & (capacity - 1);
}

static struct mgpu_slab *find_slab(const struct mgpu_suballoc *a, uint64_t base)
{
    if (a->table_capacity == 0)
        return NULL;
    for (size_t i = slot_of(base, a->table_capacity);; i = (i + 1) & (a->table_capacity - 1)) {
        if (a->table[i] == NULL)
            return NULL;
        if (a->table[i]->base == base)
            return a->table[i];
    }
}

static void table_insert(struct mgpu_slab **table, size_t capacity, struct mgpu_slab *s)
{
    size_t i = slot_of(s->base, capacity);
    while (table[i] != NULL)
        i = (i + 1) & (capacity - 1);
    table[i] = s;
}

static int table_add(struct mgpu_suballoc *a, struct mgpu_slab *s)
{
    if ((a->slabs + 1) * 2 > a->table_capacity) {
        size_t capacity = a->table_capacity ? a->table_capacity * 2 : 64;
        struct mgpu_slab **bigger = calloc(capacity, sizeof *bigger);
        if (bigger == NULL)
            return -1;
        for (size_t i = 0; i < a->table_capacity; i++)
            if (a->table[i] != NULL)
                table_insert(bigger, capacity, a->table[i]);
        free(a->table);
        a->table = bigger;
        a->table_capacity = capacity;
    }
    table_insert(a->table, a->table_capacity, s);
    a->slabs++;
    return 0;
}

/* Removal from open addressing: the entries after the hole are put back. */
static void table_remove(struct mgpu_suballoc *a, struct mgpu_slab *s)
{
    size_t mask = a->table_capacity - 1, i = slot_of(s->base, a->table_capacity);
    while (a->table[i] != s)
        i = (i + 1) & mask;
    a->table[i] = NULL;
    for (size_t j = (i + 1) & mask; a->table[j] != NULL; j = (j + 1) & mask) {
        struct mgpu_slab *moved = a->table[j];
        a->table[j] = NULL;
        table_insert(a->table, a->table_capacity, moved);
    }
    a->slabs--;
}

static void list_push(struct mgpu_suballoc *a, struct mgpu_slab *s)
{
    s->prev = NULL;
    s->next = a->partial[s->cls];
    if (s->next != NULL)
        s->next->prev = s;
    a->partial[s->cls] = s;
    s->listed = true;
}

static void list_remove(struct mgpu_suballoc *a, struct mgpu_slab *s)
{
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        a->partial[s->cls] = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    s->listed = false;
}

void mgpu_suballoc_init(struct mgpu_suballoc *a, const struct mgpu_granule_source *source)
{
    memset(a, 0, sizeof *a);
    a->source = *source;
}

static struct mgpu_slab *new_slab(struct mgpu_suballoc *a, unsigned cls)
{
    struct mgpu_slab *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    if (a->source.get(a->source.ctx, &s->base) != 0) {
        free(s);
        return NULL;
    }
    s->cls = cls;
    s->capacity = (unsigned)(MGPU_GRANULE_SIZE / class_size(cls));
    if (table_add(a, s) != 0) {
        a->source.put(a->source.ctx, s->base);
        free(s);
        return NULL;
    }
    list_push(a, s);
    return s;
}

int mgpu_suballoc_alloc(struct mgpu_suballoc *a, size_t bytes, uint64_t *address, size_t *rounded)
{
    if (bytes == 0 || bytes > MGPU_SUBALLOC_MAX)
        return -1;
    unsigned cls = class_of(bytes);
    struct mgpu_slab *s = a->partial[cls];
    if (s == NULL && (s = new_slab(a, cls)) == NULL)
        return -1;
    unsigned words = (s->capacity + 63) / 64;
    unsigned w = s->hint;
    while (w < words && s->bits[w] == UINT64_MAX)
        w++;
    if (w == words)
        for (w = 0; s->bits[w] == UINT64_MAX; w++)
            ;
    unsigned bit = (unsigned)__builtin_ctzll(~s->bits[w]);
    unsigned slot = w * 64 + bit;
    s->bits[w] |= 1ULL << bit;
    s->hint = w;
    if (++s->used == s->capacity)
        list_remove(a, s);
    *address = s->base + (uint64_t)slot * class_size(cls);
    *rounded = class_size(cls);
    a->bytes_in_use += *rounded;
    return 0;
}

/* The slab and slot of a live allocation starting at or holding `address`. */
static struct mgpu_slab *locate(const struct mgpu_suballoc *a, uint64_t address, unsigned *slot)
{
    struct mgpu_slab *s = find_slab(a, address & ~(uint64_t)(MGPU_GRANULE_SIZE - 1));
    if (s == NULL)
        return NULL;
    *slot = (unsigned)((address - s->base) / class_size(s->cls));
    if (*slot >= s->capacity || !(s->bits[*slot / 64] & (1ULL << (*slot % 64))))
        return NULL;
    return s;
}

int mgpu_suballoc_free(struct mgpu_suballoc *a, uint64_t address, size_t *rounded)
{
    unsigned slot;
    struct mgpu_slab *s = locate(a, address, &slot);
    if (s == NULL || s->base + (uint64_t)slot * class_size(s->cls) != address)
        return -1;
    s->bits[slot / 64] &= ~(1ULL << (slot % 64));
    s->hint = slot / 64;
    *rounded = class_size(s->cls);
    a->bytes_in_use -= *rounded;
    if (s->used-- == s->capacity)
        list_push(a, s);
    /* An empty slab goes back, unless it is its class's only one with room:
     * allocating and freeing one buffer in a loop must not map and unmap. */
    if (s->used == 0 && (a->partial[s->cls] != s || s->next != NULL)) {
        list_remove(a, s);
        table_remove(a, s);
        a->source.put(a->source.ctx, s->base);
        free(s);
    }
    return 0;
}

bool mgpu_suballoc_find(const struct mgpu_suballoc *a, uint64_t address, uint64_t *start,
                        size_t *size)
{
    unsigned slot;
    struct mgpu_slab *s = locate(a, address, &slot);
    if (s == NULL)
        return false;
    *start = s->base + (uint64_t)slot * class_size(s->cls);
    *size = class_size(s->cls);
    return true;
}

size_t mgpu_suballoc_granules(const struct mgpu_suballoc *a)
{
    return a->slabs;
}

void mgpu_suballoc_destroy(struct mgpu_suballoc *a)
{
    for (size_t i = 0; i < a->table_capacity; i++)
        if (a->table[i] != NULL) {
            a->source.put(a->source.ctx, a->table[i]->base);
            free(a->table[i]);
        }
    free(a->table);
    struct mgpu_granule_source source = a->source;
    memset(a, 0, sizeof *a);
    a->source = source;
}
