/* Unit tests of which launches and slices mirrors serve (sched/mirror_reads.c)
 * under MGPU_MIRROR=auto and always, with the pool, the run's GPU entries
 * and the replicas stubbed: a copy on a device that holds all of a buffer
 * is never made under auto, nor tried. One H200 listed twice with its data
 * at home made NCCL's communicator for such copies inside a timed loop.
 * Nor, with footprints, of a buffer each slice reads only its part of. */
#include "check.h"
#include "partition/gpu_contexts.h"
#include "partition/gpu_entries.h"
#include "memory/memory_pool.h"
#include "sched/mirror_reads.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_footprint.h"
#include "mirror/replicas.h"
#include "base/config.h"

#define BASE 0x100000000ull
#define BUFFER_BYTES ((size_t)64 << 20)
#define COPY 0x900000000ull

struct mgpu_config mgpu_cfg;

static struct mgpu_gpu_entries entries;
static size_t held_by[MGPU_MAX_GPUS]; /* the buffer's bytes on each entry */
static int reads;                     /* mgpu_replicas_read calls */

const struct mgpu_gpu_entries *mgpu_run_gpus(void)
{
    return &entries;
}

bool mgpu_pool_holds(CUdeviceptr address)
{
    return address >= BASE && address < BASE + BUFFER_BYTES;
}

bool mgpu_pool_find(CUdeviceptr address, struct mgpu_pool_block *out)
{
    if (!mgpu_pool_holds(address))
        return false;
    memset(out, 0, sizeof *out);
    out->start = BASE;
    out->bytes = BUFFER_BYTES;
    out->id = 1;
    return true;
}

int mgpu_pool_bytes_by_gpu(CUdeviceptr address, size_t bytes, size_t held[MGPU_MAX_GPUS])
{
    (void)address;
    (void)bytes;
    int holders = 0;
    for (int g = 0; g < MGPU_MAX_GPUS; g++) {
        held[g] = held_by[g];
        holders += held[g] > 0;
    }
    return holders;
}

bool mgpu_replicas_on(void)
{
    return true;
}

bool mgpu_replicas_exist(void)
{
    return reads > 0;
}

void mgpu_replicas_begin(void) {}

void mgpu_replicas_end(CUstream stream)
{
    (void)stream;
}

CUdeviceptr mgpu_replicas_read(CUdeviceptr start, size_t bytes, unsigned long long id,
                               CUdeviceptr pointer, int gpu, CUcontext ctx, CUcontext home,
                               CUstream stream)
{
    (void)bytes, (void)id, (void)ctx, (void)home, (void)stream;
    reads++;
    return COPY * (CUdeviceptr)(gpu + 1) + (pointer - start);
}

CUdeviceptr mgpu_replicas_private(CUdeviceptr start, size_t bytes, unsigned long long id, int gpu,
                                  CUcontext ctx, CUcontext home, CUstream stream,
                                  bool from_contents, unsigned reduction)
{
    (void)start, (void)bytes, (void)id, (void)ctx, (void)home, (void)stream;
    (void)from_contents, (void)reduction;
    return COPY * (CUdeviceptr)(gpu + 1);
}

void mgpu_replicas_written(CUdeviceptr dst, size_t bytes)
{
    (void)dst, (void)bytes;
}

void mgpu_replicas_written_anywhere(void) {}

bool mgpu_private_reductions_ready(CUcontext home)
{
    (void)home;
    return true;
}

/* The run: n entries on the devices given; the buffer all on entry `on`
 * (or, with on < 0, in equal parts on every entry). */
static void run_on(int n, const int *devices, int on)
{
    memset(&entries, 0, sizeof entries);
    entries.count = n;
    memcpy(entries.device, devices, (size_t)n * sizeof devices[0]);
    memset(held_by, 0, sizeof held_by);
    for (int g = 0; g < n; g++)
        held_by[g] = on < 0 ? BUFFER_BYTES / (size_t)n : g == on ? BUFFER_BYTES : 0;
}

/* add(const float *in, float *out): loads through 0, stores through 1. */
static const size_t offsets[2] = {0, 8}, sizes[2] = {8, 8};
static const unsigned loads_and_stores[2] = {MGPU_PARAM_LOAD, MGPU_PARAM_STORE};
static const unsigned no_reduction[2] = {0, 0};
static const unsigned sums_into_1[2] = {0, MGPU_REDUCTION(MGPU_REDUCE_ADD, MGPU_REDUCE_U32)};
static const unsigned loads_and_atomics[2] = {MGPU_PARAM_LOAD, MGPU_PARAM_ATOMIC};

static struct mgpu_gpu_kernels kernel(int ngpus, const unsigned *use, const unsigned *reduction)
{
    static const CUcontext contexts[MGPU_MAX_GPUS];
    return (struct mgpu_gpu_kernels){.ngpus = ngpus,
                                     .contexts = contexts,
                                     .nparams = 2,
                                     .param_offsets = offsets,
                                     .param_sizes = sizes,
                                     .param_use = use,
                                     .param_reduction = reduction,
                                     .stride_bound_param = -1};
}

/* Plans a launch split over every entry; returns how many slices read a copy
 * through parameter 0. */
static int slices_reading_copies(const struct mgpu_gpu_kernels *k, void *const *params)
{
    struct mgpu_grid_slice slices[MGPU_MAX_GPUS];
    memset(slices, 0, sizeof slices);
    for (int s = 0; s < entries.count; s++)
        slices[s].gpu = s;
    struct mgpu_mirror_plan plan;
    struct mgpu_mirror_launch launch = {NULL, NULL, slices, entries.count};
    mgpu_mirror_plan_reads(k, params, NULL, &launch, NULL, false, &plan);
    int n = 0;
    for (int j = 0; j < plan.count; j++)
        for (int g = 0; !plan.privatised[j] && plan.param[j] == 0 && g < entries.count; g++)
            n += plan.value[j][g] != 0;
    return n;
}

int main(void)
{
    CUdeviceptr in = BASE + 4096, out = 0x500000000ull; /* out: outside the pool */
    void *params[2] = {&in, &out};
    static const int one_device[4] = {0, 0, 0, 0}, four_devices[4] = {0, 1, 2, 3};
    static const int two_and_two[4] = {0, 0, 1, 1};
    struct mgpu_gpu_kernels reader = kernel(4, loads_and_stores, no_reduction);

    mgpu_cfg.mirror = MGPU_MIRROR_AUTO;
    /* One device listed four times, the buffer spread over its entries or
     * at home: every page is on the device, no copy serves anything. */
    run_on(4, one_device, -1);
    CHECK(!mgpu_mirror_candidates(&reader, params, NULL, NULL));
    CHECK(slices_reading_copies(&reader, params) == 0);
    run_on(4, one_device, 0);
    CHECK(!mgpu_mirror_candidates(&reader, params, NULL, NULL));
    /* Four devices: the entries off the buffer's device read copies. */
    run_on(4, four_devices, 0);
    CHECK(mgpu_mirror_candidates(&reader, params, NULL, NULL));
    CHECK(slices_reading_copies(&reader, params) == 3);
    run_on(4, four_devices, -1);
    CHECK(slices_reading_copies(&reader, params) == 4);
    /* Two devices of two entries, the buffer on the first: its entries read
     * the buffer itself, the second device's share one copy. */
    run_on(4, two_and_two, 0);
    CHECK(mgpu_mirror_candidates(&reader, params, NULL, NULL));
    CHECK(slices_reading_copies(&reader, params) == 2);

    /* A privatisable sum: only entries off the home device privatise. */
    struct mgpu_gpu_kernels summer = kernel(4, loads_and_atomics, sums_into_1);
    run_on(4, one_device, 0);
    CHECK(!mgpu_mirror_candidates(&summer, params, NULL, NULL));
    run_on(4, two_and_two, 0);
    CHECK(mgpu_mirror_candidates(&summer, params, NULL, NULL));

    /* Footprints (MGPU_FOOTPRINTS=on): in[ctaid.x * ntid.x + tid.x] read
     * by 65536 blocks of 256 threads, the 64 MiB buffer's floats one each,
     * cut into four slices of blocks: each reads its quarter, which a
     * spread serves; no copy. A walk the footprint cannot bound (a loop:
     * the slot whole) still gets one; so does any launch with footprints
     * off. */
    mgpu_cfg.mirror = MGPU_MIRROR_AUTO;
    run_on(4, four_devices, 0);
    struct mgpu_fp_node nodes[] = {
        {.op = MGPU_FP_SPECIAL, .value = MGPU_FP_CTAID_X},
        {.op = MGPU_FP_SPECIAL, .value = MGPU_FP_NTID_X},
        {.op = MGPU_FP_MUL, .a = 0, .b = 1},
        {.op = MGPU_FP_SPECIAL, .value = MGPU_FP_TID_X},
        {.op = MGPU_FP_ADD, .a = 2, .b = 3},
        {.op = MGPU_FP_CONST, .value = 4},
        {.op = MGPU_FP_MUL, .a = 4, .b = 5},
    };
    struct mgpu_fp_slot slot = {.param = 0, .offset = 0, .whole = 0};
    struct mgpu_fp_access access = {.slot = 0, .use = MGPU_FP_LOAD, .offset = 6, .bytes = 4};
    struct mgpu_kernel_footprint own_part = {.slots = &slot,
                                             .nslots = 1,
                                             .accesses = &access,
                                             .naccesses = 1,
                                             .nodes = nodes,
                                             .nnodes = 7};
    reader.footprint = &own_part;
    unsigned grid[3] = {65536, 1, 1}, block[3] = {256, 1, 1};
    struct mgpu_grid_slice quarters[4];
    memset(quarters, 0, sizeof quarters);
    for (int s = 0; s < 4; s++) {
        quarters[s].gpu = s;
        quarters[s].first[0] = 16384u * (unsigned)s;
        quarters[s].dims[0] = 16384;
        quarters[s].dims[1] = quarters[s].dims[2] = 1;
    }
    struct mgpu_mirror_launch cut = {grid, block, quarters, 4};
    mgpu_cfg.footprints = false;
    CHECK(mgpu_mirror_candidates(&reader, params, NULL, &cut));
    mgpu_cfg.footprints = true;
    CHECK(!mgpu_mirror_candidates(&reader, params, NULL, &cut));
    struct mgpu_mirror_plan own_plan;
    reads = 0;
    mgpu_mirror_plan_reads(&reader, params, NULL, &cut, NULL, false, &own_plan);
    CHECK(own_plan.count == 0 && reads == 0);
    /* Without the launch's shape, as before. */
    CHECK(mgpu_mirror_candidates(&reader, params, NULL, NULL));
    slot.whole = MGPU_FP_LOAD;
    CHECK(mgpu_mirror_candidates(&reader, params, NULL, &cut));
    mgpu_mirror_plan_reads(&reader, params, NULL, &cut, NULL, false, &own_plan);
    CHECK(own_plan.count == 1 && reads == 3);
    /* What a mirrored try may cost, for the budget for trying: the 64 MiB
     * buffer copied from the home GPU to the three others, by the link
     * model; nothing for the launch whose slices read their own parts,
     * nor without a model. */
    double gbps[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            gbps[a][b] = a == b ? 3000.0 : 100.0;
    struct mgpu_link_model model;
    CHECK(mgpu_link_model_build(&model, four_devices, 4, four_devices, 4, gbps) == 0);
    struct mgpu_link_move to_others[3] = {
        {BUFFER_BYTES, 0, 1}, {BUFFER_BYTES, 0, 2}, {BUFFER_BYTES, 0, 3}};
    double copies = mgpu_mirror_copies_seconds(&reader, params, NULL, &cut, &model);
    CHECK(copies > 0.0 && copies == mgpu_link_copy_seconds(&model, to_others, 3));
    CHECK(mgpu_mirror_copies_seconds(&reader, params, NULL, &cut, NULL) == 0.0);
    slot.whole = 0;
    CHECK(mgpu_mirror_copies_seconds(&reader, params, NULL, &cut, &model) == 0.0);
    reader.footprint = NULL;

    /* always: every entry its own copy, one device or not (for tests). */
    mgpu_cfg.mirror = MGPU_MIRROR_ALWAYS;
    run_on(4, one_device, 0);
    CHECK(mgpu_mirror_candidates(&reader, params, NULL, NULL));
    CHECK(slices_reading_copies(&reader, params) == 4);
    CHECK(mgpu_mirror_candidates(&summer, params, NULL, NULL));
    return check_failures;
}
