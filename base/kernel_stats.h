/* Per-kernel figures for the report: launches, shapes, why not split, GPU
 * time. Kept only while statistics are on. */
#ifndef MGPU_KERNEL_STATS_H
#define MGPU_KERNEL_STATS_H

#include "base/config.h"

#include <stdbool.h>
#include <stddef.h>

enum mgpu_unsplit_reason {
    MGPU_UNSPLIT_NONE = -1,   /* not a reason: the launch was split */
    MGPU_UNSPLIT_ONE_GPU,     /* only one GPU selected */
    MGPU_UNSPLIT_SMALL,       /* the cost model ran it whole, or one block */
    MGPU_UNSPLIT_NO_COPY,     /* ran the program's own code: its module has no copies */
    MGPU_UNSPLIT_SPLIT_OFF,   /* MGPU_SPLIT=never */
    MGPU_UNSPLIT_COOPERATIVE, /* cooperative launch */
    MGPU_UNSPLIT_CLUSTER,     /* thread-block clusters */
    MGPU_UNSPLIT_CAPTURE,     /* launched into a stream capture */
    MGPU_UNSPLIT_ANALYSIS,    /* the kernel analysis found what a split cannot keep */
    MGPU_UNSPLIT_ATTRIBUTE,   /* a cuLaunchKernelEx attribute tied to events or streams */
    MGPU_UNSPLIT_NOT_READY,   /* the other GPUs' contexts or module copies still being made */
    MGPU_UNSPLIT_REASON_COUNT
};

const char *mgpu_unsplit_reason_text(enum mgpu_unsplit_reason reason);

/* Whether statistics are gathered (--report, a trace): the hooks count
 * calls, launches are timed. Set once when the runtime starts. */
extern bool mgpu_stats_enabled;

struct mgpu_kernel_record {
    const void *handle;
    char *name; /* mangled, as the driver names it */
    unsigned long launches;
    unsigned grid[3], block[3]; /* of the first launch */
    bool shape_known;
    bool shape_varies; /* a later launch had another shape */
    unsigned reasons;  /* bit per enum mgpu_unsplit_reason seen */
    unsigned long split_launches;
    int most_slices;                    /* of a split launch */
    unsigned long moved_launches;       /* run whole on another GPU than the home one */
    int moved_gpu;                      /* that GPU; -1 when there were several */
    double gpu_ms;                      /* sum over timed launches */
    unsigned long timed;                /* launches with a GPU time */
    unsigned long long mirrored_params;   /* bit i: parameter i read from replicas (first 64) */
    unsigned long long privatised_params; /* bit i: parameter i's reduction privatised */
};

/* The record of the kernel `handle` (a CUfunction or CUkernel), made on
 * first sight; returns its id, or -1 when out of memory. */
int mgpu_kernel_stats_find(const void *handle);
/* Counts one successful launch of record `id`. */
void mgpu_kernel_stats_count_launch(int id, const unsigned grid[3], const unsigned block[3],
                                    enum mgpu_unsplit_reason reason);
/* A split launch of record `id` read the parameters in `params` (bit i:
 * parameter i) from replicas (MGPU_MIRROR). */
void mgpu_kernel_stats_mirrored(int id, unsigned long long read, unsigned long long privatised);
/* Counts one successful launch split into `slices` slices, slice i run by
 * the run's GPU gpus[i]. */
void mgpu_kernel_stats_count_split(int id, const unsigned grid[3], const unsigned block[3],
                                   int slices, const int *gpus);
/* Counts one launch that did not split for `reason` and ran whole on
 * GPU `gpu`, which holds most of its data. */
void mgpu_kernel_stats_count_moved(int id, const unsigned grid[3], const unsigned block[3],
                                   enum mgpu_unsplit_reason reason, int gpu);
void mgpu_kernel_stats_add_time(int id, double ms);

/* How many slices (and launches moved whole) each of the run's GPUs ran,
 * over all kernels; returns how many GPUs ran any. */
int mgpu_kernel_stats_slices_per_gpu(unsigned long out[MGPU_MAX_GPUS]);

/* For the report and the trace, after the program's work is done. */
size_t mgpu_kernel_stats_count(void);
const struct mgpu_kernel_record *mgpu_kernel_stats_get(size_t id);

#endif
