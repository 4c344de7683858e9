/* The footprint soundness check inside the program (issue 45, item 2):
 * under the footprint-check probe (probes/tools/footprint-check.cu), each
 * split launch's slices' predicted footprints recorded at the launch, and
 * at exit compared with what the probe saw each slice touch
 * (ptx/ptx_footprint_check.h): escapes, and tightness per kernel, on
 * stderr. Thread-safe. */
#ifndef MGPU_SCHED_FOOTPRINT_RECORD_H
#define MGPU_SCHED_FOOTPRINT_RECORD_H

#include "modules/program_modules.h"
#include "partition/grid_split.h"

#include <stdbool.h>

/* At start, with the probes loaded: the check is on when the
 * footprint-check probe is among them (its map fc_lowest), and its
 * report registered with the probes' exit. */
void mgpu_footprint_record_start(void);

/* Whether launches are recorded. */
bool mgpu_footprint_recording(void);

/* A split launch numbered `sequence` (the probes'): its slices'
 * predictions. Launches past the probe's first 4096, cut by iterations,
 * or on entries past the eighth are not recorded. */
void mgpu_footprint_record(const struct mgpu_gpu_kernels *k, void *const *params,
                           const void *buffer, const unsigned grid[3], const unsigned block[3],
                           unsigned sequence, const struct mgpu_grid_slice *slices, int nslices);

#endif
