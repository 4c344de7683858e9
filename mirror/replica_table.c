/* Owns the bookkeeping of replicas described in replica_table.h: the table
 * sorted by buffer start, staleness on writes, per-holder budgets and the
 * least-recently-read eviction. No driver calls. */
#include "mirror/replica_table.h"

#include <stdlib.h>
#include <string.h>

int mgpu_replica_table_init(struct mgpu_replica_table *t, int nholders, size_t budget)
{
    memset(t, 0, sizeof *t);
    if (nholders < 1 || nholders > MGPU_REPLICA_MAX_HOLDERS)
        return -1;
    t->nholders = nholders;
    for (int h = 0; h < nholders; h++)
        t->budget[h] = budget;
    return 0;
}

void mgpu_replica_table_destroy(struct mgpu_replica_table *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->by_start[i]);
    free(t->by_start);
    memset(t, 0, sizeof *t);
}

/* The index of the first replica whose buffer ends after `address`. */
static size_t first_ending_after(const struct mgpu_replica_table *t, uint64_t address)
{
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct mgpu_replica *r = t->by_start[mid];
        if (r->start + r->bytes <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct mgpu_replica *mgpu_replica_table_find(const struct mgpu_replica_table *t, uint64_t start)
{
    size_t i = first_ending_after(t, start);
    return i < t->count && t->by_start[i]->start == start ? t->by_start[i] : NULL;
}

struct mgpu_replica *mgpu_replica_table_first_in(const struct mgpu_replica_table *t, uint64_t start,
                                                 size_t bytes)
{
    size_t i = first_ending_after(t, start);
    return i < t->count && t->by_start[i]->start < start + bytes ? t->by_start[i] : NULL;
}

struct mgpu_replica *mgpu_replica_table_add(struct mgpu_replica_table *t, uint64_t start,
                                            size_t bytes)
{
    if (bytes == 0 || start + bytes < start)
        return NULL;
    size_t i = first_ending_after(t, start);
    if (i < t->count && t->by_start[i]->start < start + bytes)
        return NULL; /* overlaps a buffer already there */
    if (t->count == t->capacity) {
        size_t capacity = t->capacity ? t->capacity * 2 : 16;
        struct mgpu_replica **bigger = realloc(t->by_start, capacity * sizeof *bigger);
        if (bigger == NULL)
            return NULL;
        t->by_start = bigger;
        t->capacity = capacity;
    }
    struct mgpu_replica *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->start = start;
    r->bytes = bytes;
    memmove(&t->by_start[i + 1], &t->by_start[i], (t->count - i) * sizeof *t->by_start);
    t->by_start[i] = r;
    t->count++;
    return r;
}

static void forget_copies(struct mgpu_replica_table *t, const struct mgpu_replica *r)
{
    for (int h = 0; h < t->nholders; h++)
        if (r->copy[h] != 0)
            t->used[h] -= r->bytes;
}

struct mgpu_replica *mgpu_replica_table_remove(struct mgpu_replica_table *t, uint64_t start)
{
    size_t i = first_ending_after(t, start);
    if (i == t->count || t->by_start[i]->start != start)
        return NULL;
    struct mgpu_replica *r = t->by_start[i];
    memmove(&t->by_start[i], &t->by_start[i + 1], (t->count - i - 1) * sizeof *t->by_start);
    t->count--;
    forget_copies(t, r);
    return r;
}

static bool make_stale(struct mgpu_replica_table *t, struct mgpu_replica *r)
{
    bool any = false;
    for (int h = 0; h < t->nholders; h++) {
        any |= r->fresh[h];
        r->fresh[h] = false;
    }
    if (any)
        r->stale_marks++;
    return any;
}

size_t mgpu_replica_table_written(struct mgpu_replica_table *t, uint64_t start, size_t bytes)
{
    if (bytes == 0)
        return 0;
    uint64_t end = start + bytes < start ? UINT64_MAX : start + bytes;
    size_t made = 0;
    for (size_t i = first_ending_after(t, start); i < t->count && t->by_start[i]->start < end; i++)
        made += make_stale(t, t->by_start[i]);
    return made;
}

size_t mgpu_replica_table_written_anywhere(struct mgpu_replica_table *t)
{
    size_t made = 0;
    for (size_t i = 0; i < t->count; i++)
        made += make_stale(t, t->by_start[i]);
    return made;
}

void mgpu_replica_table_begin_launch(struct mgpu_replica_table *t)
{
    t->tick++;
}

void mgpu_replica_table_read(struct mgpu_replica_table *t, struct mgpu_replica *r)
{
    r->last_read = t->tick;
}

static int by_last_read(const void *a, const void *b)
{
    const struct mgpu_replica *x = *(struct mgpu_replica *const *)a;
    const struct mgpu_replica *y = *(struct mgpu_replica *const *)b;
    return x->last_read < y->last_read ? -1 : x->last_read > y->last_read;
}

int mgpu_replica_table_make_room(struct mgpu_replica_table *t, int holder, size_t bytes,
                                 struct mgpu_replica_victim *victims, int max)
{
    if (holder < 0 || holder >= t->nholders || bytes > t->budget[holder])
        return -1;
    if (t->used[holder] + bytes <= t->budget[holder])
        return 0;
    /* The candidates oldest first; the victims are chosen before any is
     * given up, so that a refusal gives up nothing. */
    struct mgpu_replica **candidates = malloc(t->count * sizeof *candidates + 1);
    if (candidates == NULL)
        return -1;
    size_t ncandidates = 0;
    for (size_t i = 0; i < t->count; i++) {
        struct mgpu_replica *r = t->by_start[i];
        if (r->copy[holder] != 0 && r->last_read != t->tick)
            candidates[ncandidates++] = r;
    }
    qsort(candidates, ncandidates, sizeof *candidates, by_last_read);
    size_t used = t->used[holder];
    int n = 0;
    while (used + bytes > t->budget[holder] && (size_t)n < ncandidates && n < max)
        used -= candidates[n++]->bytes;
    if (used + bytes > t->budget[holder]) {
        free(candidates);
        return -1;
    }
    for (int v = 0; v < n; v++) {
        struct mgpu_replica *r = candidates[v];
        victims[v] = (struct mgpu_replica_victim){r, holder, r->copy[holder]};
        r->copy[holder] = 0;
        r->fresh[holder] = false;
    }
    t->used[holder] = used;
    free(candidates);
    return n;
}

int mgpu_replica_table_place(struct mgpu_replica_table *t, struct mgpu_replica *r, int holder,
                             uint64_t copy)
{
    if (holder < 0 || holder >= t->nholders || copy == 0 || r->copy[holder] != 0 ||
        t->used[holder] + r->bytes > t->budget[holder])
        return -1;
    r->copy[holder] = copy;
    r->fresh[holder] = false;
    t->used[holder] += r->bytes;
    return 0;
}

void mgpu_replica_table_refreshed(struct mgpu_replica_table *t, struct mgpu_replica *r, int holder)
{
    if (holder < 0 || holder >= t->nholders || r->copy[holder] == 0)
        return;
    r->fresh[holder] = true;
    r->refreshes++;
    r->refreshed_bytes += r->bytes;
}
