/* Owns the probes' tables at exit (see probe_tables.h): the built-in
 * tools' (found by their maps' names: tc_ thread-count, ll_
 * launch-latency, bt_ block-time) and a summary of every other map. */
#include "probes/probe_tables.h"

#include "ptx/ptx_passes.h"

#include <stdlib.h>
#include <string.h>

#define NAME_WIDTH 34

unsigned long long mgpu_probe_hist_low(unsigned bucket)
{
    if (bucket < 8)
        return bucket;
    unsigned e = (bucket - 8) / 8 + 3, m = (bucket - 8) % 8;
    return (8ull + m) << (e - 3);
}

unsigned mgpu_probe_hist_bucket(unsigned long long value)
{
    if (value < 8)
        return (unsigned)value;
    unsigned e = 63 - (unsigned)__builtin_clzll(value);
    return 8 + (e - 3) * 8 + (unsigned)((value >> (e - 3)) & 7);
}

const uint64_t *mgpu_probe_results_map(const struct mgpu_probe_results *r, const char *name,
                                       int gpu, uint64_t *words)
{
    if (gpu < 0 || gpu >= r->ngpus || r->maps[gpu] == NULL)
        return NULL;
    for (size_t i = 0; i < r->set->nmaps; i++)
        if (strcmp(r->set->maps[i].name, name) == 0) {
            const struct ptx_probe_map *map = &r->set->maps[i];
            *words = map->kind == PTX_PROBE_ARRAY ? map->length : ptx_probe_map_bytes(map) / 8;
            return r->maps[gpu] + r->map_offset[i];
        }
    return NULL;
}

uint64_t mgpu_probe_ring_records(const struct ptx_probe_map *map, const uint64_t *ring)
{
    return ring[0] < map->length ? ring[0] : map->length;
}

/* A name cut to `width` characters, with "..." where cut. */
static const char *fit(const char *name, char *buf, size_t width)
{
    size_t n = strlen(name);
    if (n <= width)
        return name;
    snprintf(buf, width + 1, "%.*s...", (int)(width - 3), name);
    return buf;
}

static const char *kernel_name(const struct mgpu_probe_results *r, unsigned id, char *buf)
{
    if (id >= r->nkernels)
        return "?";
    const struct mgpu_probe_kernel *k = &r->kernels[id];
    return fit(k->pretty ? k->pretty : k->name, buf, NAME_WIDTH);
}

static void gpu_label(const struct mgpu_probe_results *r, int g, char *buf, size_t size)
{
    bool repeated = false;
    for (int e = 0; e < r->ngpus && r->gpu_devices; e++)
        repeated |= e != g && r->gpu_devices[e] == r->gpu_devices[g];
    if (repeated)
        snprintf(buf, size, "%d (dev %d)", g, r->gpu_devices[g]);
    else
        snprintf(buf, size, "%d", g);
}

static bool has_map(const struct mgpu_probe_results *r, const char *name)
{
    for (size_t i = 0; i < r->set->nmaps; i++)
        if (strcmp(r->set->maps[i].name, name) == 0)
            return true;
    return false;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The p-th percentile (0..100) of n sorted values. */
static uint64_t percentile(const uint64_t *sorted, size_t n, unsigned p)
{
    if (n == 0)
        return 0;
    size_t i = (n - 1) * p / 100;
    return sorted[i];
}

/* --- thread-count ------------------------------------------------------- */

/* Kernel k's blocks on GPU g: its row of the per-SM map. */
static uint64_t kernel_total(const struct mgpu_probe_results *r, const char *map, unsigned k, int g)
{
    uint64_t words, sum = 0;
    const uint64_t *v = mgpu_probe_results_map(r, map, g, &words);
    if (k >= MGPU_PROBE_TOOL_KERNELS)
        k = MGPU_PROBE_TOOL_KERNELS - 1;
    for (uint64_t sm = 0; v && sm < MGPU_PROBE_SLICE_SMS; sm++)
        if ((uint64_t)k * MGPU_PROBE_SLICE_SMS + sm < words)
            sum += v[(uint64_t)k * MGPU_PROBE_SLICE_SMS + sm];
    return sum;
}

static void print_thread_count(const struct mgpu_probe_results *r, FILE *out)
{
    fprintf(out, "\nthread-count: blocks and threads each GPU ran, per kernel\n");
    fprintf(out, "  %-*s %-12s %14s %16s %7s\n", NAME_WIDTH, "kernel", "GPU", "blocks", "threads",
            "share");
    char name[NAME_WIDTH + 1], label[32];
    for (unsigned k = 0; k < r->nkernels && k < MGPU_PROBE_TOOL_KERNELS; k++) {
        uint64_t total = 0;
        for (int g = 0; g < r->ngpus; g++)
            total += kernel_total(r, "tc_blocks", k, g);
        if (total == 0)
            continue;
        /* Threads are the blocks counted times the launches' block size,
         * which the host knows: a second atomic per block to count them
         * cost vector_add a point (one H200). A kernel launched with
         * blocks of several sizes (or, in the last row, kernels of
         * different sizes) has its blocks counted, not its threads. */
        unsigned size = 0;
        bool several = false;
        for (unsigned j = k; j < r->nkernels && (j == k || k == MGPU_PROBE_TOOL_KERNELS - 1); j++) {
            const struct mgpu_probe_kernel *pk = &r->kernels[j];
            if (pk->block_threads_max == 0)
                continue; /* not launched */
            several |= pk->block_threads_min != pk->block_threads_max ||
                       (size != 0 && size != pk->block_threads_max);
            size = pk->block_threads_max;
        }
        if (several)
            size = 0;
        for (int g = 0; g < r->ngpus; g++) {
            uint64_t blocks = kernel_total(r, "tc_blocks", k, g);
            if (blocks == 0)
                continue;
            gpu_label(r, g, label, sizeof label);
            char threads[24] = "-";
            if (size > 0)
                snprintf(threads, sizeof threads, "%llu", (unsigned long long)blocks * size);
            fprintf(out, "  %-*s %-12s %14llu %16s %6.1f%%\n", NAME_WIDTH,
                    k == MGPU_PROBE_TOOL_KERNELS - 1 && r->nkernels > MGPU_PROBE_TOOL_KERNELS
                        ? "(kernels 63 and on)"
                        : kernel_name(r, k, name),
                    label, (unsigned long long)blocks, threads,
                    100.0 * (double)blocks / (double)total);
        }
        fprintf(out, "  %-*s %-12s %14llu", NAME_WIDTH, "", "all", (unsigned long long)total);
        if (size > 0)
            fprintf(out, " %16llu\n", (unsigned long long)total * size);
        else if (several)
            fprintf(out, "\n  %-*s blocks of several sizes: threads not counted\n", NAME_WIDTH, "");
        else
            fprintf(out, "\n");
    }
    fprintf(out, "  per GPU, blocks per multiprocessor (all kernels):\n");
    fprintf(out, "  %-12s %6s %14s %10s %10s %10s\n", "GPU", "SMs", "blocks", "min", "median",
            "max");
    for (int g = 0; g < r->ngpus; g++) {
        uint64_t words;
        const uint64_t *v = mgpu_probe_results_map(r, "tc_blocks", g, &words);
        if (v == NULL)
            continue;
        uint64_t per_sm[MGPU_PROBE_SLICE_SMS] = {0}, used[MGPU_PROBE_SLICE_SMS], total = 0;
        for (uint64_t i = 0; i < words; i++)
            per_sm[i % MGPU_PROBE_SLICE_SMS] += v[i];
        size_t n = 0;
        for (size_t sm = 0; sm < MGPU_PROBE_SLICE_SMS; sm++)
            if (per_sm[sm]) {
                used[n++] = per_sm[sm];
                total += per_sm[sm];
            }
        if (n == 0)
            continue;
        qsort(used, n, sizeof *used, compare_u64);
        gpu_label(r, g, label, sizeof label);
        fprintf(out, "  %-12s %6zu %14llu %10llu %10llu %10llu\n", label, n,
                (unsigned long long)total, (unsigned long long)used[0],
                (unsigned long long)percentile(used, n, 50), (unsigned long long)used[n - 1]);
    }
}

/* The sampling of the probes in the file that declares `map`: a memory
 * probe's accesses (1 when none), and the blocks of the most sampled
 * probe (1: every block). */
static void sampling_of(const struct mgpu_probe_results *r, const char *map, unsigned *every,
                        unsigned *blocks)
{
    *every = *blocks = 1;
    for (size_t m = 0; m < r->set->nmaps; m++) {
        if (strcmp(r->set->maps[m].name, map) != 0)
            continue;
        for (size_t i = 0; i < r->set->nprobes; i++) {
            const struct ptx_probe *p = &r->set->probes[i];
            if (p->file != r->set->maps[m].file)
                continue;
            if (ptx_probe_at_access(p->place))
                *every = p->every;
            if (p->blocks > *blocks)
                *blocks = p->blocks;
        }
    }
}

/* A tool's line saying which blocks its numbers come from, when sampled. */
static void print_block_sampling(FILE *out, unsigned blocks)
{
    if (blocks > 1)
        fprintf(out,
                "  (sampled: one block in %u of each GPU's slice, every block of a grid of "
                "at most %u)\n",
                blocks, MGPU_PTX_PROBE_EVERY_BLOCK_GRID);
}

/* --- slices: launch-latency and block-time's busy time ------------------ */

size_t mgpu_probe_slice_capacity(const struct mgpu_probe_results *r, const char *first_map)
{
    uint64_t words;
    for (int g = 0; g < r->ngpus; g++)
        if (mgpu_probe_results_map(r, first_map, g, &words) != NULL)
            return (size_t)(words / MGPU_PROBE_SLICE_SMS);
    return 0;
}

size_t mgpu_probe_slices(const struct mgpu_probe_results *r, const char *first_map,
                         const char *last_map, int g, struct mgpu_probe_slice *out)
{
    uint64_t nf, nl;
    const uint64_t *first = mgpu_probe_results_map(r, first_map, g, &nf);
    const uint64_t *last = mgpu_probe_results_map(r, last_map, g, &nl);
    if (first == NULL || last == NULL || nf != nl)
        return 0;
    const uint64_t mask = (1ull << MGPU_PROBE_SLICE_TIME_BITS) - 1;
    size_t n = 0;
    for (uint64_t slot = 0; slot < nf / MGPU_PROBE_SLICE_SMS; slot++) {
        const uint64_t *f = first + slot * MGPU_PROBE_SLICE_SMS;
        const uint64_t *l = last + slot * MGPU_PROBE_SLICE_SMS;
        uint64_t launch = 0;
        for (size_t sm = 0; sm < MGPU_PROBE_SLICE_SMS; sm++)
            if ((f[sm] >> MGPU_PROBE_SLICE_TIME_BITS) > launch)
                launch = f[sm] >> MGPU_PROBE_SLICE_TIME_BITS;
        if (launch == 0)
            continue;
        uint64_t start = mask, end = 0;
        bool ended = false;
        for (size_t sm = 0; sm < MGPU_PROBE_SLICE_SMS; sm++) {
            if (f[sm] >> MGPU_PROBE_SLICE_TIME_BITS == launch && mask - (f[sm] & mask) < start)
                start = mask - (f[sm] & mask);
            if (l[sm] >> MGPU_PROBE_SLICE_TIME_BITS == launch) {
                ended = true;
                if ((l[sm] & mask) > end)
                    end = l[sm] & mask;
            }
        }
        if (!ended || end < start)
            continue;
        out[n++] =
            (struct mgpu_probe_slice){launch, r->run_start_ns + start, r->run_start_ns + end};
    }
    return n;
}

int32_t mgpu_probe_launch_kernel(const struct mgpu_probe_results *r, uint64_t sequence)
{
    return sequence >= 1 && sequence <= r->launches_kept ? r->launch_kernel[sequence] : -1;
}

static void print_latency(const struct mgpu_probe_results *r, FILE *out)
{
    size_t capacity = mgpu_probe_slice_capacity(r, "ll_first");
    fprintf(out, "\nlaunch-latency: per kernel and GPU, medians over the last %zu launches (us)\n",
            capacity);
    unsigned sample_every, sample_blocks;
    sampling_of(r, "ll_first", &sample_every, &sample_blocks);
    print_block_sampling(out, sample_blocks);
    fprintf(out, "  %-*s %-12s %8s %12s %12s %12s %10s\n", NAME_WIDTH, "kernel", "GPU", "launches",
            "call->first", "first->last", "after first", "max skew");
    /* Per GPU its slices, and per launch slot the earliest start on any GPU. */
    struct mgpu_probe_slice *slices[MGPU_MAX_GPUS] = {NULL};
    size_t counts[MGPU_MAX_GPUS] = {0};
    uint64_t *earliest = calloc(capacity + 1, sizeof *earliest);
    uint64_t *values = malloc((capacity + 1) * sizeof *values);
    for (int g = 0; g < r->ngpus && earliest && values; g++) {
        slices[g] = malloc((capacity + 1) * sizeof *slices[g]);
        counts[g] = slices[g] ? mgpu_probe_slices(r, "ll_first", "ll_last", g, slices[g]) : 0;
        for (size_t i = 0; i < counts[g]; i++) {
            uint64_t *e = &earliest[slices[g][i].sequence % capacity];
            if (*e == 0 || slices[g][i].first_ns < *e)
                *e = slices[g][i].first_ns;
        }
    }
    char name[NAME_WIDTH + 1], label[32];
    for (unsigned k = 0; earliest && values && k < r->nkernels; k++)
        for (int g = 0; g < r->ngpus; g++) {
            double med[3] = {0, 0, 0}, max_skew = 0;
            size_t n = 0;
            for (int which = 0; which < 3; which++) {
                n = 0;
                for (size_t i = 0; i < counts[g]; i++) {
                    const struct mgpu_probe_slice *s = &slices[g][i];
                    if (mgpu_probe_launch_kernel(r, s->sequence) != (int32_t)k)
                        continue;
                    uint64_t host = r->launch_host_ns[s->sequence];
                    uint64_t v = which == 0   ? (s->first_ns > host ? s->first_ns - host : 0)
                                 : which == 1 ? s->last_ns - s->first_ns
                                              : s->first_ns - earliest[s->sequence % capacity];
                    values[n++] = v;
                    if (which == 2 && (double)v > max_skew)
                        max_skew = (double)v;
                }
                qsort(values, n, sizeof *values, compare_u64);
                med[which] = (double)percentile(values, n, 50) / 1e3;
            }
            if (n == 0)
                continue;
            gpu_label(r, g, label, sizeof label);
            fprintf(out, "  %-*s %-12s %8zu %12.1f %12.1f %12.1f %10.1f\n", NAME_WIDTH,
                    kernel_name(r, k, name), label, n, med[0], med[1], med[2], max_skew / 1e3);
        }
    for (int g = 0; g < r->ngpus; g++)
        free(slices[g]);
    free(earliest);
    free(values);
}

/* --- block-time ---------------------------------------------------------- */

static void print_block_time(const struct mgpu_probe_results *r, FILE *out)
{
    size_t capacity = mgpu_probe_slice_capacity(r, "bt_first");
    fprintf(out,
            "\nblock-time: per kernel and GPU, block durations (us) and busy time (last %zu "
            "launches)\n",
            capacity);
    unsigned sample_every, sample_blocks;
    sampling_of(r, "bt_hist", &sample_every, &sample_blocks);
    print_block_sampling(out, sample_blocks);
    fprintf(out, "  %-*s %-12s %12s %8s %8s %8s %8s %10s\n", NAME_WIDTH, "kernel", "GPU", "blocks",
            "p50", "p90", "p99", "max", "busy ms");
    struct mgpu_probe_slice *slices = malloc((capacity + 1) * sizeof *slices);
    char name[NAME_WIDTH + 1], label[32];
    const size_t row = (size_t)MGPU_PROBE_HIST_COPIES * MGPU_PROBE_HIST_BUCKETS;
    for (unsigned k = 0; slices && k < r->nkernels && k < MGPU_PROBE_TOOL_KERNELS; k++)
        for (int g = 0; g < r->ngpus; g++) {
            uint64_t words, max_words;
            const uint64_t *copies = mgpu_probe_results_map(r, "bt_hist", g, &words);
            const uint64_t *max = mgpu_probe_results_map(r, "bt_max", g, &max_words);
            if (copies == NULL || max == NULL || words < (k + 1) * row)
                continue;
            uint64_t hist[MGPU_PROBE_HIST_BUCKETS] = {0}, blocks = 0;
            for (size_t c = 0; c < MGPU_PROBE_HIST_COPIES; c++)
                for (unsigned b = 0; b < MGPU_PROBE_HIST_BUCKETS; b++)
                    hist[b] += copies[k * row + c * MGPU_PROBE_HIST_BUCKETS + b];
            for (unsigned b = 0; b < MGPU_PROBE_HIST_BUCKETS; b++)
                blocks += hist[b];
            if (blocks == 0)
                continue;
            double per_ns = r->cycles_per_ns[g] > 0 ? r->cycles_per_ns[g] : 1;
            double longest = k < max_words ? (double)max[k] / per_ns / 1e3 : 0;
            double pct[3];
            const unsigned wanted[3] = {50, 90, 99};
            for (int p = 0; p < 3; p++) {
                uint64_t rank = (blocks - 1) * wanted[p] / 100, seen = 0;
                unsigned b = 0;
                while (b < MGPU_PROBE_HIST_BUCKETS - 1 && seen + hist[b] <= rank)
                    seen += hist[b++];
                /* the bucket's middle, which may lie past the longest block */
                double low = (double)mgpu_probe_hist_low(b);
                double high =
                    b + 1 < MGPU_PROBE_HIST_BUCKETS ? (double)mgpu_probe_hist_low(b + 1) : low;
                pct[p] = (low + high) / 2 / per_ns / 1e3;
                if (pct[p] > longest)
                    pct[p] = longest;
            }
            size_t n = mgpu_probe_slices(r, "bt_first", "bt_last", g, slices);
            double busy = 0;
            for (size_t i = 0; i < n; i++)
                if (mgpu_probe_launch_kernel(r, slices[i].sequence) == (int32_t)k)
                    busy += (double)(slices[i].last_ns - slices[i].first_ns);
            gpu_label(r, g, label, sizeof label);
            fprintf(out, "  %-*s %-12s %12llu %8.2f %8.2f %8.2f %8.2f %10.3f\n", NAME_WIDTH,
                    kernel_name(r, k, name), label, (unsigned long long)blocks, pct[0], pct[1],
                    pct[2], longest, busy / 1e6);
        }
    free(slices);
}

/* --- memory-locality ----------------------------------------------------- */

#define LOCALITY_NAME_WIDTH 22

struct locality_row {
    uint64_t local, remote, replica, outside;
    uint64_t from[MGPU_MAX_GPUS]; /* remote accesses by the GPU that owns the page */
};

/* Kernel k's parameter slot on GPU g, from ml_counts. */
static bool locality_of(const struct mgpu_probe_results *r, unsigned k, unsigned slot, int g,
                        struct locality_row *row)
{
    uint64_t words;
    const uint64_t *v = mgpu_probe_results_map(r, "ml_counts", g, &words);
    const uint64_t copy_words =
        (uint64_t)MGPU_PROBE_TOOL_KERNELS * MGPU_PROBE_LOCALITY_SLOTS * MGPU_PROBE_LOCALITY_CLASSES;
    if (v == NULL || words != MGPU_PROBE_LOCALITY_COPIES * copy_words)
        return false;
    for (uint64_t copy = 0; copy < MGPU_PROBE_LOCALITY_COPIES; copy++) {
        uint64_t at = copy * copy_words + ((uint64_t)k * MGPU_PROBE_LOCALITY_SLOTS + slot) *
                                              MGPU_PROBE_LOCALITY_CLASSES;
        row->outside += v[at + MGPU_PROBE_LOCALITY_OUTSIDE];
        row->replica += v[at + MGPU_PROBE_LOCALITY_REPLICA];
        for (int owner = 0; owner < MGPU_PROBE_LOCALITY_CLASSES - 2 && owner < MGPU_MAX_GPUS;
             owner++) {
            uint64_t n = v[at + 2 + owner];
            if (owner == g) {
                row->local += n;
            } else {
                row->remote += n;
                row->from[owner] += n;
            }
        }
    }
    return true;
}

static void print_locality_row(const struct mgpu_probe_results *r, FILE *out, const char *kernel,
                               const char *param, const char *gpu, const struct locality_row *row)
{
    uint64_t total = row->local + row->remote + row->replica + row->outside;
    double pct = total ? 100.0 / (double)total : 0;
    int most = -1;
    for (int g = 0; g < r->ngpus && g < MGPU_MAX_GPUS; g++)
        if (row->from[g] > 0 && (most < 0 || row->from[g] > row->from[most]))
            most = g;
    char most_text[48] = "";
    if (most >= 0) {
        char label[32];
        gpu_label(r, most, label, sizeof label);
        snprintf(most_text, sizeof most_text, "GPU %s %.0f%%", label,
                 pct * (double)row->from[most]);
    }
    fprintf(out, "  %-*s %-5s %-11s %11llu %5.1f%% %5.1f%% %5.1f%% %5.1f%% %s\n",
            LOCALITY_NAME_WIDTH, kernel, param, gpu, (unsigned long long)total,
            pct * (double)row->local, pct * (double)row->remote, pct * (double)row->replica,
            pct * (double)row->outside, most_text);
}

static void print_locality(const struct mgpu_probe_results *r, FILE *out)
{
    unsigned every, blocks;
    sampling_of(r, "ml_counts", &every, &blocks);
    fprintf(out,
            "\nmemory-locality: global accesses (one in %u of each thread's), by where the "
            "address lies\n",
            every);
    print_block_sampling(out, blocks);
    fprintf(out, "  %-*s %-5s %-11s %11s %6s %6s %6s %6s %s\n", LOCALITY_NAME_WIDTH, "kernel",
            "param", "GPU", "accesses", "local", "remote", "replica", "outside", "most remote");
    char name[NAME_WIDTH + 1], short_name[LOCALITY_NAME_WIDTH + 1], label[32], param[16];
    bool any = false;
    for (unsigned k = 0; k < r->nkernels && k < MGPU_PROBE_TOOL_KERNELS; k++) {
        const char *kernel =
            k == MGPU_PROBE_TOOL_KERNELS - 1 && r->nkernels > MGPU_PROBE_TOOL_KERNELS
                ? "(kernels 63 and on)"
                : fit(kernel_name(r, k, name), short_name, LOCALITY_NAME_WIDTH);
        for (unsigned slot = 0; slot < MGPU_PROBE_LOCALITY_SLOTS; slot++) {
            struct locality_row all;
            memset(&all, 0, sizeof all);
            int rows = 0;
            if (slot == 0)
                snprintf(param, sizeof param, "other");
            else
                snprintf(param, sizeof param, "%u", slot - 1);
            for (int g = 0; g < r->ngpus; g++) {
                struct locality_row row;
                memset(&row, 0, sizeof row);
                if (!locality_of(r, k, slot, g, &row) ||
                    row.local + row.remote + row.replica + row.outside == 0)
                    continue;
                locality_of(r, k, slot, g, &all);
                gpu_label(r, g, label, sizeof label);
                print_locality_row(r, out, kernel, param, label, &row);
                rows++;
            }
            if (rows > 1)
                print_locality_row(r, out, kernel, param, "all", &all);
            any |= rows > 0;
        }
    }
    if (!any)
        fprintf(out, "  (no access sampled: no probed kernel ran, or none reads global memory)\n");
    fprintf(out,
            "  param: the kernel parameter the access's address derives from (mgpu's analysis);"
            " other: none it could name\n");
}

/* --- every other map ------------------------------------------------------ */

static bool tool_map(const char *name)
{
    return strncmp(name, "tc_", 3) == 0 || strncmp(name, "ll_", 3) == 0 ||
           strncmp(name, "bt_", 3) == 0 || strncmp(name, "ml_", 3) == 0;
}

#define SHOWN_ENTRIES 8

static void print_other_maps(const struct mgpu_probe_results *r, FILE *out)
{
    bool any = false;
    char label[32];
    for (size_t i = 0; i < r->set->nmaps; i++) {
        const struct ptx_probe_map *map = &r->set->maps[i];
        if (tool_map(map->name))
            continue;
        if (!any)
            fprintf(out, "\nmaps (MGPU_PROBE_OUT has every entry and record):\n");
        any = true;
        for (int g = 0; g < r->ngpus; g++) {
            uint64_t words;
            const uint64_t *data = mgpu_probe_results_map(r, map->name, g, &words);
            if (data == NULL)
                continue;
            gpu_label(r, g, label, sizeof label);
            if (map->kind == PTX_PROBE_RING) {
                uint64_t kept = mgpu_probe_ring_records(map, data);
                fprintf(out, "  %-24s GPU %-12s ring: %llu records, %llu dropped\n", map->name,
                        label, (unsigned long long)kept, (unsigned long long)(data[1]));
                continue;
            }
            char line[160];
            size_t used = 0, set = 0;
            unsigned long long sum = 0;
            for (uint64_t e = 0; e < words; e++) {
                if (data[e] == map->initial)
                    continue;
                set++;
                sum += data[e];
                if (set <= SHOWN_ENTRIES && used < sizeof line)
                    used += (size_t)snprintf(line + used, sizeof line - used, " [%llu]=%llu",
                                             (unsigned long long)e, (unsigned long long)data[e]);
            }
            if (used >= sizeof line)
                used = sizeof line - 1;
            line[used] = '\0';
            fprintf(out, "  %-24s GPU %-12s %zu of %llu set, sum %llu:%s%s\n", map->name, label,
                    set, (unsigned long long)words, sum, line, set > SHOWN_ENTRIES ? " ..." : "");
        }
    }
}

/* --- the whole ------------------------------------------------------------- */

static void print_attachments(const struct mgpu_probe_results *r, FILE *out)
{
    for (size_t f = 0; f < r->set->nfiles; f++) {
        size_t attached = 0, probes = 0;
        for (size_t p = 0; p < r->set->nprobes; p++) {
            if (r->set->probes[p].file != f)
                continue;
            probes++;
            size_t kernels = 0;
            for (unsigned k = 0; k < r->nkernels; k++)
                kernels += p < 64 && (r->kernels[k].probes >> p & 1);
            attached += kernels > 0;
            char sampled[48] = "";
            if (r->set->probes[p].blocks > 1)
                snprintf(sampled, sizeof sampled, " (in one block in %u)",
                         r->set->probes[p].blocks);
            fprintf(out, "  %s at %s%s of '%s': %zu kernel%s\n", r->set->probes[p].function,
                    ptx_probe_place_name(r->set->probes[p].place), sampled, r->set->probes[p].glob,
                    kernels, kernels == 1 ? "" : "s");
        }
        if (attached == 0)
            fprintf(out,
                    "mgpu: error: probe %s attaches to no kernel the program ran from mgpu's "
                    "rewritten modules; check its globs against `mgpu-ptx list PROGRAM`\n",
                    r->set->files[f].name);
        (void)probes;
    }
}

void mgpu_probe_tables_print(const struct mgpu_probe_results *r, FILE *out)
{
    char label[32];
    fprintf(out, "\nmgpu probes: %zu file%s, %llu launch%s numbered\n", r->set->nfiles,
            r->set->nfiles == 1 ? "" : "s", (unsigned long long)r->launches,
            r->launches == 1 ? "" : "es");
    print_attachments(r, out);
    for (size_t i = 0; i < r->nunprobed; i++)
        fprintf(out, "  not probed: %s\n", r->unprobed[i]);
    for (int g = 0; g < r->ngpus; g++)
        if (r->maps[g] != NULL) {
            gpu_label(r, g, label, sizeof label);
            fprintf(out,
                    "  GPU %-12s clock: host offset +-%.1f us, timer step %llu ns, "
                    "%.3f SM cycles/ns\n",
                    label, (double)r->clock_error_ns[g] / 1e3,
                    (unsigned long long)r->timer_step_ns[g], r->cycles_per_ns[g]);
        }
    if (r->launches > r->launches_kept)
        fprintf(out, "  launches past the first %llu have no per-launch rows\n",
                (unsigned long long)r->launches_kept);
    if (has_map(r, "tc_blocks"))
        print_thread_count(r, out);
    if (has_map(r, "ll_first") && has_map(r, "ll_last"))
        print_latency(r, out);
    if (has_map(r, "bt_hist") && has_map(r, "bt_max") && has_map(r, "bt_first"))
        print_block_time(r, out);
    if (has_map(r, "ml_counts"))
        print_locality(r, out);
    print_other_maps(r, out);
    fflush(out);
}
