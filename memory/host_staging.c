/* Owns the per-GPU pinned staging buffers and the staged copy of pageable
 * host memory to a GPU (see host_staging.h). A GPU's buffers are used only
 * by that GPU's worker thread, under the copy router's lock. */
#include "memory/host_staging.h"

#include "base/config.h"
#include "base/real_driver.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

/* 4 MiB chunks moved as much as 16 MiB ones and more than 64 MiB ones. */
#define CHUNK ((size_t)4 << 20)
#define BUFFERS 2

struct gpu_staging {
    bool tried, ready;
    void *buffer[BUFFERS];
    CUevent drained[BUFFERS]; /* recorded after the copy out of buffer[k] */
};

static struct gpu_staging staging[MGPU_MAX_GPUS];
static atomic_ullong staged_bytes;

unsigned long long mgpu_staged_bytes(void)
{
    return atomic_load(&staged_bytes);
}

/* On first use, in the worker thread: its NUMA node gets the pages. */
static bool prepare(struct gpu_staging *s)
{
    if (s->tried)
        return s->ready;
    s->tried = true;
    /* The event calls are among the driver calls mgpu always has. */
    if (mgpu_drv.cuMemHostAlloc == NULL || mgpu_drv.cuMemcpyHtoDAsync == NULL)
        return false;
    for (int k = 0; k < BUFFERS; k++)
        if (mgpu_drv.cuMemHostAlloc(&s->buffer[k], CHUNK, 0) != CUDA_SUCCESS ||
            mgpu_drv.cuEventCreate(&s->drained[k], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
            return false; /* what was made stays unused until exit */
    s->ready = true;
    return true;
}

CUresult mgpu_staged_to_device(int gpu, CUdeviceptr dst, const void *src, size_t bytes,
                               CUstream stream)
{
    if (gpu < 0 || gpu >= MGPU_MAX_GPUS || !prepare(&staging[gpu]))
        return CUDA_ERROR_NOT_SUPPORTED;
    struct gpu_staging *s = &staging[gpu];
    const char *from = src;
    int k = 0;
    for (size_t done = 0; done < bytes; done += CHUNK, k = (k + 1) % BUFFERS) {
        size_t n = bytes - done < CHUNK ? bytes - done : CHUNK;
        /* The buffer's previous chunk has reached the GPU (an event never
         * recorded counts as reached). */
        CUresult r = mgpu_drv.cuEventSynchronize(s->drained[k]);
        if (r != CUDA_SUCCESS)
            return r;
        memcpy(s->buffer[k], from + done, n);
        r = mgpu_drv.cuMemcpyHtoDAsync(dst + done, s->buffer[k], n, stream);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuEventRecord(s->drained[k], stream);
        if (r != CUDA_SUCCESS)
            return r;
        atomic_fetch_add(&staged_bytes, n);
    }
    return CUDA_SUCCESS;
}
