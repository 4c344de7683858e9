/* Finding the real CUDA driver library (libcuda.so.1) without mgpu's shim. */
#ifndef MGPU_DRIVER_LOCATE_H
#define MGPU_DRIVER_LOCATE_H

#include <stddef.h>

/* Looks, in order, at MGPU_DRIVER, the directories of LD_LIBRARY_PATH and the
 * loader's cache (/etc/ld.so.cache), and writes the real path of the first
 * libcuda.so.1 that is not the file `skip` (mgpu's shim; may be NULL).
 * Returns 0, or -1 with a one-line message in err. */
int mgpu_driver_locate(const char *skip, char *out, size_t outlen, char *err, size_t errlen);

/* Looks `soname` up in a loader cache file; calls accept() on each x86-64
 * entry's path until it returns nonzero, and copies that path to out.
 * Returns 0 when an entry was accepted, -1 otherwise. */
int mgpu_ldcache_find(const char *cache_path, const char *soname,
                      int (*accept)(const char *path, void *ctx), void *ctx, char *out,
                      size_t outlen);

#endif
