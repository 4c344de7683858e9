/* Owns the record of live device allocations (address to size, an open
 * addressing table with tombstones) and the running totals. */
#include "base/memory_stats.h"

#include <pthread.h>
#include <stdlib.h>

#define EMPTY 0
#define TOMBSTONE 1 /* no allocation starts at address 1 */

struct live_allocation {
    uint64_t ptr;
    size_t bytes;
};

static pthread_mutex_t memory_lock = PTHREAD_MUTEX_INITIALIZER;
static struct live_allocation *table;
static size_t table_capacity, table_used; /* used counts tombstones too */
static struct mgpu_memory_totals totals;

static size_t hash_ptr(uint64_t p)
{
    p ^= p >> 31;
    p *= 0x9e3779b97f4a7c15ULL;
    return (size_t)(p ^ (p >> 29));
}

static int rehash(size_t capacity)
{
    struct live_allocation *t = calloc(capacity, sizeof *t);
    if (t == NULL)
        return -1;
    size_t used = 0;
    for (size_t i = 0; i < table_capacity; i++) {
        if (table[i].ptr <= TOMBSTONE)
            continue;
        size_t h = hash_ptr(table[i].ptr) & (capacity - 1);
        while (t[h].ptr != EMPTY)
            h = (h + 1) & (capacity - 1);
        t[h] = table[i];
        used++;
    }
    free(table);
    table = t;
    table_capacity = capacity;
    table_used = used;
    return 0;
}

/* The slot holding `ptr`, or NULL. */
static struct live_allocation *find(uint64_t ptr)
{
    if (table_capacity == 0)
        return NULL;
    for (size_t h = hash_ptr(ptr) & (table_capacity - 1); table[h].ptr != EMPTY;
         h = (h + 1) & (table_capacity - 1))
        if (table[h].ptr == ptr)
            return &table[h];
    return NULL;
}

void mgpu_memory_note_alloc(uint64_t ptr, size_t bytes)
{
    if (ptr <= TOMBSTONE)
        return;
    pthread_mutex_lock(&memory_lock);
    struct live_allocation *slot = find(ptr);
    if (slot != NULL) {
        /* The driver reused an address whose free mgpu did not see. */
        totals.live_bytes -= slot->bytes;
    } else {
        if ((table_used + 1) * 4 > table_capacity * 3 &&
            rehash(table_capacity ? table_capacity * 2 : 1024) != 0) {
            pthread_mutex_unlock(&memory_lock);
            return;
        }
        size_t h = hash_ptr(ptr) & (table_capacity - 1);
        while (table[h].ptr > TOMBSTONE)
            h = (h + 1) & (table_capacity - 1);
        if (table[h].ptr == EMPTY)
            table_used++;
        slot = &table[h];
        slot->ptr = ptr;
    }
    slot->bytes = bytes;
    totals.allocations++;
    totals.bytes_allocated += bytes;
    totals.live_bytes += bytes;
    if (totals.live_bytes > totals.peak_bytes)
        totals.peak_bytes = totals.live_bytes;
    pthread_mutex_unlock(&memory_lock);
}

void mgpu_memory_note_free(uint64_t ptr)
{
    pthread_mutex_lock(&memory_lock);
    struct live_allocation *slot = ptr > TOMBSTONE ? find(ptr) : NULL;
    if (slot != NULL) {
        totals.live_bytes -= slot->bytes;
        totals.frees++;
        slot->ptr = TOMBSTONE;
    }
    pthread_mutex_unlock(&memory_lock);
}
void mgpu_memory_totals_get(struct mgpu_memory_totals *out)
{
    pthread_mutex_lock(&memory_lock);
    *out = totals;
    pthread_mutex_unlock(&memory_lock);
}
