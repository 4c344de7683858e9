/* Owns mgpu's public memory calls (mgpu.h): where a byte of a device
 * allocation lives, and moving pages between GPUs. */
#include "src/mgpu.h"

#include "memory/memory_pool.h"
#include "src/runtime.h"

#include <stdint.h>

MGPU_EXPORT int mgpu_memory_owner(const void *ptr)
{
    return mgpu_pool_owner((CUdeviceptr)(uintptr_t)ptr);
}

MGPU_EXPORT int mgpu_memory_migrate(const void *ptr, size_t bytes, int gpu)
{
    return (int)mgpu_pool_migrate((CUdeviceptr)(uintptr_t)ptr, bytes, gpu);
}
