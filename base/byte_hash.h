/* FNV-1a over bytes: the key of what mgpu keeps in its cache directory
 * (compiled probes, NVML's answers about the machine). Not for secrets. */
#ifndef MGPU_BYTE_HASH_H
#define MGPU_BYTE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define MGPU_BYTE_HASH_START 1469598103934665603ull

/* h folded with n bytes of data; start with MGPU_BYTE_HASH_START. */
static inline uint64_t mgpu_byte_hash(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#endif
