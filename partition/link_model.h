/* The cost model's links (issue 19): the copy bandwidth from each GPU entry
 * of the run to each other, and what moving bytes costs and what it saves.
 * Pairs of distinct devices carry what link_measure.c measured between
 * them; entries of one device are modelled as if they were distinct GPUs
 * joined as DESIGN §5 measured NVLink against local memory on the H200s
 * (a twelfth), so that on one GPU listed several times decisions come out
 * as they would on distinct GPUs, where timings say nothing. No driver. */
#ifndef MGPU_LINK_MODEL_H
#define MGPU_LINK_MODEL_H

#include "base/config.h"

#include <stdbool.h>
#include <stddef.h>

#define MGPU_LINK_SAME_DEVICE_SHARE 12.0

struct mgpu_link_model {
    int nentries;
    double gbps[MGPU_MAX_GPUS][MGPU_MAX_GPUS];   /* from entry i's memory to entry j */
    bool modelled[MGPU_MAX_GPUS][MGPU_MAX_GPUS]; /* entries of one device: not measured */
};

/* The model of `nentries` entries, entry i on device entry_device[i], from
 * device_gbps[a][b]: the measured bandwidth from devices[a] to devices[b]
 * (a == b: a copy within the device). Returns 0, or -1 when an entry's
 * device is not among `devices` or a bandwidth is not positive. */
int mgpu_link_model_build(struct mgpu_link_model *m, const int *entry_device, int nentries,
                          const int *devices, int ndevices,
                          const double device_gbps[][MGPU_MAX_GPUS]);

/* Bytes that would move, or be read, from entry `from`'s memory by entry `to`. */
struct mgpu_link_move {
    size_t bytes;
    int from, to;
};

/* Seconds to copy the moves. */
double mgpu_link_copy_seconds(const struct mgpu_link_model *m, const struct mgpu_link_move *moves,
                              size_t n);
/* Seconds beyond local reads that one launch reading all of a buffer of
 * `bytes` once spends on the links, with the buffer wholly on entry
 * `holder`, or (holder < 0) spread in the fractions spread_share[] (one per
 * entry, in entry order) along the cut of the launches split over it; the
 * launch whole on entry `runner`, or (runner < 0) split in slices of those
 * same fractions. A whole launch reads what others hold one link after
 * another; split slices read in parallel: the slowest slice, or the holder
 * sending what the others read, at its fastest link (its ports are
 * shared). Remote reads cost the link's time less the local one's. */
double mgpu_link_launch_read_seconds(const struct mgpu_link_model *m, size_t bytes, int holder,
                                     int runner, const double *spread_share);

/* One line per entry: "GPU 1 (device 0): from GPU 0 250.0 GB/s*, ..." (*
 * modelled), into lines; returns how many. */
int mgpu_link_model_describe(const struct mgpu_link_model *m, char (*lines)[512], int max);

#endif
