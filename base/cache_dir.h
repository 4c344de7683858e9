/* mgpu's cache directory, shared by what mgpu keeps between runs: compiled
 * probes (src/run/probe_compile.c) and NVML's answers about the machine
 * (src/run/machine_cache.c). MGPU_CACHE_DIR, else $XDG_CACHE_HOME/mgpu,
 * else ~/.cache/mgpu, else /tmp/mgpu-cache-UID. */
#ifndef MGPU_CACHE_DIR_H
#define MGPU_CACHE_DIR_H

#include <stddef.h>

/* The directory's path into out, made (mode 0700, parents too) if need be.
 * Returns 0, or -1 with errno where it cannot be made, does not fit, or is
 * not a directory of the user's own that no one else may write (EACCES). */
int mgpu_cache_dir(char *out, size_t len);

#endif
