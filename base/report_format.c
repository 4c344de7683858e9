/* Owns the layout of the report: column widths, name shortening, number
 * formats, the legend of reasons, and merging rows of the same kernel. */
#include "base/report_format.h"

#include <stdlib.h>
#include <string.h>

#define NAME_WIDTH 36
#define HRULE                                                                                      \
    "========================================================================"                     \
    "============================"

void mgpu_format_bytes(char *out, size_t outlen, unsigned long long bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(out, outlen, "%llu B", bytes);
    else
        snprintf(out, outlen, "%.2f %s", v, units[u]);
}

void mgpu_format_shape(char *out, size_t outlen, const unsigned d[3])
{
    if (d[1] == 1 && d[2] == 1)
        snprintf(out, outlen, "%u", d[0]);
    else if (d[2] == 1)
        snprintf(out, outlen, "%ux%u", d[0], d[1]);
    else
        snprintf(out, outlen, "%ux%ux%u", d[0], d[1], d[2]);
}

/* Where the top-level parameter list starts, or NULL. */
static const char *parameter_list(const char *name)
{
    int depth = 0;
    for (const char *p = name; *p; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>' && depth > 0)
            depth--;
        else if (*p == '(' && depth == 0 && p != name)
            return p;
    }
    return NULL;
}

/* Skips a return type: a space at template depth 0 before the name's end. */
static const char *after_return_type(const char *name, const char *end)
{
    int depth = 0;
    const char *start = name;
    for (const char *p = name; p < end; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>' && depth > 0)
            depth--;
        else if (*p == ' ' && depth == 0)
            start = p + 1;
    }
    return start;
}

void mgpu_shorten_name(const char *name, size_t width, char *out, size_t outlen)
{
    if (outlen == 0)
        return;
    if (width + 1 > outlen)
        width = outlen - 1;
    size_t len = strlen(name);
    if (len <= width) {
        memcpy(out, name, len + 1);
        return;
    }
    const char *params = parameter_list(name);
    const char *end = params ? params : name + len;
    const char *start = after_return_type(name, end);
    size_t core = (size_t)(end - start);
    if (params && core + 5 <= width) {
        snprintf(out, outlen, "%.*s(...)", (int)core, start);
        return;
    }
    if (core <= width) {
        snprintf(out, outlen, "%.*s", (int)core, start);
        return;
    }
    snprintf(out, outlen, "%.*s...", (int)(width - 3), start);
}

static int compare_rows(const void *a, const void *b)
{
    const struct mgpu_report_row *x = a, *y = b;
    if (x->gpu_ms != y->gpu_ms)
        return x->gpu_ms < y->gpu_ms ? 1 : -1;
    if (x->launches != y->launches)
        return x->launches < y->launches ? 1 : -1;
    return strcmp(x->name, y->name);
}

size_t mgpu_report_merge_rows(struct mgpu_report_row *rows, size_t n)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j;
        for (j = 0; j < out; j++)
            if (strcmp(rows[j].name, rows[i].name) == 0)
                break;
        if (j == out) {
            rows[out++] = rows[i];
            continue;
        }
        struct mgpu_report_row *m = &rows[j];
        if (memcmp(m->grid, rows[i].grid, sizeof m->grid) != 0 ||
            memcmp(m->block, rows[i].block, sizeof m->block) != 0 || rows[i].shape_varies)
            m->shape_varies = true;
        m->launches += rows[i].launches;
        m->gpu_ms += rows[i].gpu_ms;
        m->timed += rows[i].timed;
        m->reasons |= rows[i].reasons;
        m->split_launches += rows[i].split_launches;
        if (rows[i].moved_launches > 0)
            m->moved_gpu = m->moved_launches == 0 || m->moved_gpu == rows[i].moved_gpu
                               ? rows[i].moved_gpu
                               : -1;
        m->moved_launches += rows[i].moved_launches;
        m->mirrored_params |= rows[i].mirrored_params;
        m->privatised_params |= rows[i].privatised_params;
        if (rows[i].most_slices > m->most_slices)
            m->most_slices = rows[i].most_slices;
    }
    qsort(rows, out, sizeof *rows, compare_rows);
    return out;
}

/* "x8" when every launch was split (into at most 8 slices), "no [2,5]"
 * with the reasons when none was, both when some were; "@3" after the
 * reasons when unsplit launches ran on GPU 3 ("@*": on several). */
static void format_split(char *out, size_t outlen, const struct mgpu_report_row *row)
{
    size_t used = 0;
    if (row->split_launches > 0)
        used = (size_t)snprintf(out, outlen, "x%d", row->most_slices);
    if (row->split_launches == row->launches || used >= outlen)
        return;
    used += (size_t)snprintf(out + used, outlen - used, used ? " no [" : "no [");
    bool first = true;
    for (int i = 0; i < 32 && used < outlen; i++)
        if (row->reasons & (1u << i)) {
            used += (size_t)snprintf(out + used, outlen - used, first ? "%d" : ",%d", i + 1);
            first = false;
        }
    if (used < outlen)
        used += (size_t)snprintf(out + used, outlen - used, "]");
    if (row->moved_launches > 0 && used < outlen) {
        if (row->moved_gpu >= 0)
            snprintf(out + used, outlen - used, " @%d", row->moved_gpu);
        else
            snprintf(out + used, outlen - used, " @*");
    }
}

static void render_kernels(FILE *out, const struct mgpu_report *r, unsigned *reasons_used,
                           bool *any_varies, bool *any_moved)
{
    fprintf(out, "%-*s %9s %-15s %-11s %-13s %10s\n", NAME_WIDTH, "kernel", "launches", "grid",
            "block", "split", "GPU ms");
    unsigned long hidden_launches = 0;
    for (size_t i = 0; i < r->row_count; i++) {
        const struct mgpu_report_row *row = &r->rows[i];
        *reasons_used |= row->reasons;
        *any_moved = *any_moved || row->moved_launches > 0;
        if (i >= MGPU_REPORT_MAX_ROWS) {
            hidden_launches += row->launches;
            continue;
        }
        char name[NAME_WIDTH + 1], grid[32], block[32], split[24], ms[24];
        mgpu_shorten_name(row->name, NAME_WIDTH, name, sizeof name);
        mgpu_format_shape(grid, sizeof grid, row->grid);
        mgpu_format_shape(block, sizeof block, row->block);
        if (row->shape_varies) {
            strncat(grid, "*", sizeof grid - strlen(grid) - 1);
            *any_varies = true;
        }
        format_split(split, sizeof split, row);
        if (row->timed)
            snprintf(ms, sizeof ms, "%.3f", row->gpu_ms);
        else
            snprintf(ms, sizeof ms, "-");
        fprintf(out, "%-*s %9lu %-15.15s %-11.11s %-13.13s %10.10s\n", NAME_WIDTH, name,
                row->launches, grid, block, split, ms);
    }
    if (r->row_count > MGPU_REPORT_MAX_ROWS)
        fprintf(out, "... and %zu more kernels with %lu launches\n",
                r->row_count - MGPU_REPORT_MAX_ROWS, hidden_launches);
}

/* Prints text in lines of at most MGPU_REPORT_WIDTH columns, broken at
 * spaces, the first indented by `first`, the rest by `rest` spaces. */
static void print_wrapped(FILE *out, const char *text, int first, int rest)
{
    int indent = first;
    while (*text) {
        size_t room = (size_t)(MGPU_REPORT_WIDTH - indent), n = strlen(text);
        if (n > room) {
            n = room;
            while (n > room / 2 && text[n] != ' ')
                n--;
            if (text[n] != ' ')
                n = room;
        }
        fprintf(out, "%*s%.*s\n", indent, "", (int)n, text);
        text += n;
        while (*text == ' ')
            text++;
        indent = rest;
    }
}

/* One line: what the policies' tries and placement's moves cost, against
 * the kernels' GPU time; nothing when nothing was tried or moved. */
static void print_trying_cost(FILE *out, const struct mgpu_report *r)
{
    if (r->split_tries + r->mirror_tries + r->gemm_tries + r->follow_moves + r->try_put_off == 0)
        return;
    double kernels_ms = 0.0;
    for (size_t i = 0; i < r->row_count; i++)
        if (r->rows[i].timed)
            kernels_ms += r->rows[i].gpu_ms;
    double spent =
        r->split_tries_over_ms + r->mirror_tries_over_ms + r->gemm_tries_over_ms + r->follow_ms;
    char line[400];
    snprintf(line, sizeof line,
             "what trying cost: %lu split tr%s %.3f ms over whole, %lu mirrored tr%s %.3f ms over "
             "unmirrored, %lu GEMM cut tr%s %.3f ms over whole, %lu move%s %.3f ms; %.3f ms in "
             "all, %.2f %% of the kernels' %.3f ms",
             r->split_tries, r->split_tries == 1 ? "y" : "ies", r->split_tries_over_ms,
             r->mirror_tries, r->mirror_tries == 1 ? "y" : "ies", r->mirror_tries_over_ms,
             r->gemm_tries, r->gemm_tries == 1 ? "y" : "ies", r->gemm_tries_over_ms,
             r->follow_moves, r->follow_moves == 1 ? "" : "s", r->follow_ms, spent,
             kernels_ms > 0.0 ? 100.0 * spent / kernels_ms : 0.0, kernels_ms);
    print_wrapped(out, line, 0, 4);
    if (r->try_limited)
        snprintf(line, sizeof line,
                 "budget for trying (MGPU_TRY_BUDGET=%g%%+%gms): %.3f ms charged of %.3f ms "
                 "(%g %% of the %.3f ms the policies measured the kernels run, plus %g ms); "
                 "%lu tr%s put off for it",
                 r->try_percent, r->try_allowance_ms, r->try_spent_ms, r->try_limit_ms,
                 r->try_percent, r->try_ran_ms, r->try_allowance_ms, r->try_put_off,
                 r->try_put_off == 1 ? "y" : "ies");
    else
        snprintf(line, sizeof line, "budget for trying: none (%s), %.3f ms charged",
                 r->try_unlimited_why != NULL ? r->try_unlimited_why : "off", r->try_spent_ms);
    print_wrapped(out, line, 2, 4);
}

/* The kernels that read parameters from replicas (MGPU_MIRROR), or
 * privatise reductions through them, with those parameters. */
static void print_mirrored_params(FILE *out, const struct mgpu_report *r, bool privatised)
{
    bool header = false;
    for (size_t i = 0; i < r->row_count; i++) {
        unsigned long long params =
            privatised ? r->rows[i].privatised_params : r->rows[i].mirrored_params;
        if (params == 0)
            continue;
        if (!header)
            fprintf(out, "%s\n",
                    privatised ? "reductions privatised on each GPU (MGPU_MIRROR):"
                               : "read from replicas on each GPU (MGPU_MIRROR):");
        header = true;
        char list[200];
        size_t used = 0;
        for (int p = 0; p < 64 && used < sizeof list; p++)
            if (params & (1ull << p))
                used +=
                    (size_t)snprintf(list + used, sizeof list - used, "%s%d", used ? ", " : "", p);
        fprintf(out, "  %.60s: parameter%s %s\n", r->rows[i].name,
                (params & (params - 1)) ? "s" : "", list);
    }
}

void mgpu_report_render(FILE *out, const struct mgpu_report *r)
{
    char mem[32], peak[32], live[32], total[32];
    fprintf(out, "%s\n", HRULE);
    if (r->ranked)
        fprintf(out, "mgpu report: rank %d on %s\n", r->rank, r->host ? r->host : "?");
    else
        fprintf(out, "mgpu report\n");
    mgpu_format_bytes(mem, sizeof mem, r->mem_seen);
    char on_devices[48] = "";
    if (r->device_count > 0 && r->device_count < r->gpu_count)
        snprintf(on_devices, sizeof on_devices, " on %d device%s", r->device_count,
                 r->device_count == 1 ? "" : "s");
    if (r->gpu_count > 0)
        fprintf(out, "GPUs: %d selected%s, home %.30s; device 0 has %d SMs, %s; %d device%s seen\n",
                r->gpu_count, on_devices, r->home_name ? r->home_name : "?", r->sm_seen, mem,
                r->devices_seen, r->devices_seen == 1 ? "" : "s");
    else
        fprintf(out, "GPUs: none in use (the driver was never initialised)\n");
    if (r->startup != NULL && r->startup[0] != '\0')
        print_wrapped(out, r->startup, 0, 4);

    if (r->row_count == 0) {
        fprintf(out, "kernels: none launched\n");
    } else {
        unsigned reasons_used = 0;
        bool any_varies = false, any_moved = false;
        render_kernels(out, r, &reasons_used, &any_varies, &any_moved);
        for (int i = 0; i < r->reason_count; i++)
            if (reasons_used & (1u << i)) {
                char reason[400]; /* whole: wrapped, never cut */
                snprintf(reason, sizeof reason, "[%d] %s", i + 1, r->reason_texts[i]);
                print_wrapped(out, reason, 2, 6);
            }
        if (any_moved)
            fprintf(out, "  @g ran whole on GPU g, which holds most of the data it is given "
                         "(@*: several GPUs)\n");
        if (any_varies)
            fprintf(out, "  * launched with several shapes; the first is shown\n");
        print_mirrored_params(out, r, false);
        print_mirrored_params(out, r, true);
        if (r->split_line_count > 0)
            fprintf(out, "split or whole (MGPU_SPLIT=auto), the shapes of most GPU time first:\n");
        for (size_t i = 0; i < r->split_line_count; i++)
            fprintf(out, "  %s\n", r->split_lines[i]);
        print_trying_cost(out, r);
    }

    if (r->slice_gpus > 0) {
        unsigned long total_slices = 0;
        for (int g = 0; g < r->slice_gpus; g++)
            total_slices += r->slices_per_gpu[g];
        fprintf(out, "slices run: %lu, on %d GPUs\n", total_slices, r->slice_gpus);
        for (int g = 0; g < r->slice_gpus; g++) {
            if (r->gpu_devices != NULL)
                fprintf(out, "  GPU %d (device %d): %lu\n", g, r->gpu_devices[g],
                        r->slices_per_gpu[g]);
            else
                fprintf(out, "  GPU %d: %lu\n", g, r->slices_per_gpu[g]);
        }
    }

    if (r->module_count > 0)
        fprintf(out, "modules loaded: %zu\n",
                r->modules_loaded > r->module_count ? r->modules_loaded : r->module_count);
    for (size_t i = 0; i < r->module_count; i++)
        print_wrapped(out, r->module_lines[i], 2, 6);

    mgpu_format_bytes(total, sizeof total, r->bytes_allocated);
    mgpu_format_bytes(peak, sizeof peak, r->peak_bytes);
    mgpu_format_bytes(live, sizeof live, r->live_bytes);
    fprintf(out, "memory: %lu allocations (%s), %lu frees; peak %s; %s still allocated at exit\n",
            r->allocations, total, r->frees, peak, live);
    if (r->pool_placement != NULL) {
        fprintf(out,
                "  one address range on %d GPUs, %s placement; %lu copies and sets split by "
                "owner, %lu migrations\n",
                r->pool_gpus, r->pool_placement, r->copies_split, r->migrations);
        if (r->follow_on) {
            mgpu_format_bytes(total, sizeof total, r->follow_bytes);
            char deferred[96] = "";
            if (r->follow_deferred > 0)
                snprintf(deferred, sizeof deferred,
                         "; %lu put off while the program's queued work went on",
                         r->follow_deferred);
            fprintf(out, "  placement after the kernels (auto): %lu moves (%s, %.1f ms)%s%s\n",
                    r->follow_moves, total, r->follow_ms, deferred,
                    r->follow_stopped ? "; stopped: a second thread launched kernels" : "");
            for (size_t i = 0; i < r->follow_line_count; i++)
                fprintf(out, "    %s\n", r->follow_lines[i]);
        }
        if (r->staged_bytes > 0) {
            mgpu_format_bytes(total, sizeof total, r->staged_bytes);
            fprintf(out,
                    "  %s of pageable host memory copied to the GPUs through mgpu's pinned "
                    "buffers\n",
                    total);
        }
        /* Under auto (the default) a run that mirrored, tried and privatised
         * nothing says so in one line rather than two lines of zeros. */
        bool mirrors_idle = r->mirror_auto && r->mirror_buffers == 0 && r->mirror_copies == 0 &&
                            r->mirror_shapes_decided == 0 && r->mirror_shapes_privatised == 0 &&
                            r->private_combines == 0 && r->mirror_nccl_ranks == 0;
        if (r->mirrors_on && mirrors_idle)
            fprintf(out, "  mirrors (auto): none made, no kernel shape tried with them\n");
        if (r->mirrors_on && !mirrors_idle) {
            mgpu_format_bytes(total, sizeof total, r->mirror_refreshed_bytes);
            fprintf(out,
                    "  mirrors: %lu buffers replicated, %lu copies on the GPUs, %lu refreshes "
                    "(%s), made stale %lu times",
                    r->mirror_buffers, r->mirror_copies, r->mirror_refreshes, total,
                    r->mirror_stale_marks);
            if (r->mirror_evictions > 0)
                fprintf(out, ", %lu copies evicted to stay within the budget", r->mirror_evictions);
            fprintf(out, "\n");
            for (size_t i = 0; i < r->mirror_line_count; i++)
                fprintf(out, "    %s\n", r->mirror_lines[i]);
            if (r->mirror_nccl_ranks > 0) {
                mgpu_format_bytes(total, sizeof total, r->mirror_nccl_bytes);
                fprintf(out,
                        "  mirrors through NCCL: one communicator over %d device%s, %lu "
                        "collectives (%s received)\n",
                        r->mirror_nccl_ranks, r->mirror_nccl_ranks == 1 ? "" : "s",
                        r->mirror_nccl_collectives, total);
            }
            if (r->mirror_auto)
                fprintf(out,
                        "  mirrors (auto): %lu kernel shapes timed with and without, %lu "
                        "mirrored (at least %.0f%% faster)\n",
                        r->mirror_shapes_decided, r->mirror_shapes_mirrored,
                        r->mirror_gain_percent);
            if (r->mirror_auto && r->mirror_shapes_privatised > 0)
                fprintf(out,
                        "  mirrors (auto): %lu kernel shapes split with their atomics "
                        "privatised, as they were tried\n",
                        r->mirror_shapes_privatised);
            if (r->private_combines > 0)
                fprintf(out,
                        "  reductions privatised: %lu combined after their launches (%lu "
                        "copies folded by mgpu's kernel, %lu ncclReduce calls)\n",
                        r->private_combines, r->private_kernel_folds, r->private_nccl_reduces);
        }
        /* The pool's memory, not the program's: its granules stay mapped
         * for reuse after the program's frees, so a GPU may hold some "now"
         * while nothing of the program's is still allocated. */
        if (r->pool_gpus > 0)
            fprintf(out, "  the pool's memory on each GPU (whole 2 MiB granules, kept for reuse "
                         "until exit):\n");
        for (int g = 0; g < r->pool_gpus; g++) {
            mgpu_format_bytes(live, sizeof live, r->pool_now[g]);
            mgpu_format_bytes(peak, sizeof peak, r->pool_peak[g]);
            if (r->gpu_devices != NULL)
                fprintf(out, "  GPU %d (device %d): %s now, %s at peak\n", g, r->gpu_devices[g],
                        live, peak);
            else
                fprintf(out, "  GPU %d: %s now, %s at peak\n", g, live, peak);
        }
    } else if (r->pool_off_reason != NULL && r->pool_off_reason[0] != '\0') {
        fprintf(out, "  on the home GPU only: %s\n", r->pool_off_reason);
    }

    if (r->blas_line_count > 0)
        fprintf(out, "cuBLAS GEMMs:\n");
    for (size_t i = 0; i < r->blas_line_count; i++)
        fprintf(out, "  %s\n", r->blas_lines[i]);
    if (r->host_blas_line_count > 0)
        fprintf(out, "CPU BLAS calls (--blas):\n");
    for (size_t i = 0; i < r->host_blas_line_count; i++)
        fprintf(out, "  %s\n", r->host_blas_lines[i]);
    if (r->blas_static)
        fprintf(out, "cuBLAS: linked statically into the program; its calls cannot be seen, "
                     "so its GEMMs run whole on the home GPU\n");

    fprintf(out, "driver calls intercepted: %lu%s\n", r->calls_total, r->call_kinds ? ":" : "");
    char line[MGPU_REPORT_WIDTH + 1];
    size_t used = 0;
    for (size_t i = 0; i < r->call_kinds; i++) {
        char item[96];
        int n = snprintf(item, sizeof item, "%s %lu%s", r->call_names[i], r->call_counts[i],
                         i + 1 < r->call_kinds ? "," : "");
        if (n < 0 || (size_t)n + 3 > MGPU_REPORT_WIDTH)
            continue;
        if (used > 0 && used + 1 + (size_t)n > MGPU_REPORT_WIDTH) {
            fprintf(out, "%s\n", line);
            used = 0;
        }
        used += (size_t)snprintf(line + used, sizeof line - used, "%s%s", used ? " " : "  ", item);
    }
    if (used > 0)
        fprintf(out, "%s\n", line);
    fprintf(out,
            "entry points looked up: %lu, %lu answered with mgpu's hooks, %lu passed through\n",
            r->lookups, r->lookups_hooked, r->lookups_passed);
    fprintf(out, "%s\n", HRULE);
}
