/* The run's GPUs as entries: each GPU that --gpus lists (or -n chose) is
 * one entry, a full member of the run in slice order, standing on one of
 * the driver's devices. A device listed more than once (--gpus 0,0,0,0 or
 * 0x4) stands for several entries: each gets its own part of every
 * buffer, rewritten module, worker and slice, all on that one device. Nothing
 * gets faster, but every multi-GPU path runs on one GPU.
 *
 * Pure functions of the list and the driver's device count (no driver, no
 * hwloc), for the launcher, the runtime and mgpu-info alike. */
#ifndef MGPU_GPU_ENTRIES_H
#define MGPU_GPU_ENTRIES_H

#include "base/config.h"

#include <stdbool.h>
#include <stddef.h>

struct mgpu_gpu_entries {
    int count;                 /* entries, in slice order; entry 0 is home */
    int device[MGPU_MAX_GPUS]; /* the device each stands on */
    int devices;               /* distinct devices among them */
};

/* The entries for `list` (device indices, repeats allowed), each below
 * `device_count` and MGPU_MAX_GPUS. An empty list (len 0) is every device once. Returns 0,
 * or -1 with a one-line reason naming the fix. */
int mgpu_gpu_entries_make(const int *list, int len, int device_count, struct mgpu_gpu_entries *out,
                          char *err, size_t errlen);

/* Whether some device stands for more than one entry. */
bool mgpu_gpu_entries_repeated(const struct mgpu_gpu_entries *e);

/* How many entries stand on entry g's device. */
int mgpu_gpu_entries_sharing(const struct mgpu_gpu_entries *e, int g);

/* Whether entry g is the first entry on its device: the one whose device
 * is set up (peer access, memory access) for all of its entries. */
bool mgpu_gpu_entries_first_on_device(const struct mgpu_gpu_entries *e, int g);

/* The distinct devices in order of first appearance; returns their count. */
int mgpu_gpu_entries_distinct(const struct mgpu_gpu_entries *e, int out[MGPU_MAX_GPUS]);

/* "GPU 3 (device 0)" where a device repeats, else "GPU 3", for messages,
 * the report and the trace. */
void mgpu_gpu_entries_label(const struct mgpu_gpu_entries *e, int g, char *out, size_t outlen);

/* Shares of the work: each distinct device's weight (`device_weight`,
 * indexed by device, any positive scale) split equally among its entries;
 * out[g] is entry g's share, the shares sum to 1. */
void mgpu_gpu_entries_weights(const struct mgpu_gpu_entries *e, const double *device_weight,
                              double out[MGPU_MAX_GPUS]);

#endif
