/* mgpu's public header. Programs need nothing from it to run under mgpu-run;
 * it lets a program or a tool ask which mgpu, if any, it is running under,
 * and where its memory lives. */
#ifndef MGPU_H
#define MGPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the libmgpu in the process, e.g. "0.1.0". A program that
 * wants to work without mgpu too looks this up with dlsym(RTLD_DEFAULT,
 * "mgpu_version") instead of linking libmgpu. */
const char *mgpu_version(void);

/* The GPU (0 .. n-1, in mgpu's order) whose memory holds the byte at `ptr`
 * of a device allocation, or -1 when mgpu's memory pool does not hold it. */
int mgpu_memory_owner(const void *ptr);

/* Moves the 2 MiB pages holding [ptr, ptr + bytes) of one device
 * allocation to GPU `gpu`: copied, then remapped, so the address stays the
 * same. Call it between kernels. Returns 0, or a CUresult code:
 * CUDA_ERROR_NOT_PERMITTED (800) for an allocation shared with another
 * process (cuIpcGetMemHandle), whose pages that process maps. */
int mgpu_memory_migrate(const void *ptr, size_t bytes, int gpu);

#ifdef __cplusplus
}
#endif

#endif
