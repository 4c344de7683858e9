/* Launch shapes (kernel, grid, block) as keys of the fixed open-addressing
 * tables that the MGPU_SPLIT=auto and MGPU_MIRROR=auto policies keep their
 * timings in: each table is an array of the policy's records, each record
 * starting with a struct mgpu_shape_key. Not thread-safe: the policy holds
 * its lock. */
#ifndef MGPU_SHAPE_TABLE_H
#define MGPU_SHAPE_TABLE_H

#include "pointer_hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct mgpu_shape_key {
    const void *kernel; /* NULL: free slot */
    unsigned grid[3], block[3];
};

/* The record of the shape in `records` (`count` of them, a power of two,
 * `stride` bytes apart, each starting with its key), claimed for it if it
 * had none (*fresh then true, the key set, the rest as it was: zero);
 * NULL when the table is full. */
static inline void *mgpu_shape_record(void *records, size_t count, size_t stride,
                                      const void *kernel, const unsigned grid[3],
                                      const unsigned block[3], bool *fresh)
{
    size_t h = mgpu_pointer_hash(kernel);
    for (int d = 0; d < 3; d++)
        h = h * 1000003u ^ grid[d] ^ ((size_t)block[d] << 20);
    *fresh = false;
    for (size_t probes = 0, i = h & (count - 1); probes < count;
         probes++, i = (i + 1) & (count - 1)) {
        struct mgpu_shape_key *key = (struct mgpu_shape_key *)((char *)records + i * stride);
        if (key->kernel == NULL) {
            key->kernel = kernel;
            memcpy(key->grid, grid, sizeof key->grid);
            memcpy(key->block, block, sizeof key->block);
            *fresh = true;
            return key;
        }
        if (key->kernel == kernel && memcmp(key->grid, grid, sizeof key->grid) == 0 &&
            memcmp(key->block, block, sizeof key->block) == 0)
            return key;
    }
    return NULL;
}

#endif
