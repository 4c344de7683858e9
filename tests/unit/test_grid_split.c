/* The grid-cutting arithmetic: which dimension, where the cuts fall for
 * weights and for a distributed buffer's owners, and that the slices tile
 * the grid exactly once, checked over many random shapes. */
#include "check.h"
#include "partition/grid_split.h"

#include <stdlib.h>

static unsigned long long blocks_of(const unsigned d[3])
{
    return (unsigned long long)d[0] * d[1] * d[2];
}

/* The slices cover the grid exactly: contiguous along the cut dimension,
 * whole along the others, in GPU order. */
static int tiles_grid(const unsigned grid[3], const struct mgpu_grid_slice *s, int n)
{
    int dim = mgpu_grid_split_dim(grid);
    unsigned long long total = 0;
    unsigned next = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && s[i].gpu <= s[i - 1].gpu)
            return 0;
        for (int d = 0; d < 3; d++) {
            if (d == dim)
                continue;
            if (s[i].first[d] != 0 || s[i].dims[d] != grid[d])
                return 0;
        }
        if (dim >= 0) {
            if (s[i].first[dim] != next || s[i].dims[dim] == 0)
                return 0;
            next += s[i].dims[dim];
        }
        total += blocks_of(s[i].dims);
    }
    return total == blocks_of(grid) && (dim < 0 || next == grid[dim]);
}

static void test_dimension(void)
{
    CHECK(mgpu_grid_split_dim((unsigned[3]){1, 1, 1}) == -1);
    CHECK(mgpu_grid_split_dim((unsigned[3]){100, 1, 1}) == 0);
    CHECK(mgpu_grid_split_dim((unsigned[3]){100, 7, 1}) == 1);
    CHECK(mgpu_grid_split_dim((unsigned[3]){100, 7, 2}) == 2);
    CHECK(mgpu_grid_split_dim((unsigned[3]){1, 7, 1}) == 1);
}

static void test_equal_and_weighted(void)
{
    double ends[8];
    struct mgpu_grid_slice s[8];
    mgpu_grid_ends_from_weights(8, NULL, ends);
    unsigned grid[3] = {1u << 20, 1, 1};
    int n = mgpu_grid_split(grid, 8, ends, s);
    CHECK(n == 8);
    for (int g = 0; g < n; g++) {
        CHECK(s[g].gpu == g);
        CHECK(s[g].first[0] == (unsigned)g << 17);
        CHECK(s[g].dims[0] == 1u << 17);
    }
    /* A 2D grid is cut in rows: 1024 rows of blocks, 128 per GPU. */
    unsigned jacobi[3] = {512, 1024, 1};
    n = mgpu_grid_split(jacobi, 8, ends, s);
    CHECK(n == 8 && s[3].first[1] == 384 && s[3].dims[1] == 128 && s[3].dims[0] == 512);

    /* One GPU with twice the weight takes twice the blocks. */
    double w[3] = {2, 1, 1};
    mgpu_grid_ends_from_weights(3, w, ends);
    unsigned g400[3] = {400, 1, 1};
    n = mgpu_grid_split(g400, 3, ends, s);
    CHECK(n == 3 && s[0].dims[0] == 200 && s[1].dims[0] == 100 && s[2].dims[0] == 100);
    /* Zero weights everywhere mean equal shares. */
    double zero[2] = {0, 0};
    mgpu_grid_ends_from_weights(2, zero, ends);
    CHECK(ends[0] == 0.5 && ends[1] == 1.0);
}

static void test_fewer_blocks_than_gpus(void)
{
    double ends[8];
    struct mgpu_grid_slice s[8];
    mgpu_grid_ends_from_weights(8, NULL, ends);
    unsigned three[3] = {3, 1, 1};
    int n = mgpu_grid_split(three, 8, ends, s);
    CHECK(n == 3 && tiles_grid(three, s, n));
    unsigned one[3] = {1, 1, 1};
    n = mgpu_grid_split(one, 8, ends, s);
    CHECK(n == 1 && s[0].gpu == 0 && s[0].dims[0] == 1);
    unsigned many[3] = {1000, 1, 1};
    n = mgpu_grid_split(many, 1, ends, s);
    CHECK(n == 1 && s[0].dims[0] == 1000);
}

static void test_owner_ends(void)
{
    double ends[4];
    /* A buffer of 10 granules distributed over 4 GPUs as 3, 2, 3, 2. */
    const size_t G = MGPU_GRANULE_SIZE;
    struct mgpu_owner_run runs[4] = {
        {0, 3 * G, 0}, {3 * G, 2 * G, 1}, {5 * G, 3 * G, 2}, {8 * G, 2 * G, 3}};
    CHECK(mgpu_grid_ends_from_owners(runs, 4, 10 * G, 4, ends));
    struct mgpu_grid_slice s[4];
    unsigned grid[3] = {1000, 1, 1};
    int n = mgpu_grid_split(grid, 4, ends, s);
    CHECK(n == 4 && s[0].dims[0] == 300 && s[1].dims[0] == 200 && s[2].dims[0] == 300 &&
          s[3].dims[0] == 200);
    /* Not one run per GPU in GPU order: not used. */
    struct mgpu_owner_run swapped[4] = {runs[1], runs[0], runs[2], runs[3]};
    CHECK(!mgpu_grid_ends_from_owners(swapped, 4, 10 * G, 4, ends));
    CHECK(!mgpu_grid_ends_from_owners(runs, 3, 10 * G, 4, ends));
    CHECK(!mgpu_grid_ends_from_owners(runs, 4, 0, 4, ends));
}

/* Random grids and weights: the slices always tile the grid once. */
static void test_random_tiling(void)
{
    srand(7);
    double weights[8], ends[8];
    struct mgpu_grid_slice s[8];
    for (int t = 0; t < 20000; t++) {
        int ngpus = 1 + rand() % 8;
        for (int g = 0; g < ngpus; g++)
            weights[g] = rand() % 4;
        mgpu_grid_ends_from_weights(ngpus, weights, ends);
        unsigned grid[3] = {1 + rand() % 3000, 1 + rand() % 3, 1 + (rand() % 4 == 0) * rand() % 5};
        int n = mgpu_grid_split(grid, ngpus, ends, s);
        CHECK(n >= 1 && n <= ngpus);
        CHECK(tiles_grid(grid, s, n));
    }
}

/* A grid-stride loop's iterations go with the same ends: every iteration
 * once, in order, each slice the share of its GPU, and a GPU without
 * blocks hands its share to the slices around it. */
static void test_iterations(void)
{
    double ends[4] = {0.25, 0.5, 0.75, 1.0};
    unsigned grid[3] = {1024, 1, 1};
    struct mgpu_grid_slice s[4];
    int n = mgpu_grid_split(grid, 4, ends, s);
    mgpu_grid_split_iterations(1000003, ends, s, n);
    CHECK(n == 4);
    unsigned long long next = 0;
    for (int i = 0; i < n; i++) {
        CHECK(s[i].iterations && s[i].iteration_begin == next);
        next = s[i].iteration_end;
    }
    CHECK(next == 1000003 && s[1].iteration_begin == 250001 && s[2].iteration_end == 750002);

    /* Two blocks for four GPUs: two slices, which still cover it all. */
    unsigned small[3] = {2, 1, 1};
    n = mgpu_grid_split(small, 4, ends, s);
    mgpu_grid_split_iterations(10, ends, s, n);
    CHECK(n == 2 && s[0].iteration_begin == 0 && s[n - 1].iteration_end == 10 &&
          s[1].iteration_begin == s[0].iteration_end);

    /* Fewer iterations than slices: empty ranges, never reversed. */
    n = mgpu_grid_split(grid, 4, ends, s);
    mgpu_grid_split_iterations(1, ends, s, n);
    for (int i = 0; i < n; i++)
        CHECK(s[i].iteration_begin <= s[i].iteration_end && s[i].iteration_end <= 1);
    CHECK(s[n - 1].iteration_end == 1);
}

int main(void)
{
    test_dimension();
    test_equal_and_weighted();
    test_fewer_blocks_than_gpus();
    test_owner_ends();
    test_random_tiling();
    test_iterations();
    CHECK_DONE();
}
