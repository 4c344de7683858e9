/* The links' measured bandwidths (link_measure.h) kept between runs, in
 * mgpu's cache directory (base/cache_dir.h), one file per ordered set of
 * devices, under the machine's key (base/machine_key.h): measuring takes
 * 60-70 ms on two or four H200s, during which a run's launches that could
 * leave the home GPU run whole, and its copies share the GPUs with the
 * program's first kernels. A measurement made while the program's kernels
 * ran on the same GPU can read low (one H200 measured within itself at 200
 * GB/s, against 1 680 on an idle one), so the first MGPU_LINK_CACHE_RUNS
 * runs on a machine, boot and devices still measure, each keeping the best
 * of its own and the earlier runs' figures for every pair; the runs after
 * them read the file in well under a millisecond. A machine without a key
 * (no /proc/driver/nvidia) keeps nothing.
 *
 * The file, "links-" and the set's hash in hex:
 *   mgpu links 1
 *   key 0123456789abcdef
 *   devices UUID UUID ...
 *   measurements K
 *   then one line per device a: the GB/s from a to each device b, the best
 *   of K runs' measurements.
 * Anything else is a file to measure again and replace. */
#ifndef MGPU_LINK_CACHE_H
#define MGPU_LINK_CACHE_H

#include "base/config.h"

#include <stddef.h>
#include <stdint.h>

/* The runs that measure before the file is read instead. */
#define MGPU_LINK_CACHE_RUNS 3
/* The most measurements a file counts. */
#define MGPU_LINK_CACHE_RUNS_MAX 1000

/* Where a set of devices' bandwidths are kept on this machine: their
 * names (each device's UUID in hex, separated by spaces, in the run's
 * order), the machine's key and the file's path, found once per run. */
struct mgpu_link_cache_file {
    char devices[MGPU_MAX_GPUS * 34];
    uint64_t key;
    char path[1024];
};

/* The file of the run's n devices (CUDA device indices), named through
 * the driver (mgpu_drv must be initialised). Returns 0, or -1 where
 * nothing can be kept: the driver does not name them, the machine has no
 * key, or the cache directory cannot be made. */
int mgpu_link_cache_find(const int *devices, int n, struct mgpu_link_cache_file *f);

/* The same for devices already named (for the tests). */
int mgpu_link_cache_place(const char *devices, struct mgpu_link_cache_file *f);

/* gbps[a][b] of the file's n devices, from what earlier runs kept; 0, or
 * -1 where there is nothing for them with MGPU_LINK_CACHE_RUNS
 * measurements in it (or it is not one mgpu wrote): the run is then to
 * measure them (gbps may have been written). */
int mgpu_link_cache_load(const struct mgpu_link_cache_file *f, int n, double gbps[][MGPU_MAX_GPUS]);

/* Keeps this run's measurement for the next runs, each pair's best with
 * the file's, one more measurement counted; quietly nothing where it
 * cannot. */
void mgpu_link_cache_store(const struct mgpu_link_cache_file *f, int n,
                           const double gbps[][MGPU_MAX_GPUS]);

/* The file's text (len bytes, NUL-terminated) read against the key and
 * the devices: 0 with gbps and *measurements filled, or -1 where it is
 * anything but such a file for them. For the fuzzer and the tests. */
int mgpu_link_cache_parse(const char *text, size_t len, uint64_t key, const char *devices, int n,
                          double gbps[][MGPU_MAX_GPUS], int *measurements);

/* The file's text for them into out; 0, or -1 where it does not fit or a
 * figure or the count is out of range. */
int mgpu_link_cache_format(uint64_t key, const char *devices, int n,
                           const double gbps[][MGPU_MAX_GPUS], int measurements, char *out,
                           size_t len);

#endif
