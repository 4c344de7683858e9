/* Unit tests of the split's estimate (sched/split_estimate.c) on a toy pool
 * and link model: where a kernel's buffers lie decides whether a split of it
 * is worth trying, and what it would be with them spread. The pool and the run's links are stubs
 * here: two buffers of 64 MiB, on the home GPU or spread, and links of 400 GB/s (a twelfth of 4.8
 * TB/s). */
#include "check.h"
#include "memory/memory_pool.h"
#include "partition/placement.h"
#include "ptx/ptx_analysis.h"
#include "base/real_driver.h"
#include "sched/run_links.h"
#include "base/config.h"
#include "sched/split_estimate.h"
#include "ptx/ptx_footprint.h"

#include <math.h>

#define BUFFER_BYTES ((size_t)64 << 20)
#define GRANULES (BUFFER_BYTES / MGPU_GRANULE_SIZE)
#define LINK_GBPS 400.0
#define BASE_X 0x100000000ull
#define BASE_Y 0x200000000ull

struct mgpu_config mgpu_cfg;
struct mgpu_driver_api mgpu_drv;

/* Managed memory, outside the pool: the driver says so of this range. */
#define BASE_MANAGED 0x300000000ull

static CUresult stub_pointer_attribute(void *data, CUpointer_attribute attribute,
                                       CUdeviceptr pointer)
{
    if (attribute != CU_POINTER_ATTRIBUTE_IS_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    if (pointer < BASE_MANAGED || pointer >= BASE_MANAGED + BUFFER_BYTES)
        return CUDA_ERROR_INVALID_VALUE; /* not the driver's either */
    *(unsigned *)data = 1;
    return CUDA_SUCCESS;
}

static int owners_x[GRANULES], owners_y[GRANULES];
static struct mgpu_link_model model;

bool mgpu_pool_holds(CUdeviceptr address)
{
    return (address >= BASE_X && address < BASE_X + BUFFER_BYTES) ||
           (address >= BASE_Y && address < BASE_Y + BUFFER_BYTES);
}

bool mgpu_pool_find(CUdeviceptr address, struct mgpu_pool_block *out)
{
    if (!mgpu_pool_holds(address))
        return false;
    memset(out, 0, sizeof *out);
    out->start = address >= BASE_Y ? BASE_Y : BASE_X;
    out->bytes = BUFFER_BYTES;
    out->id = out->start;
    return true;
}

int mgpu_pool_bytes_by_gpu(CUdeviceptr address, size_t bytes, size_t held[MGPU_MAX_GPUS])
{
    memset(held, 0, MGPU_MAX_GPUS * sizeof held[0]);
    struct mgpu_pool_block b;
    if (!mgpu_pool_find(address, &b))
        return 0;
    const int *owners = b.start == BASE_X ? owners_x : owners_y;
    static struct mgpu_owner_run runs[GRANULES];
    size_t n = mgpu_placement_runs(owners, GRANULES, address - b.start, bytes, runs, GRANULES);
    int holders = 0;
    for (size_t i = 0; i < n && i < GRANULES; i++) {
        holders += held[runs[i].gpu] == 0;
        held[runs[i].gpu] += runs[i].bytes;
    }
    return holders;
}

/* The pool's spread of either buffer: one part per entry of the model, in
 * order (what place(n, -1) lays out), of [address, address + bytes). */
int mgpu_pool_spread_bytes_by_gpu(CUdeviceptr address, size_t bytes, size_t held[MGPU_MAX_GPUS])
{
    memset(held, 0, MGPU_MAX_GPUS * sizeof held[0]);
    struct mgpu_pool_block b;
    if (!mgpu_pool_find(address, &b) || model.nentries < 1)
        return 0;
    size_t part = BUFFER_BYTES / (size_t)model.nentries, from = address - b.start;
    int holders = 0;
    for (int g = 0; g < model.nentries; g++) {
        size_t lo = part * (size_t)g > from ? part * (size_t)g : from;
        size_t hi = part * (size_t)(g + 1) < from + bytes ? part * (size_t)(g + 1) : from + bytes;
        held[g] = hi > lo ? hi - lo : 0;
        holders += held[g] > 0;
    }
    return holders;
}

const struct mgpu_link_model *mgpu_run_links(void)
{
    return &model;
}

bool mgpu_run_links_pending(void)
{
    return false;
}

/* Buffers x and y: all on `home_gpu`, or (home_gpu < 0) spread in ngpus
 * equal parts in order. */
static void place(int ngpus, int home_gpu)
{
    for (size_t g = 0; g < GRANULES; g++) {
        int owner = home_gpu >= 0 ? home_gpu : (int)(g * (size_t)ngpus / GRANULES);
        owners_x[g] = owner;
        owners_y[g] = owner;
    }
}

static void links(int ngpus)
{
    static double gbps[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    int devices[MGPU_MAX_GPUS];
    for (int i = 0; i < ngpus; i++) {
        devices[i] = i;
        for (int j = 0; j < ngpus; j++)
            gbps[i][j] = i == j ? 4800.0 : LINK_GBPS;
    }
    CHECK(mgpu_link_model_build(&model, devices, ngpus, devices, ngpus, gbps) == 0);
}

/* A launch of y[i] = f(x[i]) over 4096 blocks, cut in ngpus equal slices;
 * with `atomics`, of atomicAdd(&y[f(x[i])], 1) instead, a reduction that
 * mirrors may privatise. */
static const unsigned char *scatter; /* the analysis's per parameter; NULL: none */
static bool privatised;              /* the split privatises reductions */
static bool spread;                  /* estimated with the buffers spread */
static CUdeviceptr x_at = BASE_X;    /* where the launch's x points */
/* The kernel's footprint (ptx/ptx_footprint.h), or NULL: y[i] = f(x[i])
 * over 64 bytes per thread, 4096 blocks of 256 threads covering each
 * 64 MiB buffer exactly, or x read whole (a column walk). */
static const struct mgpu_kernel_footprint *footprint;
static struct mgpu_fp_node fp_nodes[] = {
    {.op = MGPU_FP_SPECIAL, .a = -1, .b = -1, .value = MGPU_FP_CTAID_X},
    {.op = MGPU_FP_SPECIAL, .a = -1, .b = -1, .value = MGPU_FP_NTID_X},
    {.op = MGPU_FP_MUL, .a = 0, .b = 1},
    {.op = MGPU_FP_SPECIAL, .a = -1, .b = -1, .value = MGPU_FP_TID_X},
    {.op = MGPU_FP_ADD, .a = 2, .b = 3},
    {.op = MGPU_FP_CONST, .a = -1, .b = -1, .value = 64},
    {.op = MGPU_FP_MUL, .a = 4, .b = 5},
};
static struct mgpu_fp_slot fp_slots[] = {{0, 0, 0}, {1, 0, 0}};
static struct mgpu_fp_slot fp_slots_walk[] = {{0, 0, MGPU_FP_LOAD}, {1, 0, 0}};
static struct mgpu_fp_access fp_accesses[] = {{0, MGPU_FP_LOAD, 6, 64, 0},
                                              {1, MGPU_FP_STORE, 6, 64, 1}};
static const struct mgpu_kernel_footprint fp_elementwise = {.slots = fp_slots,
                                                            .nslots = 2,
                                                            .accesses = fp_accesses,
                                                            .naccesses = 2,
                                                            .nodes = fp_nodes,
                                                            .nnodes = 7};
static const struct mgpu_kernel_footprint fp_column_walk = {.slots = fp_slots_walk,
                                                            .nslots = 2,
                                                            .accesses = fp_accesses + 1,
                                                            .naccesses = 1,
                                                            .nodes = fp_nodes,
                                                            .nnodes = 7};

static double estimate_launch(int ngpus, double whole_us, unsigned notes, bool atomics)
{
    static const size_t offsets[] = {0, 8}, sizes[] = {8, 8};
    static const unsigned use[] = {MGPU_PARAM_LOAD, MGPU_PARAM_STORE};
    static const unsigned use_atomics[] = {MGPU_PARAM_LOAD, MGPU_PARAM_ATOMIC};
    static const unsigned reduction[] = {0, MGPU_REDUCTION(MGPU_REDUCE_ADD, MGPU_REDUCE_U32)};
    struct mgpu_gpu_kernels k = {.ngpus = ngpus,
                                 .nparams = 2,
                                 .param_offsets = offsets,
                                 .param_sizes = sizes,
                                 .param_use = atomics ? use_atomics : use,
                                 .param_reduction = reduction,
                                 .param_scatter = scatter,
                                 .notes = notes,
                                 .footprint = footprint};
    CUdeviceptr x = x_at, y = BASE_Y;
    void *params[] = {&x, &y};
    unsigned grid[3] = {4096, 1, 1}, block[3] = {256, 1, 1};
    struct mgpu_grid_slice slices[MGPU_MAX_GPUS];
    memset(slices, 0, sizeof slices);
    for (int s = 0; s < ngpus; s++) {
        slices[s].gpu = s;
        slices[s].first[0] = 4096u / (unsigned)ngpus * (unsigned)s;
        slices[s].dims[0] = 4096u / (unsigned)ngpus;
        slices[s].dims[1] = slices[s].dims[2] = 1;
    }
    struct mgpu_split_estimate e = {.kernel = &k,
                                    .params = params,
                                    .grid = grid,
                                    .block = block,
                                    .slices = slices,
                                    .nslices = ngpus,
                                    .privatised = privatised,
                                    .spread = spread};
    return mgpu_split_estimate_us(&e, whole_us);
}

static double estimate(int ngpus, double whole_us, unsigned notes)
{
    return estimate_launch(ngpus, whole_us, notes, false);
}

static int near(double a, double b)
{
    return a > b * 0.999 && a < b * 1.001;
}

int main(void)
{
    /* Two GPUs, both buffers on the home GPU, a 60 us whole launch: GPU 1
     * reads its half of both (64 MiB) over the link, 168 us, on top of its
     * 30 us share. Not worth a try. */
    links(2);
    place(2, 0);
    double remote_us = (double)BUFFER_BYTES / (LINK_GBPS * 1e9) * 1e6;
    CHECK(near(estimate(2, 60.0, 0), 30.0 + remote_us));
    CHECK(estimate(2, 60.0, 0) > 60.0);
    /* A kernel that computes for 10 ms over the same data splits well. */
    CHECK(estimate(2, 10000.0, 0) < 10000.0 * 0.6);
    /* y stored a sector per thread (a naive transpose's column, 8 bytes
     * over the link per float): GPU 1's half of y counts 8 times. */
    static const unsigned char y_scattered[] = {1, 8};
    scatter = y_scattered;
    CHECK(near(estimate(2, 60.0, 0), 30.0 + remote_us / 2 * (1 + 8)));
    /* ... which keeps a launch of 1 ms whole that would split unscattered. */
    CHECK(estimate(2, 1000.0, 0) > 1000.0);
    scatter = NULL;
    CHECK(estimate(2, 1000.0, 0) < 1000.0);

    /* Spread along the cut, each slice finds its share at home: the whole
     * launch's own remote reads (half of both buffers) come off, and the
     * rest divides in two. */
    place(2, -1);
    CHECK(near(estimate(2, 400.0, 0), (400.0 - remote_us) / 2));
    CHECK(estimate(2, 400.0, 0) < 400.0);

    /* Four GPUs reading a home GPU's buffers: each of the three others
     * reads a quarter of both (32 MiB, 84 us) over its own link, but the
     * home GPU sends all 96 MiB through its ports: 252 us. */
    links(4);
    place(4, 0);
    CHECK(near(estimate(4, 200.0, 0), 3 * remote_us / 2));

    /* The same launch as it would run with both buffers spread, the
     * question of a split that placement could make pay: the whole launch
     * read nothing remotely, and each slice finds its quarter at home. */
    spread = true;
    CHECK(near(estimate(4, 200.0, 0), 50.0));
    /* Spread already: as without the question. */
    place(4, -1);
    CHECK(near(estimate(4, 400.0, 0), (400.0 - 3 * remote_us / 2) / 4));
    spread = false;
    CHECK(near(estimate(4, 400.0, 0), (400.0 - 3 * remote_us / 2) / 4));
    place(4, 0);

    /* x in managed memory: split, its pages would fault over to every
     * GPU's slice and back, so the split never pays. Without the driver's
     * answer (or for pool memory) it is estimated as above. */
    x_at = BASE_MANAGED;
    CHECK(near(estimate(4, 200.0, 0), 3 * remote_us / 4)); /* no driver: y alone counts */
    mgpu_drv.cuPointerGetAttribute = stub_pointer_attribute;
    CHECK(isinf(estimate(4, 200.0, 0)));
    spread = true;
    CHECK(isinf(estimate(4, 200.0, 0)));
    spread = false;
    x_at = BASE_X;
    CHECK(near(estimate(4, 200.0, 0), 3 * remote_us / 2));

    /* A kernel that loads or stores through pointers of unknown origin,
     * or one without analysis of its parameters: no estimate. */
    CHECK(estimate(4, 200.0, MGPU_NOTE_UNKNOWN_LOAD) < 0);
    CHECK(estimate(4, 200.0, MGPU_NOTE_UNKNOWN_STORE) < 0);

    /* Atomics into y, both buffers spread: 128 MiB take 28 us at local
     * bandwidth. A 1 ms whole launch spends the rest on its atomics, which
     * stay as long split and take as long again for the three quarters of
     * the grid away from y's owner, GPU 0 (y's first quarter is the most
     * any GPU holds, the first found). */
    place(4, -1);
    double bytes_us = 2.0 * (double)BUFFER_BYTES / (4800.0 * 1e9) * 1e6;
    CHECK(near(estimate_launch(4, 1000.0, 0, true), (1000.0 - bytes_us) * 1.75));
    /* The same launch without atomics splits well. */
    CHECK(estimate(4, 1000.0, 0) < 1000.0 / 2);
    /* Atomics in a launch its bytes explain (under 4 x 28 us), on the home
     * GPU: the bytes' estimate, as without them. */
    place(4, 0);
    CHECK(near(estimate_launch(4, 100.0, 0, true), estimate(4, 100.0, 0)));
    /* Privatised: no atomics meet. MGPU_MIRROR alone does not say so: under
     * auto, a split may run without privatised copies. */
    place(4, -1);
    privatised = true;
    CHECK(estimate_launch(4, 1000.0, 0, true) < 1000.0 / 2);
    privatised = false;
    mgpu_cfg.mirror = MGPU_MIRROR_AUTO;
    CHECK(near(estimate_launch(4, 1000.0, 0, true), (1000.0 - bytes_us) * 1.75));
    mgpu_cfg.mirror = MGPU_MIRROR_NEVER;

    /* MGPU_FOOTPRINTS=on. Two GPUs, both buffers on the home GPU. With the
     * elementwise kernel's footprint each slice touches its half, as its
     * share says; off, the footprint is not read. */
    links(2);
    place(2, 0);
    footprint = &fp_elementwise;
    CHECK(near(estimate(2, 60.0, 0), 30.0 + remote_us));
    mgpu_cfg.footprints = true;
    CHECK(near(estimate(2, 60.0, 0), 30.0 + remote_us));
    /* A column walk: every slice reads all of x, GPU 1 its half of y and
     * all of x over the link (96 MiB), where shares said 64 MiB. */
    footprint = &fp_column_walk;
    CHECK(near(estimate(2, 60.0, 0), 30.0 + 1.5 * remote_us));
    /* Spread along the cut, the walk still reads the other half of x. */
    place(2, -1);
    CHECK(near(estimate(2, 400.0, 0), (400.0 - remote_us) / 2 + remote_us / 2));
    mgpu_cfg.footprints = false;
    CHECK(near(estimate(2, 400.0, 0), (400.0 - remote_us) / 2));
    footprint = NULL;
    return check_failures;
}
