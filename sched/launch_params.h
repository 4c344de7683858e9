/* Reading a launch's parameters as mgpu holds them for a module launch: in
 * the parameter array, or in the `extra` buffer at the offsets the driver
 * gave (program_modules.h). Shared by the slice plan, the mirrored reads,
 * the split's estimate and the pipeline's footprint lines. */
#ifndef MGPU_LAUNCH_PARAMS_H
#define MGPU_LAUNCH_PARAMS_H

#include "memory/memory_pool.h"
#include "modules/program_modules.h"
#include "ptx/ptx_footprint.h"

#include <stdbool.h>
#include <string.h>

/* Where the launch holds parameter i; NULL with neither array nor buffer. */
static inline const void *mgpu_launch_param_at(const struct mgpu_gpu_kernels *k, unsigned i,
                                               void *const *params, const void *buffer)
{
    if (params != NULL)
        return params[i];
    return buffer != NULL ? (const char *)buffer + k->param_offsets[i] : NULL;
}

/* The launch as a footprint reads it (ptx/ptx_footprint.h): its grid and
 * block, and its parameters' values where the launch holds them: the
 * array itself, or values[] (room for `max`) pointing into the buffer.
 * False, with no parameters in *l, when they are in a buffer of more than
 * `max` or in neither. */
static inline bool mgpu_launch_footprint(const struct mgpu_gpu_kernels *k, void *const *params,
                                         const void *buffer, const unsigned grid[3],
                                         const unsigned block[3], void **values, size_t max,
                                         struct mgpu_fp_launch *l)
{
    *l = (struct mgpu_fp_launch){.param_size = k->param_sizes};
    memcpy(l->grid, grid, sizeof l->grid);
    memcpy(l->block, block, sizeof l->block);
    if (params == NULL) {
        if (buffer == NULL || k->nparams > max)
            return false;
        for (unsigned i = 0; i < k->nparams; i++)
            values[i] = (char *)buffer + k->param_offsets[i];
        params = values;
    }
    l->params = params;
    l->nparams = k->nparams;
    return true;
}

/* Whether parameter i is an 8-byte value; fills *pointer with it if so. */
static inline bool mgpu_launch_param_pointer(const struct mgpu_gpu_kernels *k, unsigned i,
                                             void *const *params, const void *buffer,
                                             CUdeviceptr *pointer)
{
    const void *at = k->param_sizes[i] == sizeof(CUdeviceptr)
                         ? mgpu_launch_param_at(k, i, params, buffer)
                         : NULL;
    if (at == NULL)
        return false;
    memcpy(pointer, at, sizeof *pointer);
    return true;
}

/* Whether parameter i points into a pool buffer; fills *pointer and *b if so. */
static inline bool mgpu_launch_param_buffer(const struct mgpu_gpu_kernels *k, unsigned i,
                                            void *const *params, const void *buffer,
                                            CUdeviceptr *pointer, struct mgpu_pool_block *b)
{
    return mgpu_launch_param_pointer(k, i, params, buffer, pointer) && mgpu_pool_holds(*pointer) &&
           mgpu_pool_find(*pointer, b);
}

/* The pool buffers the parameters the kernel uses point into, each once,
 * into out (at most max); returns how many. */
static inline size_t mgpu_launch_param_buffers(const struct mgpu_gpu_kernels *k,
                                               void *const *params, const void *buffer,
                                               struct mgpu_pool_block *out, size_t max)
{
    size_t n = 0;
    for (unsigned i = 0; i < k->nparams && n < max; i++) {
        CUdeviceptr pointer;
        struct mgpu_pool_block b;
        if (k->param_use[i] == 0 || !mgpu_launch_param_buffer(k, i, params, buffer, &pointer, &b))
            continue;
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++)
            seen = out[j].start == b.start;
        if (!seen)
            out[n++] = b;
    }
    return n;
}

#endif
