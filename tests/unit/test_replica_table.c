/* Unit test of mirror/replica_table.c (no GPU): lookup and order of
 * buffers, refusing overlaps, staleness from written ranges (edges, gaps,
 * ranges that wrap), from writes mgpu cannot place and across a free and a
 * new buffer at the same address, per-holder budgets, least-recently-read
 * eviction that spares the launch being prepared and gives up nothing when
 * it cannot make room, and a random run against a plain model. */
#include "check.h"
#include "mirror/replica_table.h"

#include <stdlib.h>

#define MiB (1024u * 1024u)

static void test_init(void)
{
    struct mgpu_replica_table t;
    CHECK(mgpu_replica_table_init(&t, 0, MiB) == -1);
    CHECK(mgpu_replica_table_init(&t, MGPU_REPLICA_MAX_HOLDERS + 1, MiB) == -1);
    CHECK(mgpu_replica_table_init(&t, 8, MiB) == 0);
    CHECK(t.nholders == 8 && t.count == 0 && t.budget[7] == MiB);
    mgpu_replica_table_destroy(&t);
}

static void test_lookup_and_overlap(void)
{
    struct mgpu_replica_table t;
    mgpu_replica_table_init(&t, 2, 64 * MiB);
    struct mgpu_replica *c = mgpu_replica_table_add(&t, 0x30000, 0x1000);
    struct mgpu_replica *a = mgpu_replica_table_add(&t, 0x10000, 0x1000);
    struct mgpu_replica *b = mgpu_replica_table_add(&t, 0x20000, 0x10000);
    CHECK(a && b && c);
    CHECK(t.count == 3 && t.by_start[0] == a && t.by_start[1] == b && t.by_start[2] == c);
    CHECK(mgpu_replica_table_find(&t, 0x20000) == b);
    CHECK(mgpu_replica_table_find(&t, 0x20001) == NULL); /* inside, not a start */
    CHECK(mgpu_replica_table_find(&t, 0x40000) == NULL);
    /* Overlaps refused, from either side and inside; touching is fine. */
    CHECK(mgpu_replica_table_add(&t, 0x2ffff, 2) == NULL);
    CHECK(mgpu_replica_table_add(&t, 0x1f000, 0x1001) == NULL);
    CHECK(mgpu_replica_table_add(&t, 0x25000, 0x10) == NULL);
    CHECK(mgpu_replica_table_add(&t, 0x10000, 0x1000) == NULL);
    CHECK(mgpu_replica_table_add(&t, 0x50000, 0) == NULL);
    CHECK(mgpu_replica_table_add(&t, UINT64_MAX - 4, 16) == NULL); /* wraps */
    CHECK(mgpu_replica_table_add(&t, 0x11000, 0xf000) != NULL);    /* fills the gap exactly */
    CHECK(t.count == 4);
    /* The first replica overlapping a range: a freed buffer's, whole or of
     * ranges of it. */
    CHECK(mgpu_replica_table_first_in(&t, 0x20000, 0x10000) == b);
    CHECK(mgpu_replica_table_first_in(&t, 0x2f000, 0x8000) == b);
    CHECK(mgpu_replica_table_first_in(&t, 0x30000, 0x10) == c);
    CHECK(mgpu_replica_table_first_in(&t, 0x31000, 0x1000) == NULL);
    CHECK(mgpu_replica_table_first_in(&t, 0x0, 0x10000) == NULL); /* touches a, no overlap */
    CHECK(mgpu_replica_table_first_in(&t, 0x0, 0x10001) == a);
    mgpu_replica_table_destroy(&t);
}

/* Every holder of r placed and refreshed. */
static void fill(struct mgpu_replica_table *t, struct mgpu_replica *r)
{
    for (int h = 0; h < t->nholders; h++) {
        if (r->copy[h] == 0)
            CHECK(mgpu_replica_table_place(t, r, h,
                                           0xd0000000u + (uint64_t)h * 0x1000000u + r->start) == 0);
        mgpu_replica_table_refreshed(t, r, h);
    }
}

static bool all_fresh(const struct mgpu_replica_table *t, const struct mgpu_replica *r)
{
    for (int h = 0; h < t->nholders; h++)
        if (!r->fresh[h])
            return false;
    return true;
}

static bool none_fresh(const struct mgpu_replica_table *t, const struct mgpu_replica *r)
{
    for (int h = 0; h < t->nholders; h++)
        if (r->fresh[h])
            return false;
    return true;
}

static void test_written(void)
{
    struct mgpu_replica_table t;
    mgpu_replica_table_init(&t, 3, 64 * MiB);
    struct mgpu_replica *a = mgpu_replica_table_add(&t, 0x10000, 0x1000);
    struct mgpu_replica *b = mgpu_replica_table_add(&t, 0x20000, 0x1000);
    struct mgpu_replica *c = mgpu_replica_table_add(&t, 0x30000, 0x1000);
    fill(&t, a), fill(&t, b), fill(&t, c);
    CHECK(all_fresh(&t, a) && all_fresh(&t, b) && all_fresh(&t, c));

    /* A range that ends where b starts, and one that starts where b ends,
     * leave it alone; a gap touches nothing; one byte of b is enough. */
    CHECK(mgpu_replica_table_written(&t, 0x1f000, 0x1000) == 0);
    CHECK(mgpu_replica_table_written(&t, 0x21000, 0x100) == 0);
    CHECK(mgpu_replica_table_written(&t, 0x20fff, 0) == 0);
    CHECK(all_fresh(&t, b));
    CHECK(mgpu_replica_table_written(&t, 0x20fff, 1) == 1);
    CHECK(none_fresh(&t, b) && all_fresh(&t, a) && all_fresh(&t, c));
    CHECK(b->stale_marks == 1);
    /* Stale already: not counted again. */
    CHECK(mgpu_replica_table_written(&t, 0x20000, 4) == 0 && b->stale_marks == 1);

    /* A range over a and c (and stale b) marks both; one that wraps past
     * the top of the address space reaches everything above its start. */
    CHECK(mgpu_replica_table_written(&t, 0x10800, 0x20000) == 2);
    CHECK(none_fresh(&t, a) && none_fresh(&t, c));
    fill(&t, a), fill(&t, b), fill(&t, c);
    CHECK(mgpu_replica_table_written(&t, 0x20800, UINT64_MAX) == 2);
    CHECK(all_fresh(&t, a) && none_fresh(&t, b) && none_fresh(&t, c));

    /* One holder refreshed: the others stay stale. */
    mgpu_replica_table_refreshed(&t, b, 1);
    CHECK(!b->fresh[0] && b->fresh[1] && !b->fresh[2]);
    CHECK(mgpu_replica_table_written_anywhere(&t) == 2); /* a and b */
    CHECK(none_fresh(&t, a) && none_fresh(&t, b) && none_fresh(&t, c));
    CHECK(a->copy[0] != 0); /* stale copies stay, to be refreshed in place */
    mgpu_replica_table_destroy(&t);
}

static void test_free_and_reuse(void)
{
    struct mgpu_replica_table t;
    mgpu_replica_table_init(&t, 2, 64 * MiB);
    struct mgpu_replica *a = mgpu_replica_table_add(&t, 0x10000, MiB);
    fill(&t, a);
    CHECK(t.used[0] == MiB && t.used[1] == MiB);
    CHECK(mgpu_replica_table_remove(&t, 0x10001) == NULL);
    struct mgpu_replica *gone = mgpu_replica_table_remove(&t, 0x10000);
    CHECK(gone == a && t.count == 0 && t.used[0] == 0 && t.used[1] == 0);
    CHECK(gone->copy[0] != 0); /* for the caller to release */
    free(gone);
    CHECK(mgpu_replica_table_find(&t, 0x10000) == NULL);
    /* A new buffer at the same address starts with no copy at all. */
    struct mgpu_replica *again = mgpu_replica_table_add(&t, 0x10000, 2 * MiB);
    CHECK(again != NULL && again->copy[0] == 0 && none_fresh(&t, again));
    mgpu_replica_table_destroy(&t);
}

static void test_budget_and_eviction(void)
{
    struct mgpu_replica_table t;
    mgpu_replica_table_init(&t, 2, 10 * MiB);
    struct mgpu_replica *r[4];
    for (int i = 0; i < 4; i++)
        r[i] = mgpu_replica_table_add(&t, 0x100000000ull * (uint64_t)(i + 1), 3 * MiB);
    /* Read in launches 1..3: r0, then r1, then r2; all on holder 0. */
    for (int i = 0; i < 3; i++) {
        mgpu_replica_table_begin_launch(&t);
        mgpu_replica_table_read(&t, r[i]);
        CHECK(mgpu_replica_table_make_room(&t, 0, 3 * MiB, NULL, 0) == 0);
        CHECK(mgpu_replica_table_place(&t, r[i], 0, 0x1000 + (uint64_t)i) == 0);
        mgpu_replica_table_refreshed(&t, r[i], 0);
    }
    CHECK(t.used[0] == 9 * MiB && t.used[1] == 0);
    CHECK(mgpu_replica_table_place(&t, r[0], 0, 0x2000) == -1); /* has one */
    CHECK(mgpu_replica_table_place(&t, r[3], 0, 0x2000) == -1); /* over budget */
    CHECK(mgpu_replica_table_place(&t, r[3], 1, 0) == -1);      /* no address */

    /* Launch 4 reads r1 again and r3: room for r3 gives up r0, the least
     * recently read, not r1, which this launch reads. */
    mgpu_replica_table_begin_launch(&t);
    mgpu_replica_table_read(&t, r[1]);
    mgpu_replica_table_read(&t, r[3]);
    struct mgpu_replica_victim v[4];
    CHECK(mgpu_replica_table_make_room(&t, 0, 3 * MiB, v, 4) == 1);
    CHECK(v[0].replica == r[0] && v[0].holder == 0 && v[0].copy == 0x1000);
    CHECK(r[0]->copy[0] == 0 && !r[0]->fresh[0] && t.used[0] == 6 * MiB);
    CHECK(mgpu_replica_table_place(&t, r[3], 0, 0x3000) == 0);

    /* Room for 9 MiB more: r2 could go, but r1 and r3 are this launch's;
     * refused, and nothing given up. */
    CHECK(mgpu_replica_table_make_room(&t, 0, 9 * MiB, v, 4) == -1);
    CHECK(r[2]->copy[0] == 0x1002 && r[2]->fresh[0] && t.used[0] == 9 * MiB);
    CHECK(mgpu_replica_table_make_room(&t, 0, 11 * MiB, v, 4) == -1); /* over the budget */
    CHECK(mgpu_replica_table_make_room(&t, 2, MiB, v, 4) == -1);      /* no such holder */
    /* Room for 4 MiB: r2 alone is enough. With max 0 it cannot be given. */
    CHECK(mgpu_replica_table_make_room(&t, 0, 4 * MiB, v, 0) == -1 && r[2]->copy[0] != 0);
    CHECK(mgpu_replica_table_make_room(&t, 0, 4 * MiB, v, 4) == 1 && v[0].replica == r[2]);
    CHECK(t.used[0] == 6 * MiB);
    /* Holder 1's budget is its own. */
    CHECK(mgpu_replica_table_make_room(&t, 1, 10 * MiB, v, 4) == 0);
    mgpu_replica_table_destroy(&t);
}

/* Random writes, reads, frees and refreshes against a plain model: a copy
 * is fresh only if it was refreshed after the last write that touched its
 * buffer, and each holder's use is the bytes of its copies. */
#define SLOTS 24
static void test_random_against_model(void)
{
    struct mgpu_replica_table t;
    const int holders = 4;
    mgpu_replica_table_init(&t, holders, 40 * MiB);
    struct {
        bool live;
        uint64_t start;
        size_t bytes;
        bool model_fresh[4];
    } slot[SLOTS] = {{0}};
    unsigned seed = 12345;
    for (int step = 0; step < 20000; step++) {
        int s = (int)(rand_r(&seed) % SLOTS);
        uint64_t start = 0x10000000ull * (uint64_t)(s + 1);
        int op = (int)(rand_r(&seed) % 6);
        if (!slot[s].live) {
            size_t bytes = (size_t)(1 + rand_r(&seed) % 8) * MiB;
            CHECK(mgpu_replica_table_add(&t, start, bytes) != NULL);
            slot[s].live = true, slot[s].start = start, slot[s].bytes = bytes;
            for (int h = 0; h < holders; h++)
                slot[s].model_fresh[h] = false;
            continue;
        }
        struct mgpu_replica *r = mgpu_replica_table_find(&t, start);
        CHECK(r != NULL);
        if (r == NULL)
            continue;
        if (op == 0) { /* a write somewhere inside, or over the neighbours too */
            uint64_t off = rand_r(&seed) % slot[s].bytes;
            size_t len = 1 + rand_r(&seed) % (rand_r(&seed) % 2 ? 64 : 0x30000000u);
            mgpu_replica_table_written(&t, start + off, len);
            for (int o = 0; o < SLOTS; o++)
                if (slot[o].live && slot[o].start < start + off + len &&
                    slot[o].start + slot[o].bytes > start + off)
                    for (int h = 0; h < holders; h++)
                        slot[o].model_fresh[h] = false;
        } else if (op == 1 && rand_r(&seed) % 8 == 0) {
            struct mgpu_replica *gone = mgpu_replica_table_remove(&t, start);
            CHECK(gone == r);
            free(gone);
            slot[s].live = false;
        } else if (op == 2 && rand_r(&seed) % 50 == 0) {
            mgpu_replica_table_written_anywhere(&t);
            for (int o = 0; o < SLOTS; o++)
                for (int h = 0; h < holders; h++)
                    slot[o].model_fresh[h] = false;
        } else { /* a launch reads it on one holder */
            int h = (int)(rand_r(&seed) % holders);
            mgpu_replica_table_begin_launch(&t);
            mgpu_replica_table_read(&t, r);
            if (r->copy[h] == 0) {
                struct mgpu_replica_victim v[SLOTS];
                int n = mgpu_replica_table_make_room(&t, h, r->bytes, v, SLOTS);
                CHECK(n >= 0);
                for (int i = 0; i < n; i++) {
                    CHECK(v[i].replica != r && v[i].holder == h && v[i].copy != 0);
                    for (int o = 0; o < SLOTS; o++)
                        if (slot[o].live && slot[o].start == v[i].replica->start)
                            slot[o].model_fresh[h] = false;
                }
                CHECK(mgpu_replica_table_place(&t, r, h, start + 1) == 0);
            }
            if (!r->fresh[h]) {
                mgpu_replica_table_refreshed(&t, r, h);
                slot[s].model_fresh[h] = true;
            }
        }
        /* Invariants after every step. */
        size_t used[4] = {0};
        for (size_t i = 0; i < t.count; i++) {
            const struct mgpu_replica *x = t.by_start[i];
            CHECK(i == 0 || t.by_start[i - 1]->start + t.by_start[i - 1]->bytes <= x->start);
            for (int h = 0; h < holders; h++) {
                if (x->copy[h] != 0)
                    used[h] += x->bytes;
                CHECK(!x->fresh[h] || x->copy[h] != 0);
            }
        }
        for (int h = 0; h < holders; h++)
            CHECK(used[h] == t.used[h] && t.used[h] <= t.budget[h]);
        for (int o = 0; o < SLOTS; o++) {
            if (!slot[o].live)
                continue;
            const struct mgpu_replica *x = mgpu_replica_table_find(&t, slot[o].start);
            CHECK(x != NULL);
            for (int h = 0; x != NULL && h < holders; h++)
                CHECK(x->fresh[h] == slot[o].model_fresh[h]);
        }
        if (check_failures > 20)
            break;
    }
    mgpu_replica_table_destroy(&t);
}

int main(void)
{
    test_init();
    test_lookup_and_overlap();
    test_written();
    test_free_and_reuse();
    test_budget_and_eviction();
    test_random_against_model();
    CHECK_DONE();
}
