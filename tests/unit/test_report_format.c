/* Unit tests of the report's layout: names shortened, numbers formatted, rows
 * merged and sorted, and no line wider than the report's width. */
#include "check.h"
#include "base/report_format.h"

#include <stdlib.h>

static void check_width(const char *text)
{
    const char *line = text;
    while (*line) {
        size_t n = strcspn(line, "\n");
        if (n > MGPU_REPORT_WIDTH) {
            fprintf(stderr, "line of %zu columns: %.*s\n", n, (int)n, line);
            check_failures++;
        }
        line += n + (line[n] == '\n');
    }
}

/* The report of r as text, its width checked; the caller frees it. */
static char *rendered(const struct mgpu_report *r)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    mgpu_report_render(f, r);
    fclose(f);
    check_width(text);
    return text;
}

int main(void)
{
    char out[128];
    mgpu_format_bytes(out, sizeof out, 512);
    CHECK_STR(out, "512 B");
    mgpu_format_bytes(out, sizeof out, 3ULL << 30);
    CHECK_STR(out, "3.00 GiB");
    mgpu_format_bytes(out, sizeof out, 1536ULL << 10);
    CHECK_STR(out, "1.50 MiB");

    unsigned d1[3] = {4096, 1, 1}, d2[3] = {64, 32, 1}, d3[3] = {8, 4, 2};
    mgpu_format_shape(out, sizeof out, d1);
    CHECK_STR(out, "4096");
    mgpu_format_shape(out, sizeof out, d2);
    CHECK_STR(out, "64x32");
    mgpu_format_shape(out, sizeof out, d3);
    CHECK_STR(out, "8x4x2");

    mgpu_shorten_name("vector_add(float const*, float const*, float*, unsigned long)", 40, out,
                      sizeof out);
    CHECK_STR(out, "vector_add(...)");
    mgpu_shorten_name("short(int)", 40, out, sizeof out);
    CHECK_STR(out, "short(int)");
    mgpu_shorten_name("void gemm<float, 128, 8>(float const*, float const*, float*, int, int, int)",
                      40, out, sizeof out);
    CHECK_STR(out, "gemm<float, 128, 8>(...)");
    mgpu_shorten_name("void very::long_namespace::kernel_with_a_long_name<some::type<int>, 4>(int)",
                      30, out, sizeof out);
    CHECK(strlen(out) == 30);
    CHECK_CONTAINS(out, "...");
    mgpu_shorten_name("x_no_parameters_but_a_name_that_is_too_long_to_fit_here", 20, out,
                      sizeof out);
    CHECK(strlen(out) == 20);

    struct mgpu_report_row rows[45];
    char names[45][64];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < 45; i++) {
        snprintf(names[i], sizeof names[i], "kernel_%02d(float*, int)", i % 42);
        rows[i] = (struct mgpu_report_row){.name = names[i],
                                           .launches = 10,
                                           .gpu_ms = i % 42,
                                           .timed = 10,
                                           .reasons = 1u << (i % 2)};
        rows[i].grid[0] = 100000 + (unsigned)i;
        rows[i].grid[1] = rows[i].grid[2] = 1;
        rows[i].block[0] = 1024;
        rows[i].block[1] = rows[i].block[2] = 1;
    }
    /* Unsplit launches run on another GPU: kernel_41's all on GPU 3,
     * kernel_00's on GPUs 1 and 2 (merged below). */
    rows[41].moved_launches = 10, rows[41].moved_gpu = 3;
    rows[0].moved_launches = 4, rows[0].moved_gpu = 1;
    rows[42].moved_launches = 6, rows[42].moved_gpu = 2;
    /* kernel_00..02 appear twice with other shapes: merged, launches added. */
    size_t n = mgpu_report_merge_rows(rows, 45);
    CHECK(n == 42);
    bool found_kernel_00 = false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, "kernel_00(float*, int)") == 0) {
            found_kernel_00 = true;
            CHECK(rows[i].moved_launches == 10 && rows[i].moved_gpu == -1);
        }
    CHECK(found_kernel_00);
    CHECK_STR(rows[0].name, "kernel_41(float*, int)");
    CHECK(rows[n - 1].launches == 20 && rows[n - 1].shape_varies);

    /* The second longer than a line: wrapped whole, never cut. */
    const char *reasons[] = {"only one GPU selected",
                             "ran whole on the home GPU: one block, or the cost model measured it "
                             "faster whole (MGPU_SPLIT=always splits it anyway)"};
    const char *call_names[] = {
        "cuLaunchKernel",      "cuMemAlloc_v2", "cuDeviceGetAttribute", "cuDeviceGetCount",
        "cuGetProcAddress_v2", "cuMemFree_v2",  "cuDeviceTotalMem_v2",  "cuLaunchKernelEx"};
    unsigned long call_counts[] = {100000, 3, 2, 2, 1, 1, 1, 1};
    unsigned long long pool_now[2] = {1ULL << 30, 1ULL << 30},
                       pool_peak[2] = {2ULL << 30, 1ULL << 30};
    struct mgpu_report r = {
        .gpu_count = 8,
        .home_name = "NVIDIA H200",
        .devices_seen = 8,
        .sm_seen = 1056,
        .mem_seen = 8ULL * 141 << 30,
        .reason_texts = reasons,
        .reason_count = 2,
        .rows = rows,
        .row_count = n,
        .allocations = 3,
        .frees = 3,
        .bytes_allocated = 3ULL << 30,
        .peak_bytes = 3ULL << 30,
        .pool_placement = "distributed",
        .pool_gpus = 2,
        .pool_now = pool_now,
        .pool_peak = pool_peak,
        .copies_split = 5,
        .staged_bytes = 400ULL << 20,
        .lookups = 470,
        .lookups_hooked = 25,
        .call_names = call_names,
        .call_counts = call_counts,
        .call_kinds = 8,
        .calls_total = 100011,
    };
    char *text = rendered(&r);
    CHECK_CONTAINS(
        text,
        "GPUs: 8 selected, home NVIDIA H200; device 0 has 1056 SMs, 1.10 TiB; 8 devices seen");
    CHECK_CONTAINS(text, "kernel_41(float*, int)");
    CHECK_CONTAINS(text, "... and 2 more kernels with 40 launches");
    CHECK_CONTAINS(text, "[1] only one GPU selected");
    CHECK_CONTAINS(text, "[2] ran whole on the home GPU: one block, or the cost model");
    CHECK_CONTAINS(text, "(MGPU_SPLIT=always splits it anyway)");
    CHECK_CONTAINS(text, "no [1]");
    CHECK_CONTAINS(
        text,
        "kernel_41(float*, int)                      10 100041          1024        no [2] @3");
    CHECK_CONTAINS(text, "@g ran whole on GPU g, which holds most of the data it is given");
    CHECK_CONTAINS(text, "memory: 3 allocations (3.00 GiB), 3 frees; peak 3.00 GiB; 0 B still");
    CHECK_CONTAINS(text, "  one address range on 2 GPUs, distributed placement; 5 copies and sets "
                         "split by owner, 0 migrations\n");
    CHECK_CONTAINS(text, "  400.00 MiB of pageable host memory copied to the GPUs through mgpu's "
                         "pinned buffers\n");
    CHECK_CONTAINS(text, "  the pool's memory on each GPU (whole 2 MiB granules, kept for reuse "
                         "until exit):\n  GPU 0: 1.00 GiB now, 2.00 GiB at peak\n");
    CHECK_CONTAINS(text,
                   "driver calls intercepted: 100011:\n  cuLaunchKernel 100000, cuMemAlloc_v2 3,");
    CHECK_CONTAINS(text, "cuLaunchKernelEx 1\n");
    CHECK_CONTAINS(text, "entry points looked up: 470, 25 answered with mgpu's hooks");
    free(text);

    /* Two of the run's GPUs on one device: the header counts the device
     * once and the rows say which device each GPU stands on. */
    int on_device[2] = {0, 0};
    r.gpu_count = 2;
    r.device_count = 1;
    r.devices_seen = 1;
    r.gpu_devices = on_device;
    unsigned long slices[2] = {7, 5};
    r.slices_per_gpu = slices;
    r.slice_gpus = 2;
    text = rendered(&r);
    CHECK_CONTAINS(text, "GPUs: 2 selected on 1 device, home NVIDIA H200; device 0 has 1056 SMs, "
                         "1.10 TiB; 1 device seen");
    CHECK_CONTAINS(text, "  GPU 1 (device 0): 1.00 GiB now, 1.00 GiB at peak\n");
    CHECK_CONTAINS(text,
                   "slices run: 12, on 2 GPUs\n  GPU 0 (device 0): 7\n  GPU 1 (device 0): 5\n");
    free(text);

    /* Mirrors under auto: one line when nothing was mirrored or tried,
     * the counts when something was. */
    r.mirrors_on = true;
    r.mirror_auto = true;
    r.mirror_gain_percent = 5.0;
    text = rendered(&r);
    CHECK_CONTAINS(text, "  mirrors (auto): none made, no kernel shape tried with them\n");
    CHECK(strstr(text, "buffers replicated") == NULL);
    free(text);
    r.mirror_shapes_decided = 2;
    text = rendered(&r);
    CHECK_CONTAINS(text,
                   "  mirrors: 0 buffers replicated, 0 copies on the GPUs, 0 refreshes (0 B)");
    CHECK_CONTAINS(text, "  mirrors (auto): 2 kernel shapes timed with and without, 0 mirrored "
                         "(at least 5% faster)\n");
    CHECK(strstr(text, "none made") == NULL);
    free(text);
    r.mirror_auto = false; /* always: the counts even when all are zero */
    r.mirror_shapes_decided = 0;
    text = rendered(&r);
    CHECK_CONTAINS(text, "  mirrors: 0 buffers replicated, 0 copies on the GPUs");
    free(text);

    struct mgpu_report empty = {.gpu_count = 0};
    text = rendered(&empty);
    CHECK_CONTAINS(text, "kernels: none launched");
    CHECK(strstr(text, "pageable") == NULL);
    free(text);
    CHECK_DONE();
}
