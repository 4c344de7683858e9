/* Which of the machine's GPUs a run uses, and in what order. */
#ifndef MGPU_GPU_SELECTION_H
#define MGPU_GPU_SELECTION_H

#include <stddef.h>

/* Picks device indices out of `device_count`: the list when given, else the
 * first `ngpus`, else all. `count_source`/`list_source` name where the
 * request came from ("-n ", "MGPU_NGPUS=", "--gpus"). Returns 0, or -1 with a one-line
 * message naming the fix. */
int gpu_select(int device_count, int ngpus, const char *count_source, const int *list, int list_len,
               const char *list_source, int *out, int *out_len, char *err, size_t errlen);

#endif
