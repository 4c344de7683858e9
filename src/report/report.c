/* Owns gathering the run's figures (GPUs, kernels, memory, calls, lookups)
 * into a report and handing it to the renderer. */
#include "src/report/report.h"

#include "base/startup_times.h"

#include "base/demangle.h"
#include "partition/gpu_contexts.h"

#include "blas/blas_stats.h"
#include "blas/gemm_policy.h"
#include "src/hooks/hook_table.h"
#include "base/kernel_stats.h"
#include "memory/copy_router.h"
#include "memory/host_staging.h"
#include "memory/memory_pool.h"
#include "base/memory_stats.h"
#include "src/hooks/procaddress_hooks.h"
#include "modules/program_modules.h"
#include "base/real_driver.h"
#include "mirror/nccl_collectives.h"
#include "mirror/mirror_policy.h"
#include "sched/placement_follow.h"
#include "sched/split_policy.h"
#include "mirror/private_reductions.h"
#include "mirror/replicas.h"
#include "base/report_format.h"
#include "base/config.h"
#include "base/try_budget.h"
#include "src/hooks/virtual_device.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct call_list {
    const char *names[64];
    unsigned long counts[64];
    size_t len;
    unsigned long total;
};

static void add_call(const char *name, unsigned long calls, void *ctx)
{
    struct call_list *l = ctx;
    l->total += calls;
    if (l->len == 64)
        return;
    size_t i = l->len++;
    while (i > 0 && l->counts[i - 1] < calls) {
        l->names[i] = l->names[i - 1];
        l->counts[i] = l->counts[i - 1];
        i--;
    }
    l->names[i] = name;
    l->counts[i] = calls;
}

void mgpu_report_print(void)
{
    struct mgpu_report r;
    memset(&r, 0, sizeof r);
    static char host[64];
    if (mgpu_cfg.rank >= 0) {
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "?");
        host[sizeof host - 1] = '\0';
        r.ranked = true;
        r.rank = mgpu_cfg.rank;
        r.host = host;
    }

    struct mgpu_gpu_summary gpus;
    if (mgpu_virtual_device_summary(&gpus) == 0) {
        r.gpu_count = gpus.gpu_count;
        r.device_count = gpus.device_count;
        r.home_name = gpus.home_name;
        r.devices_seen = mgpu_cfg.device_count == MGPU_DEVICE_COUNT_ONE ? 1 : gpus.device_count;
        r.sm_seen = gpus.sm_seen;
        r.mem_seen = gpus.mem_sum;
    }

    const char *reasons[MGPU_UNSPLIT_REASON_COUNT];
    for (int i = 0; i < MGPU_UNSPLIT_REASON_COUNT; i++)
        reasons[i] = mgpu_unsplit_reason_text((enum mgpu_unsplit_reason)i);
    r.reason_texts = reasons;
    r.reason_count = MGPU_UNSPLIT_REASON_COUNT;

    size_t n = mgpu_kernel_stats_count();
    struct mgpu_report_row *rows = calloc(n ? n : 1, sizeof *rows);
    char **names = calloc(n ? n : 1, sizeof *names);
    if (rows != NULL && names != NULL) {
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            const struct mgpu_kernel_record *k = mgpu_kernel_stats_get(i);
            if (k->launches == 0) /* every launch of it failed */
                continue;
            names[i] = mgpu_demangle(k->name);
            rows[kept++] = (struct mgpu_report_row){
                .name = names[i] ? names[i] : k->name,
                .launches = k->launches,
                .shape_varies = k->shape_varies,
                .reasons = k->reasons,
                .split_launches = k->split_launches,
                .most_slices = k->most_slices,
                .moved_launches = k->moved_launches,
                .moved_gpu = k->moved_gpu,
                .gpu_ms = k->gpu_ms,
                .timed = k->timed,
                .mirrored_params = k->mirrored_params,
                .privatised_params = k->privatised_params,
            };
            memcpy(rows[kept - 1].grid, k->grid, sizeof k->grid);
            memcpy(rows[kept - 1].block, k->block, sizeof k->block);
        }
        r.rows = rows;
        r.row_count = mgpu_report_merge_rows(rows, kept);
    }

    unsigned long slices[MGPU_MAX_GPUS];
    r.slice_gpus = mgpu_kernel_stats_slices_per_gpu(slices);
    r.slices_per_gpu = slices;

    static char module_lines[64][160];
    r.module_lines = (const char(*)[160])module_lines;
    r.module_count = mgpu_program_modules_describe(module_lines, 64);
    r.modules_loaded = mgpu_program_modules_loaded();
    static char startup[400];
    mgpu_startup_describe(startup, sizeof startup);
    r.startup = startup;

    struct mgpu_memory_totals mem;
    mgpu_memory_totals_get(&mem);
    r.allocations = mem.allocations;
    r.frees = mem.frees;
    r.bytes_allocated = mem.bytes_allocated;
    r.peak_bytes = mem.peak_bytes;
    r.live_bytes = mem.live_bytes;

    struct mgpu_pool_usage pool;
    mgpu_pool_usage(&pool);
    unsigned long long pool_now[MGPU_MAX_GPUS], pool_peak[MGPU_MAX_GPUS];
    for (int g = 0; g < pool.gpus; g++) {
        pool_now[g] = pool.now[g];
        pool_peak[g] = pool.peak[g];
    }
    r.pool_placement = !pool.active                                ? NULL
                       : mgpu_cfg.placement == MGPU_PLACEMENT_AUTO ? "auto"
                                                                   : pool.placement;
    r.pool_off_reason = pool.why_off;
    r.pool_gpus = pool.gpus;
    const struct mgpu_gpu_entries *entries = mgpu_run_gpus();
    if (entries != NULL && mgpu_gpu_entries_repeated(entries))
        r.gpu_devices = entries->device;
    r.pool_now = pool_now;
    r.pool_peak = pool_peak;
    r.copies_split = mgpu_copy_router_splits();
    r.migrations = pool.migrations;
    r.follow_on = mgpu_cfg.placement == MGPU_PLACEMENT_AUTO;
    struct mgpu_follow_stats follow;
    mgpu_follow_stats(&follow);
    r.follow_stopped = follow.stopped;
    r.follow_moves = follow.moves;
    r.follow_deferred = follow.deferred;
    r.follow_bytes = follow.bytes_moved;
    r.follow_ms = follow.move_ms;
    static char follow_lines[16][160];
    r.follow_lines = (const char(*)[160])follow_lines;
    r.follow_line_count = mgpu_follow_describe(follow_lines, 16);
    r.staged_bytes = mgpu_staged_bytes();
    r.mirrors_on = mgpu_replicas_configured();
    struct mgpu_replica_stats mirrors;
    mgpu_replicas_stats(&mirrors);
    r.mirror_buffers = mirrors.buffers;
    r.mirror_copies = mirrors.copies;
    r.mirror_refreshes = mirrors.refreshes;
    r.mirror_stale_marks = mirrors.stale_marks;
    r.mirror_evictions = mirrors.evictions;
    r.mirror_refreshed_bytes = mirrors.refreshed_bytes;
    static char mirror_lines[16][160];
    r.mirror_lines = (const char(*)[160])mirror_lines;
    r.mirror_line_count = mgpu_replicas_describe(mirror_lines, 16);
    struct mgpu_nccl_stats nccl;
    mgpu_nccl_stats(&nccl);
    r.mirror_nccl_ranks = nccl.ranks;
    r.mirror_nccl_collectives = nccl.collectives;
    r.mirror_nccl_bytes = nccl.bytes;
    struct mgpu_private_reduction_stats reductions;
    mgpu_private_reduction_stats(&reductions);
    r.private_combines = reductions.combines;
    r.private_kernel_folds = reductions.kernel_folds;
    r.private_nccl_reduces = reductions.nccl_reduces;
    r.mirror_auto = mgpu_cfg.mirror == MGPU_MIRROR_AUTO;
    struct mgpu_mirror_policy_stats policy;
    mgpu_mirror_policy_stats(&policy);
    r.mirror_shapes_decided = policy.decided;
    r.mirror_shapes_mirrored = policy.mirrored;
    r.mirror_shapes_privatised = policy.privatised;
    r.mirror_gain_percent = (1.0 - MGPU_MIRROR_GAIN) * 100.0;

    static char split_lines[16][160];
    r.split_lines = (const char(*)[160])split_lines;
    r.split_line_count =
        mgpu_cfg.split == MGPU_SPLIT_AUTO ? mgpu_split_policy_describe(split_lines, 8) : 0;
    r.split_tries_over_ms = mgpu_split_policy_tries_over_us(&r.split_tries) / 1e3;
    r.mirror_tries_over_ms = mgpu_mirror_policy_tries_over_us(&r.mirror_tries) / 1e3;
    r.gemm_tries_over_ms = mgpu_gemm_policy_tries_over_us(&r.gemm_tries) / 1e3;
    struct mgpu_try_budget_stats budget;
    mgpu_try_budget_stats(&budget);
    r.try_limited = budget.limited;
    r.try_unlimited_why = mgpu_cfg.try_budget_off               ? "MGPU_TRY_BUDGET=off"
                          : mgpu_cfg.split == MGPU_SPLIT_ALWAYS ? "MGPU_SPLIT=always"
                                                                : "MGPU_SPLIT=never";
    r.try_ran_ms = budget.ran_us / 1e3;
    r.try_limit_ms = budget.limit_us / 1e3;
    r.try_spent_ms = budget.spent_us / 1e3;
    r.try_put_off = budget.put_off;
    r.try_percent = mgpu_cfg.try_budget_percent;
    r.try_allowance_ms = mgpu_cfg.try_budget_ms;
    static char blas_lines[64][160];
    r.blas_lines = (const char(*)[160])blas_lines;
    r.blas_line_count = mgpu_blas_stats_describe(blas_lines, 64);
    r.blas_static = mgpu_blas_linked_statically();
    static char host_blas_lines[64][160];
    r.host_blas_lines = (const char(*)[160])host_blas_lines;
    r.host_blas_line_count = mgpu_blas_stats_describe_host(host_blas_lines, 64);

    struct call_list calls = {.len = 0};
    mgpu_hooks_for_each_called(add_call, &calls);
    r.call_names = calls.names;
    r.call_counts = calls.counts;
    r.call_kinds = calls.len;
    r.calls_total = calls.total;

    struct mgpu_lookup_stats lookups;
    mgpu_lookup_stats_get(&lookups);
    r.lookups = lookups.lookups;
    r.lookups_hooked = lookups.hooked;
    r.lookups_passed = lookups.passed;

    mgpu_report_render(stderr, &r);
    fflush(stderr);
    for (size_t i = 0; names != NULL && i < n; i++)
        free(names[i]);
    free(names);
    free(rows);
}
