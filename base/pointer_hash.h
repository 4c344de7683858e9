/* The hash of a handle or pointer for mgpu's open-addressed tables: a
 * 64-bit finaliser, so that handles a fixed stride apart spread out. */
#ifndef MGPU_POINTER_HASH_H
#define MGPU_POINTER_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline size_t mgpu_pointer_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

#endif
