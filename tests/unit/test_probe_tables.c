/* The probes' results without a GPU: the duration histogram's buckets,
 * the slices decoded from launch-latency's packed per-multiprocessor words
 * (the latest launch of a slot wins, its earliest start and latest end),
 * the tables and the JSON Lines made of maps filled by hand. */
#include "probes/probe_tables.h"

#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMS MGPU_PROBE_SLICE_SMS
#define SLOTS 1024
#define MASK ((1ull << MGPU_PROBE_SLICE_TIME_BITS) - 1)

static struct ptx_probe_map maps[] = {
    {"tc_blocks", PTX_PROBE_ARRAY, 64 * SMS, 8, 0, 0},
    {"ll_first", PTX_PROBE_ARRAY, SLOTS *SMS, 8, 0, 0},
    {"ll_last", PTX_PROBE_ARRAY, SLOTS *SMS, 8, 0, 0},
    {"counts", PTX_PROBE_ARRAY, 4, 8, 0, 0},
    {"events", PTX_PROBE_RING, 2, 12, 0, 0},
    {"ml_counts", PTX_PROBE_ARRAY,
     MGPU_PROBE_LOCALITY_COPIES * 64 * MGPU_PROBE_LOCALITY_SLOTS *MGPU_PROBE_LOCALITY_CLASSES, 8, 0,
     0},
};
#define ML_COPY (64 * MGPU_PROBE_LOCALITY_SLOTS * MGPU_PROBE_LOCALITY_CLASSES)
#define ML_AT(copy, kernel, slot, class)                                                           \
    ((copy)*ML_COPY +                                                                              \
     ((kernel)*MGPU_PROBE_LOCALITY_SLOTS + (slot)) * MGPU_PROBE_LOCALITY_CLASSES + (class))
#define NMAPS (sizeof maps / sizeof maps[0])

static void check_buckets(void)
{
    unsigned long long values[] = {0, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 123456789, 1ull << 40};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        unsigned b = mgpu_probe_hist_bucket(values[i]);
        CHECK(b < MGPU_PROBE_HIST_BUCKETS);
        CHECK(mgpu_probe_hist_low(b) <= values[i]);
        CHECK(values[i] < mgpu_probe_hist_low(b + 1));
    }
    /* eight buckets per power of two: 1000 lies in [960, 1024) */
    CHECK(mgpu_probe_hist_low(mgpu_probe_hist_bucket(1000)) == 960);
}

int main(void)
{
    check_buckets();

    struct ptx_probe_file file = {"thread-count", NULL, 0};
    struct ptx_probe probes[2] = {
        {.function = "count_blocks", .glob = "*", .place = PTX_PROBE_BLOCK_ENTRY, .every = 1},
        {.function = "where", .glob = "*", .place = PTX_PROBE_ACCESS, .every = 16},
    };
    struct ptx_probe_set set = {&file, 1, probes, 2, maps, NMAPS};
    uint64_t offset[NMAPS + 1] = {0};
    for (size_t i = 0; i < NMAPS; i++)
        offset[i + 1] = offset[i] + (ptx_probe_map_bytes(&maps[i]) + 255) / 256 * 32;
    uint64_t *gpu[2];
    for (int g = 0; g < 2; g++)
        gpu[g] = calloc(offset[NMAPS], sizeof *gpu[g]);
    /* launched with blocks of 256 threads: the tables count 256 per block */
    struct mgpu_probe_kernel kernel = {.name = "vector_add",
                                       .pretty = "vector_add",
                                       .probes = 1,
                                       .block_threads_min = 256,
                                       .block_threads_max = 256};
    uint64_t host_ns[4] = {0, 1001000, 0, 0};
    int32_t launch_kernel[4] = {-1, 0, -1, -1};
    const int devices[2] = {0, 0};
    struct mgpu_probe_results r = {
        .set = &set,
        .ngpus = 2,
        .gpu_devices = devices,
        .maps = {gpu[0], gpu[1]},
        .map_offset = offset,
        .kernels = &kernel,
        .nkernels = 1,
        .launch_host_ns = host_ns,
        .launch_kernel = launch_kernel,
        .launches = 1,
        .launches_kept = 1,
        .run_start_ns = 1000000,
    };

    /* thread-count: kernel 0 ran 96 blocks on GPU 0 (SMs 0 and 5), 32 on GPU 1. */
    gpu[0][offset[0] + 0] = 64;
    gpu[0][offset[0] + 5] = 32;
    gpu[1][offset[0] + 7] = 32;

    /* launch 1 (slot 1) on GPU 0: SM 3 starts at 5000 ns, SM 7 at 4000,
     * ends at 9000 and 8000; on GPU 1, slot 1 holds launch 1025 (newer,
     * same slot) on SM 9 and a stale launch 1 on SM 2, which must lose. */
    uint64_t *f0 = gpu[0] + offset[1] + 1 * SMS, *l0 = gpu[0] + offset[2] + 1 * SMS;
    f0[3] = 1ull << 40 | (MASK - 5000);
    f0[7] = 1ull << 40 | (MASK - 4000);
    l0[3] = 1ull << 40 | 9000;
    l0[7] = 1ull << 40 | 8000;
    uint64_t *f1 = gpu[1] + offset[1] + 1 * SMS, *l1 = gpu[1] + offset[2] + 1 * SMS;
    f1[9] = 1025ull << 40 | (MASK - 70000);
    l1[9] = 1025ull << 40 | 71000;
    f1[2] = 1ull << 40 | (MASK - 100);
    l1[2] = 1ull << 40 | 99999;

    struct mgpu_probe_slice slices[SLOTS];
    CHECK(mgpu_probe_slice_capacity(&r, "ll_first") == SLOTS);
    size_t n = mgpu_probe_slices(&r, "ll_first", "ll_last", 0, slices);
    CHECK(n == 1);
    CHECK(slices[0].sequence == 1);
    CHECK(slices[0].first_ns == 1004000);
    CHECK(slices[0].last_ns == 1009000);
    n = mgpu_probe_slices(&r, "ll_first", "ll_last", 1, slices);
    CHECK(n == 1);
    CHECK(slices[0].sequence == 1025);
    CHECK(slices[0].first_ns == 1070000);
    CHECK(slices[0].last_ns == 1071000);

    /* a user's array and ring */
    gpu[1][offset[3] + 2] = 42;
    uint64_t *ring = gpu[0] + offset[4];
    ring[0] = 5; /* pushes: 2 kept, 3 dropped */
    ring[1] = 3;
    ring[2] = 1111;
    ring[3] = 7;
    ring[4] = 2222;
    ring[5] = 8;

    /* memory-locality, kernel 0's parameter 0 (slot 1): GPU 0 read its own
     * pages 300 times (in two copies) and GPU 1's 100 times; GPU 1 read
     * outside the pool 50 times and a replica 50 times. */
    gpu[0][offset[5] + ML_AT(0, 0, 1, 2)] = 200;
    gpu[0][offset[5] + ML_AT(5, 0, 1, 2)] = 100;
    gpu[0][offset[5] + ML_AT(3, 0, 1, 3)] = 100;
    gpu[1][offset[5] + ML_AT(7, 0, 1, MGPU_PROBE_LOCALITY_OUTSIDE)] = 50;
    gpu[1][offset[5] + ML_AT(2, 0, 1, MGPU_PROBE_LOCALITY_REPLICA)] = 50;

    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    mgpu_probe_tables_print(&r, out);
    fclose(out);
    CHECK_CONTAINS(text, "count_blocks at block-entry of '*': 1 kernel");
    CHECK_CONTAINS(text, "thread-count: blocks and threads each GPU ran");
    CHECK_CONTAINS(text, "0 (dev 0)                96            24576   75.0%");
    CHECK_CONTAINS(text, "1 (dev 0)                32             8192   25.0%");
    CHECK_CONTAINS(text, "all                     128            32768\n");
    /* launch 1 on GPU 0: called at 1001000, first block 1004000: 3.0 us */
    CHECK_CONTAINS(text, "launch-latency: per kernel and GPU");
    CHECK_CONTAINS(text, "0 (dev 0)           1          3.0          5.0          0.0        0.0");
    CHECK_CONTAINS(text, "counts                   GPU 1 (dev 0)    1 of 4 set, sum 42: [2]=42");
    CHECK_CONTAINS(text, "where at access of '*': 0 kernels");
    CHECK_CONTAINS(text, "memory-locality: global accesses (one in 16 of each thread's)");
    CHECK_CONTAINS(
        text, "vector_add             0     0 (dev 0)           400  75.0%  25.0%   0.0%   0.0% "
              "GPU 1 (dev 0) 25%");
    CHECK_CONTAINS(
        text,
        "vector_add             0     1 (dev 0)           100   0.0%   0.0%  50.0%  50.0% \n");
    CHECK_CONTAINS(
        text, "vector_add             0     all                 500  60.0%  20.0%  10.0%  10.0% "
              "GPU 1 (dev 0) 20%");
    CHECK(strstr(text, "ml_counts ") == NULL); /* a tool's map, not among the others */
    CHECK_CONTAINS(text, "events                   GPU 0 (dev 0)    ring: 2 records, 3 dropped");
    free(text);

    /* Blocks of two sizes: the blocks, no threads. */
    kernel.block_threads_min = 128;
    text = NULL;
    out = open_memstream(&text, &size);
    mgpu_probe_tables_print(&r, out);
    fclose(out);
    CHECK_CONTAINS(text, "0 (dev 0)                96                -   75.0%");
    CHECK_CONTAINS(text, "all                     128\n");
    CHECK_CONTAINS(text, "blocks of several sizes: threads not counted");
    free(text);
    kernel.block_threads_min = 256;

    char path[] = "/tmp/mgpu-test-probes-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(mgpu_probe_jsonl_write(&r, path) == 0);
    size = 0;
    FILE *in = fopen(path, "r");
    text = calloc(1, 1 << 16);
    size = in ? fread(text, 1, (1 << 16) - 1, in) : 0;
    if (in)
        fclose(in);
    unlink(path);
    CHECK(size > 0);
    CHECK_CONTAINS(text, "{\"type\":\"kernel\",\"id\":0,\"name\":\"vector_add\"");
    CHECK_CONTAINS(text, "\"block_threads\":[256,256]}");
    CHECK_CONTAINS(text, "{\"type\":\"launch\",\"sequence\":1,\"kernel\":0,\"host_ns\":1001000}");
    CHECK_CONTAINS(text, "\"map\":\"counts\",\"gpu\":1,\"length\":4,\"initial\":0,\"entries\":[[2,42]]}");
    CHECK_CONTAINS(text, "{\"type\":\"ring\",\"map\":\"events\",\"gpu\":0,\"pushed\":5,\"dropped\":3,"
                         "\"record_words\":2}");
    CHECK_CONTAINS(text, "{\"type\":\"record\",\"map\":\"events\",\"gpu\":0,\"index\":1,\"words\":[2222,8]}");
    CHECK_CONTAINS(text, "{\"type\":\"slice\",\"tool\":\"launch-latency\",\"gpu\":0,\"sequence\":1,"
                         "\"kernel\":0,\"first_ns\":1004000,\"last_ns\":1009000}");
    CHECK_CONTAINS(text, "\"gpu\":1,\"sequence\":1025,\"kernel\":-1");
    free(text);
    for (int g = 0; g < 2; g++)
        free(gpu[g]);
    CHECK_DONE();
}
