/* Rendering of the end-of-run report: plain data in, a table of at most
 * MGPU_REPORT_WIDTH columns out. Knows nothing of the driver. */
#ifndef MGPU_REPORT_FORMAT_H
#define MGPU_REPORT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define MGPU_REPORT_WIDTH 100
#define MGPU_REPORT_MAX_ROWS 40

struct mgpu_report_row {
    const char *name; /* demangled where possible */
    unsigned long launches;
    unsigned grid[3], block[3];
    bool shape_varies;
    unsigned reasons; /* bit i: reason i+1 in the legend */
    unsigned long split_launches;
    int most_slices;              /* of a split launch */
    unsigned long moved_launches; /* unsplit, run whole on another GPU */
    int moved_gpu;                /* that GPU; -1 when several */
    double gpu_ms;
    unsigned long timed;                  /* launches with a GPU time */
    unsigned long long mirrored_params;   /* bit i: parameter i read from replicas */
    unsigned long long privatised_params; /* bit i: parameter i's reduction privatised */
};

struct mgpu_report {
    int gpu_count;    /* the run's GPUs (entries) */
    int device_count; /* the distinct devices they stand on */
    /* The device each GPU stands on, where some device stands for several
     * (--gpus 0,0): rows are then labelled "GPU 3 (device 0)". NULL
     * otherwise. */
    const int *gpu_devices;
    const char *home_name;
    bool ranked; /* under MPI: the rank and node it ran as */
    int rank;
    const char *host;
    int devices_seen; /* devices the program saw */
    int sm_seen;      /* multiprocessors of device 0 */
    unsigned long long mem_seen;
    const char *const *reason_texts; /* legend, indexed by reason bit */
    int reason_count;
    struct mgpu_report_row *rows;
    size_t row_count;
    /* Slices of split launches (and launches moved whole) each of the run's
     * GPUs ran; slice_gpus is 0 when none was split. */
    const unsigned long *slices_per_gpu;
    int slice_gpus;
    const char (*module_lines)[160]; /* one per module the program loaded, as many as kept */
    size_t module_count;             /* lines */
    size_t modules_loaded;           /* modules, over the run */
    unsigned long allocations, frees;
    unsigned long long bytes_allocated, peak_bytes, live_bytes;
    /* The memory pool: placement, physical bytes per GPU, copies split. */
    const char *pool_placement;  /* NULL when allocations went to the driver */
    const char *pool_off_reason; /* why, when a start was tried; may be empty */
    int pool_gpus;
    const unsigned long long *pool_now, *pool_peak;
    unsigned long copies_split, migrations;
    /* MGPU_PLACEMENT=auto: moves made after the kernels, and per large buffer
     * alive at exit where it is and why */
    bool follow_on, follow_stopped;
    unsigned long follow_moves;
    unsigned long follow_deferred; /* moves put off: the program's queued work went on past the bound */
    unsigned long long follow_bytes;
    double follow_ms;
    const char (*follow_lines)[160];
    size_t follow_line_count;
    unsigned long long staged_bytes; /* pageable host memory sent through mgpu's pinned buffers */
    /* Replicas (MGPU_MIRROR=always): buffers, copies, refreshes, stale marks. */
    bool mirrors_on;
    unsigned long mirror_buffers, mirror_copies, mirror_refreshes, mirror_stale_marks;
    unsigned long mirror_evictions;
    unsigned long long mirror_refreshed_bytes;
    const char (*mirror_lines)[160]; /* one per buffer replicated at exit */
    size_t mirror_line_count;
    int mirror_nccl_ranks; /* 0: no NCCL communicator */
    unsigned long mirror_nccl_collectives;
    unsigned long long mirror_nccl_bytes;
    /* privatised reductions: buffers combined after a launch, copies folded
     * by mgpu's kernel, combines ended by one ncclReduce */
    unsigned long private_combines, private_kernel_folds, private_nccl_reduces;
    /* MGPU_MIRROR=auto: launch shapes timed both ways, and of those
     * mirrored; shapes split privatised for their atomics, untimed here */
    bool mirror_auto;
    unsigned long mirror_shapes_decided, mirror_shapes_mirrored, mirror_shapes_privatised;
    double mirror_gain_percent; /* how much faster mirrored must be to be kept */
    /* the program's cuBLAS GEMMs (blas/): a line per routine called */
    const char (*blas_lines)[160];
    size_t blas_line_count;
    /* MGPU_SPLIT=auto's decisions, a line per kernel shape
     * (sched/split_policy.h) */
    const char (*split_lines)[160];
    size_t split_line_count;
    /* What trying cost: the policies' timed tries of the other way (a
     * split, a mirrored split, a cut GEMM) and what they took beyond the
     * first way at its best; the moves are follow_moves and follow_ms. */
    unsigned long split_tries, mirror_tries, gemm_tries;
    double split_tries_over_ms, mirror_tries_over_ms, gemm_tries_over_ms;
    /* The budget for trying (base/try_budget.h): limited or off, the
     * program's GPU time the policies measured, the budget it gives, what
     * the tries were charged and how many were put off. */
    bool try_limited;
    const char *try_unlimited_why; /* when not limited: the setting that lifts it */
    double try_ran_ms, try_limit_ms, try_spent_ms, try_percent, try_allowance_ms;
    unsigned long try_put_off;
    bool blas_static;    /* the program carries cuBLAS linked in: nothing intercepted */
    const char *startup; /* "start-up: ..." (base/startup_times.h), or empty */
    const char (*host_blas_lines)[160]; /* a CPU program's BLAS calls (--blas) */
    size_t host_blas_line_count;
    unsigned long lookups, lookups_hooked, lookups_passed;
    const char *const *call_names; /* hooked functions called, most first */
    const unsigned long *call_counts;
    size_t call_kinds;
    unsigned long calls_total;
};

void mgpu_format_bytes(char *out, size_t outlen, unsigned long long bytes);
void mgpu_format_shape(char *out, size_t outlen, const unsigned dims[3]);
/* Fits a kernel name into `width` characters: drops a leading return type
 * and the parameter list first, then cuts the end with "...". */
void mgpu_shorten_name(const char *name, size_t width, char *out, size_t outlen);

/* Merges rows with the same name (launches and times add up) and sorts by
 * GPU time, then launches. Returns the new row count. */
size_t mgpu_report_merge_rows(struct mgpu_report_row *rows, size_t n);

void mgpu_report_render(FILE *out, const struct mgpu_report *r);

#endif
