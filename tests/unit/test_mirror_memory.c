/* Unit test of the memory bookkeeping under mirror/ with a simulated granule
 * map (no GPU): the size-class sub-allocator (alignment, no overlap under
 * random use, reuse of holes, thousands of small buffers in a few granules,
 * bad and double frees, running out with nothing leaked) and the placement
 * arithmetic (owners per policy and weights, runs by owner, bytes per GPU),
 * the free list of the pool's address range (first fit, merging, refusing
 * overlaps) and the table of live allocations (lookup by start and inside,
 * removal keeping every other record findable). */
#include "memory/address_space.h"
#include "memory/allocation_table.h"
#include "check.h"
#include "partition/placement.h"
#include "memory/suballoc.h"

#include <stdlib.h>

/* A simulated pool: granule k is at BASE + k * 2 MiB; `limit` granules at
 * most may be mapped at once. */
#define BASE 0x7f0000000000ULL
#define MAX_GRANULES 4096

struct sim {
    bool mapped[MAX_GRANULES];
    size_t live, limit, gets, puts;
};

static int sim_get(void *ctx, uint64_t *address)
{
    struct sim *s = ctx;
    if (s->live == s->limit)
        return -1;
    for (size_t k = 0; k < MAX_GRANULES; k++)
        if (!s->mapped[k]) {
            s->mapped[k] = true;
            s->live++;
            s->gets++;
            *address = BASE + k * MGPU_GRANULE_SIZE;
            return 0;
        }
    return -1;
}

static void sim_put(void *ctx, uint64_t address)
{
    struct sim *s = ctx;
    size_t k = (address - BASE) / MGPU_GRANULE_SIZE;
    CHECK(address % MGPU_GRANULE_SIZE == 0 && k < MAX_GRANULES && s->mapped[k]);
    if (k < MAX_GRANULES && s->mapped[k]) {
        s->mapped[k] = false;
        s->live--;
        s->puts++;
    }
}

struct live {
    uint64_t address;
    size_t size;
};

static int by_address(const void *a, const void *b)
{
    const struct live *x = a, *y = b;
    return x->address < y->address ? -1 : x->address > y->address;
}

static bool no_overlap(struct live *l, size_t n)
{
    struct live *sorted = malloc((n ? n : 1) * sizeof *sorted);
    memcpy(sorted, l, n * sizeof *l);
    qsort(sorted, n, sizeof *sorted, by_address);
    bool ok = true;
    for (size_t i = 1; i < n; i++)
        ok &= sorted[i - 1].address + sorted[i - 1].size <= sorted[i].address;
    free(sorted);
    return ok;
}

static void test_suballoc(void)
{
    static struct sim sim = {.limit = MAX_GRANULES};
    struct mgpu_granule_source src = {sim_get, sim_put, &sim};
    struct mgpu_suballoc a;
    mgpu_suballoc_init(&a, &src);
    uint64_t p;
    size_t r;

    /* Sizes round up to a power of two from 256 bytes, aligned to it. */
    CHECK(mgpu_suballoc_alloc(&a, 1, &p, &r) == 0 && r == 256 && p % 256 == 0);
    CHECK(mgpu_suballoc_free(&a, p, &r) == 0 && r == 256);
    CHECK(mgpu_suballoc_alloc(&a, 257, &p, &r) == 0 && r == 512 && p % 512 == 0);
    CHECK(mgpu_suballoc_free(&a, p, &r) == 0);
    CHECK(mgpu_suballoc_alloc(&a, MGPU_SUBALLOC_MAX, &p, &r) == 0 && r == MGPU_SUBALLOC_MAX);
    CHECK(mgpu_suballoc_free(&a, p, &r) == 0);
    CHECK(mgpu_suballoc_alloc(&a, 0, &p, &r) == -1);
    CHECK(mgpu_suballoc_alloc(&a, MGPU_SUBALLOC_MAX + 1, &p, &r) == -1);

    /* 100 000 buffers of 256 bytes fit in 13 granules. */
    mgpu_suballoc_destroy(&a);
    CHECK(sim.live == 0);
    enum { MANY = 100000 };
    struct live *l = malloc(MANY * sizeof *l);
    for (size_t i = 0; i < MANY; i++) {
        CHECK(mgpu_suballoc_alloc(&a, 200, &l[i].address, &l[i].size) == 0);
        CHECK(l[i].address % 256 == 0);
    }
    CHECK(mgpu_suballoc_granules(&a) == 13 && sim.live == 13);
    CHECK(no_overlap(l, MANY));
    /* Pointer queries find the allocation from inside it. */
    uint64_t start;
    size_t size;
    CHECK(mgpu_suballoc_find(&a, l[777].address + 100, &start, &size) && start == l[777].address &&
          size == 256);
    /* Freeing from inside, twice, or what was never allocated is refused. */
    CHECK(mgpu_suballoc_free(&a, l[5].address + 16, &r) == -1);
    CHECK(mgpu_suballoc_free(&a, l[5].address, &r) == 0);
    CHECK(mgpu_suballoc_free(&a, l[5].address, &r) == -1);
    CHECK(!mgpu_suballoc_find(&a, l[5].address, &start, &size));
    CHECK(mgpu_suballoc_free(&a, 0x1234, &r) == -1);
    CHECK(mgpu_suballoc_free(&a, BASE + 4000 * MGPU_GRANULE_SIZE, &r) == -1);

    /* Holes are reused before a new granule is taken. */
    for (size_t i = 0; i < MANY; i += 2)
        CHECK(mgpu_suballoc_free(&a, l[i].address, &r) == 0);
    size_t held = mgpu_suballoc_granules(&a);
    for (size_t i = 0; i < MANY; i += 2)
        CHECK(mgpu_suballoc_alloc(&a, 256, &l[i].address, &l[i].size) == 0);
    CHECK(mgpu_suballoc_granules(&a) == held);
    l[5].size = 0; /* freed above */
    CHECK(no_overlap(l, MANY));
    for (size_t i = 0; i < MANY; i++)
        if (i != 5)
            CHECK(mgpu_suballoc_free(&a, l[i].address, &r) == 0);
    /* All free: at most one granule kept per class. */
    CHECK(mgpu_suballoc_granules(&a) <= MGPU_SUBALLOC_CLASSES);
    CHECK(a.bytes_in_use == 0);

    /* Random sizes, random frees: aligned to their class, never overlapping. */
    srand(7);
    size_t n = 0;
    for (int step = 0; step < 200000; step++) {
        if (n > 0 && (rand() % 3 == 0 || n == MANY)) {
            size_t k = (size_t)rand() % n;
            CHECK(mgpu_suballoc_free(&a, l[k].address, &r) == 0 && r == l[k].size);
            l[k] = l[--n];
        } else {
            size_t bytes = 1 + (size_t)rand() % (rand() % 8 == 0 ? MGPU_SUBALLOC_MAX : 4096);
            CHECK(mgpu_suballoc_alloc(&a, bytes, &l[n].address, &l[n].size) == 0);
            CHECK(l[n].size >= bytes && l[n].address % l[n].size == 0);
            n++;
        }
        if (step % 50000 == 0)
            CHECK(no_overlap(l, n));
    }
    CHECK(no_overlap(l, n));
    mgpu_suballoc_destroy(&a);
    CHECK(sim.live == 0 && sim.gets == sim.puts);
    free(l);
}

static void test_out_of_memory(void)
{
    static struct sim sim = {.limit = 2};
    struct mgpu_granule_source src = {sim_get, sim_put, &sim};
    struct mgpu_suballoc a;
    mgpu_suballoc_init(&a, &src);
    uint64_t p[5];
    size_t r;
    for (int i = 0; i < 4; i++)
        CHECK(mgpu_suballoc_alloc(&a, MGPU_SUBALLOC_MAX, &p[i], &r) == 0);
    CHECK(mgpu_suballoc_alloc(&a, MGPU_SUBALLOC_MAX, &p[4], &r) == -1);
    CHECK(mgpu_suballoc_alloc(&a, 256, &p[4], &r) == -1); /* another class needs a granule too */
    CHECK(mgpu_suballoc_granules(&a) == 2 && sim.live == 2);
    CHECK(mgpu_suballoc_free(&a, p[0], &r) == 0);
    CHECK(mgpu_suballoc_alloc(&a, MGPU_SUBALLOC_MAX, &p[0], &r) == 0);
    mgpu_suballoc_destroy(&a);
    CHECK(sim.live == 0);
}

static void test_placement(void)
{
    enum mgpu_placement p;
    CHECK(mgpu_placement_parse("interleave", &p) == 0 && p == MGPU_PLACE_INTERLEAVE);
    CHECK(mgpu_placement_parse("spread", &p) == -1);
    CHECK_STR(mgpu_placement_name(MGPU_PLACE_DISTRIBUTED), "distributed");

    /* Distributed, equal weights: contiguous parts in GPU order. */
    int owners[64];
    for (size_t i = 0; i < 64; i++)
        owners[i] = mgpu_placement_owner(MGPU_PLACE_DISTRIBUTED, i, 64, 8, NULL);
    for (size_t i = 0; i < 64; i++)
        CHECK(owners[i] == (int)(i / 8));
    size_t per_gpu[8];
    mgpu_placement_bytes_per_gpu(owners, 64, 8, per_gpu);
    for (int g = 0; g < 8; g++)
        CHECK(per_gpu[g] == 8 * MGPU_GRANULE_SIZE);

    /* The same layout (a part of 8 granules, 16 MiB, per GPU), bytes per
     * GPU of a range: [1 MiB, 35 MiB) holds 15 MiB of GPU 0's part, all
     * 16 of GPU 1's and 3 of GPU 2's. */
    size_t held[8];
    const size_t mib = (size_t)1 << 20;
    mgpu_placement_range_bytes(MGPU_PLACE_DISTRIBUTED, 64, 8, mib, 34 * mib, held);
    CHECK(held[0] == 15 * mib && held[1] == 16 * mib && held[2] == 3 * mib);
    for (int g = 3; g < 8; g++)
        CHECK(held[g] == 0);
    /* The whole buffer: as mgpu_placement_bytes_per_gpu says. */
    mgpu_placement_range_bytes(MGPU_PLACE_DISTRIBUTED, 64, 8, 0, 64 * MGPU_GRANULE_SIZE, held);
    for (int g = 0; g < 8; g++)
        CHECK(held[g] == per_gpu[g]);
    /* Interleaved, a range inside one granule: all of it on that granule's GPU. */
    mgpu_placement_range_bytes(MGPU_PLACE_INTERLEAVE, 10, 4, 5 * MGPU_GRANULE_SIZE + mib, mib,
                               held);
    CHECK(held[1] == mib && held[0] == 0 && held[2] == 0 && held[3] == 0);

    /* Weights 2:1 over 30 granules: 20 and 10. */
    const double weights[] = {2.0, 1.0};
    size_t first = 0;
    for (size_t i = 0; i < 30; i++)
        first += mgpu_placement_owner(MGPU_PLACE_DISTRIBUTED, i, 30, 2, weights) == 0;
    CHECK(first == 20);

    /* Fewer granules than GPUs: each goes to the slice that holds its middle. */
    CHECK(mgpu_placement_owner(MGPU_PLACE_DISTRIBUTED, 0, 3, 8, NULL) == 1);
    CHECK(mgpu_placement_owner(MGPU_PLACE_DISTRIBUTED, 1, 3, 8, NULL) == 4);
    CHECK(mgpu_placement_owner(MGPU_PLACE_DISTRIBUTED, 2, 3, 8, NULL) == 6);

    /* Owners never decrease along a distributed buffer, for any size. */
    for (size_t n = 1; n < 300; n++) {
        int last = 0;
        for (size_t i = 0; i < n; i++) {
            int o = mgpu_placement_owner(MGPU_PLACE_DISTRIBUTED, i, n, 8, NULL);
            CHECK(o >= last && o < 8);
            last = o;
        }
    }

    for (size_t i = 0; i < 10; i++) {
        CHECK(mgpu_placement_owner(MGPU_PLACE_HOME, i, 10, 4, NULL) == 0);
        CHECK(mgpu_placement_owner(MGPU_PLACE_INTERLEAVE, i, 10, 4, NULL) == (int)(i % 4));
        CHECK(mgpu_placement_owner(MGPU_PLACE_DISTRIBUTED, i, 10, 1, NULL) == 0);
    }

    /* Runs: [1 MiB, 35 MiB) of the 64-granule buffer above. */
    struct mgpu_owner_run runs[8];
    size_t off = MGPU_GRANULE_SIZE / 2, len = 17 * MGPU_GRANULE_SIZE;
    size_t count = mgpu_placement_runs(owners, 64, off, len, runs, 8);
    CHECK(count == 3);
    CHECK(runs[0].offset == off && runs[0].bytes == 8 * MGPU_GRANULE_SIZE - off &&
          runs[0].gpu == 0);
    CHECK(runs[1].offset == 8 * MGPU_GRANULE_SIZE && runs[1].bytes == 8 * MGPU_GRANULE_SIZE &&
          runs[1].gpu == 1);
    CHECK(runs[2].offset == 16 * MGPU_GRANULE_SIZE && runs[2].bytes == MGPU_GRANULE_SIZE + off &&
          runs[2].gpu == 2);
    /* Too many to hold: the count says so. */
    CHECK(mgpu_placement_runs(owners, 64, 0, 64 * MGPU_GRANULE_SIZE, runs, 2) == 8);
    /* Past the end: cut at the end. */
    CHECK(mgpu_placement_runs(owners, 64, 63 * MGPU_GRANULE_SIZE, 10 * MGPU_GRANULE_SIZE, runs,
                              8) == 1 &&
          runs[0].bytes == MGPU_GRANULE_SIZE && runs[0].gpu == 7);
}

static void test_address_space(void)
{
    const uint64_t G = MGPU_GRANULE_SIZE;
    struct mgpu_address_space s;
    CHECK(mgpu_address_space_init(&s, BASE + 1, 8 * G) == -1);
    CHECK(mgpu_address_space_init(&s, BASE, 8 * G) == 0);
    uint64_t a, b, c, d;
    CHECK(mgpu_address_space_take(&s, 1, &a) == 0 && a == BASE); /* rounded to a granule */
    CHECK(mgpu_address_space_take(&s, 3 * G, &b) == 0 && b == BASE + G);
    CHECK(mgpu_address_space_take(&s, 2 * G + 5, &c) == 0 && c == BASE + 4 * G);
    CHECK(mgpu_address_space_take(&s, 2 * G, &d) == -1); /* one granule left */
    CHECK(mgpu_address_space_free_bytes(&s) == G);
    /* A hole in the middle is found first fit; neighbours merge back. */
    CHECK(mgpu_address_space_give(&s, b, 3 * G) == 0);
    CHECK(mgpu_address_space_give(&s, b, G) == -1);         /* already free */
    CHECK(mgpu_address_space_give(&s, BASE + 8 * G, G) == -1); /* outside */
    CHECK(mgpu_address_space_give(&s, BASE + G / 2, G) == -1); /* not aligned */
    CHECK(mgpu_address_space_take(&s, 2 * G, &d) == 0 && d == b);
    CHECK(mgpu_address_space_give(&s, d, 2 * G) == 0);
    CHECK(mgpu_address_space_give(&s, a, G) == 0);
    CHECK(mgpu_address_space_give(&s, c, 3 * G) == 0);
    CHECK(s.nfree == 1 && mgpu_address_space_free_bytes(&s) == 8 * G);
    CHECK(mgpu_address_space_take(&s, 8 * G, &d) == 0 && d == BASE);
    CHECK(mgpu_address_space_give(&s, d, 8 * G) == 0);

    /* Random takes and gives never overlap and always merge back whole. */
    struct mgpu_address_space big;
    CHECK(mgpu_address_space_init(&big, BASE, 4096 * G) == 0);
    uint64_t starts[256] = {0}, sizes[256] = {0};
    srand(7);
    bool overlap = false;
    for (int step = 0; step < 20000; step++) {
        int k = rand() % 256;
        if (sizes[k]) {
            CHECK(mgpu_address_space_give(&big, starts[k], sizes[k]) == 0);
            sizes[k] = 0;
            continue;
        }
        uint64_t want = (uint64_t)(1 + rand() % 40) * G;
        if (mgpu_address_space_take(&big, want, &starts[k]) != 0)
            continue;
        sizes[k] = want;
        for (int j = 0; j < 256; j++)
            if (j != k && sizes[j] && starts[j] < starts[k] + want &&
                starts[k] < starts[j] + sizes[j])
                overlap = true;
    }
    CHECK(!overlap);
    for (int k = 0; k < 256; k++)
        if (sizes[k])
            CHECK(mgpu_address_space_give(&big, starts[k], sizes[k]) == 0);
    CHECK(big.nfree == 1 && mgpu_address_space_free_bytes(&big) == 4096 * G);
    mgpu_address_space_destroy(&big);
    mgpu_address_space_destroy(&s);
}

static void test_allocation_table(void)
{
    enum { N = 5000 };
    struct mgpu_allocation_table t = {0};
    static struct mgpu_allocation recs[N];
    for (size_t i = 0; i < N; i++) {
        recs[i].small = i % 5 != 0;
        recs[i].start = BASE + i * 4 * MGPU_GRANULE_SIZE;
        recs[i].span = recs[i].small ? 256 : 3 * MGPU_GRANULE_SIZE;
        recs[i].bytes = recs[i].span - 1;
        CHECK(mgpu_allocation_table_add(&t, &recs[i]) == 0);
    }
    CHECK(t.count == N && t.nlarge == N / 5);
    /* Remove every third; the rest stay findable by start, large ones inside. */
    for (size_t i = 0; i < N; i += 3)
        CHECK(mgpu_allocation_table_remove(&t, recs[i].start) == &recs[i]);
    CHECK(mgpu_allocation_table_remove(&t, recs[0].start) == NULL);
    bool all_found = true;
    for (size_t i = 0; i < N; i++) {
        bool kept = i % 3 != 0;
        if ((mgpu_allocation_table_at(&t, recs[i].start) == &recs[i]) != kept)
            all_found = false;
        if (!recs[i].small) {
            uint64_t inside = recs[i].start + recs[i].span - 1;
            if ((mgpu_allocation_table_large_holding(&t, inside) == &recs[i]) != kept)
                all_found = false;
            if (mgpu_allocation_table_large_holding(&t, recs[i].start + recs[i].span) != NULL)
                all_found = false;
        }
    }
    CHECK(all_found);
    CHECK(mgpu_allocation_table_large_holding(&t, BASE - 1) == NULL);
    CHECK(mgpu_allocation_table_at(&t, BASE + 1) == NULL);
    mgpu_allocation_table_destroy(&t);
}

int main(void)
{
    test_address_space();
    test_allocation_table();
    test_suballoc();
    test_out_of_memory();
    test_placement();
    CHECK_DONE();
}
