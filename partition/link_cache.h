/* The links' measured bandwidths (link_measure.h) kept between runs, in
 * mgpu's cache directory (base/cache_dir.h), one file per ordered set of
 * devices, under the machine's key (base/machine_key.h): measuring takes
 * 60-70 ms on two or four H200s, during which a run's launches that could
 * leave the home GPU run whole, and its copies share the GPUs with the
 * program's first kernels. A run after the first on the same machine, boot
 * and devices reads them in well under a millisecond. A machine without a
 * key (no /proc/driver/nvidia) keeps nothing.
 *
 * The file, "links-" and the set's hash in hex:
 *   mgpu links 1
 *   key 0123456789abcdef
 *   devices UUID UUID ...
 *   then one line per device a: the GB/s from a to each device b.
 * Anything else is a file to measure again and replace. */
#ifndef MGPU_LINK_CACHE_H
#define MGPU_LINK_CACHE_H

#include "base/config.h"

#include <stddef.h>
#include <stdint.h>

/* The devices' names in the file: each device's UUID in hex, separated by
 * spaces, in the run's order, into out. Returns 0, or -1 where the driver
 * does not say (nothing is then kept). mgpu_drv must be initialised. */
int mgpu_link_cache_devices(const int *devices, int n, char *out, size_t len);

/* The file kept for the devices (in the cache directory, made if need be)
 * into out. Returns 0, or -1 where the directory cannot be made. */
int mgpu_link_cache_path(const char *devices, char *out, size_t len);

/* gbps[a][b] of the n devices named `devices` (mgpu_link_cache_devices),
 * from the file kept by an earlier run; 0, or -1 where there is none for
 * them on this machine (or it is not one mgpu wrote). */
int mgpu_link_cache_load(const char *devices, int n, double gbps[][MGPU_MAX_GPUS]);

/* Keeps gbps for the next runs; quietly nothing where it cannot. */
void mgpu_link_cache_store(const char *devices, int n, const double gbps[][MGPU_MAX_GPUS]);

/* The file's text (len bytes, NUL-terminated) read against the key and
 * the devices: 0 with gbps filled, or -1 where it is anything but such a
 * file for them. For the fuzzer and the tests. */
int mgpu_link_cache_parse(const char *text, size_t len, uint64_t key, const char *devices, int n,
                          double gbps[][MGPU_MAX_GPUS]);

/* The file's text for them into out; 0, or -1 where it does not fit. */
int mgpu_link_cache_format(uint64_t key, const char *devices, int n,
                           const double gbps[][MGPU_MAX_GPUS], char *out, size_t len);

#endif
