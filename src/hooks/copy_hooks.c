/* Owns the hooks of the copies and sets of device memory (cuMemcpy*,
 * cuMemset*, plain and stream-ordered, each with its per-thread-stream
 * variant). Each one
 * - refuses, with CUDA_ERROR_INVALID_VALUE and before touching memory, a
 *   range that starts inside a pool allocation and runs past its end, as
 *   the driver refuses one that leaves its own allocation: in the pool the
 *   next allocation lies there, mapped;
 * - watches for writes into a __constant__ variable of a module with
 *   per-GPU rewritten modules, which makes the copies refresh it before that module's
 *   next launch;
 * - hands copies and sets of pool memory to the copy router, which splits
 *   them by owning GPU; what it leaves goes to the driver unchanged;
 * - if it is one of the blocking forms, answers the error of a slice that
 *   failed on another GPU (sched/slice_errors.h), as the driver answers a
 *   kernel's fault from the blocking copy that follows it.
 * Forms the router does not split (2D/3D copies, peer copies) pass
 * through, which is correct because pool addresses are valid on every
 * GPU; their blocking forms are hooked for the slice errors only. They
 * write constants only in programs that look the address up again first,
 * which the symbol lookup hooks see. */
#include "memory/copy_router.h"
#include "memory/memory_pool.h"
#include "src/hooks/hook_table.h"
#include "modules/program_modules.h"
#include "mirror/replicas.h"
#include "sched/slice_errors.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#define SYNC_LEGACY ((struct mgpu_copy_call){CU_STREAM_LEGACY, true})
#define SYNC_PER_THREAD ((struct mgpu_copy_call){CU_STREAM_PER_THREAD, true})
#define ASYNC(s) ((struct mgpu_copy_call){(s), false})
/* In a _ptsz call, stream 0 is the calling thread's default stream. */
#define ASYNC_PER_THREAD(s) ((struct mgpu_copy_call){(s) ? (s) : CU_STREAM_PER_THREAD, false})

#define COPY_HOOK(sym, pfn, params, args, leaves, written, route, answer)                          \
    MGPU_DECLARE_HOOK(sym, pfn);                                                                   \
    static CUresult CUDAAPI hook_##sym params                                                      \
    {                                                                                              \
        MGPU_HOOK_ENTRY(sym);                                                                      \
        if (leaves)                                                                                \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
        written;                                                                                   \
        CUresult routed;                                                                           \
        CUresult r = (route) ? routed : real_##sym args;                                           \
        return answer(r);                                                                          \
    }

/* How each form answers, after the copy or set itself:
 * - a blocking copy waited for the work before it, as it does in the
 *   driver, where it returns a kernel's fault and flushes device printf;
 * - a blocking set of device memory does not wait (the driver's own rule),
 *   so it answers a slice error only if one was already found;
 * - a stream-ordered one answers what the driver said, as launches do. */
#define AFTER_BLOCKING_COPY(r) mgpu_slice_errors_check((r), true)
#define AFTER_BLOCKING_SET(r) mgpu_slice_errors_check((r), false)
#define AS_QUEUED(r) (r)

#define HTOD_PARAMS (CUdeviceptr dst, const void *src, size_t n)
#define HTOD_ASYNC_PARAMS (CUdeviceptr dst, const void *src, size_t n, CUstream s)
#define DTOH_PARAMS (void *dst, CUdeviceptr src, size_t n)
#define DTOH_ASYNC_PARAMS (void *dst, CUdeviceptr src, size_t n, CUstream s)
#define DTOD_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t n)
#define DTOD_ASYNC_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
#define SET_PARAMS(T) (CUdeviceptr dst, T value, size_t n)
#define SET_ASYNC_PARAMS(T) (CUdeviceptr dst, T value, size_t n, CUstream s)
/* A copy or set that starts inside a pool allocation and leaves it is
 * refused before anything is written or read, as the driver refuses one
 * that leaves its own allocation (mgpu_pool_overruns). */
#define LEAVES(p, bytes) mgpu_pool_overruns((p), (bytes))
/* The bytes of `count` elements of `size`, saturated: past SIZE_MAX
 * leaves any allocation. */
#define SET_BYTES(count, size) ((count) > SIZE_MAX / (size) ? SIZE_MAX : (count) * (size))
#define NOTHING_WRITTEN ((void)0)
/* A write into device memory: stale __constant__ copies and replicas. */
#define WRITES(dst, bytes)                                                                         \
    (mgpu_program_memory_written((dst), (bytes)), mgpu_replicas_written((dst), (bytes)))

COPY_HOOK(cuMemcpyHtoD_v2, PFN_cuMemcpyHtoD_v3020, HTOD_PARAMS, (dst, src, n), LEAVES(dst, n),
          WRITES(dst, n), mgpu_copy_to_device(dst, src, n, SYNC_LEGACY, &routed),
          AFTER_BLOCKING_COPY)
COPY_HOOK(cuMemcpyDtoH_v2, PFN_cuMemcpyDtoH_v3020, DTOH_PARAMS, (dst, src, n), LEAVES(src, n),
          NOTHING_WRITTEN, mgpu_copy_to_host(dst, src, n, SYNC_LEGACY, &routed),
          AFTER_BLOCKING_COPY)
COPY_HOOK(cuMemcpyDtoD_v2, PFN_cuMemcpyDtoD_v3020, DTOD_PARAMS, (dst, src, n),
          LEAVES(dst, n) || LEAVES(src, n), WRITES(dst, n),
          mgpu_copy_on_device(dst, src, n, SYNC_LEGACY, &routed), AFTER_BLOCKING_COPY)
COPY_HOOK(cuMemcpy, PFN_cuMemcpy_v4000, DTOD_PARAMS, (dst, src, n),
          LEAVES(dst, n) || LEAVES(src, n), WRITES(dst, n),
          mgpu_copy_unified(dst, src, n, SYNC_LEGACY, &routed), AFTER_BLOCKING_COPY)
COPY_HOOK(cuMemsetD8_v2, PFN_cuMemsetD8_v3020, SET_PARAMS(unsigned char), (dst, value, n),
          LEAVES(dst, SET_BYTES(n, 1)), WRITES(dst, n),
          mgpu_set_device(dst, value, 1, n, SYNC_LEGACY, &routed), AFTER_BLOCKING_SET)
COPY_HOOK(cuMemsetD16_v2, PFN_cuMemsetD16_v3020, SET_PARAMS(unsigned short), (dst, value, n),
          LEAVES(dst, SET_BYTES(n, 2)), WRITES(dst, 2 * n),
          mgpu_set_device(dst, value, 2, n, SYNC_LEGACY, &routed), AFTER_BLOCKING_SET)
COPY_HOOK(cuMemsetD32_v2, PFN_cuMemsetD32_v3020, SET_PARAMS(unsigned), (dst, value, n),
          LEAVES(dst, SET_BYTES(n, 4)), WRITES(dst, 4 * n),
          mgpu_set_device(dst, value, 4, n, SYNC_LEGACY, &routed), AFTER_BLOCKING_SET)
COPY_HOOK(cuMemcpyHtoD_v2_ptds, PFN_cuMemcpyHtoD_v7000_ptds, HTOD_PARAMS, (dst, src, n),
          LEAVES(dst, n), WRITES(dst, n),
          mgpu_copy_to_device(dst, src, n, SYNC_PER_THREAD, &routed), AFTER_BLOCKING_COPY)
COPY_HOOK(cuMemcpyDtoH_v2_ptds, PFN_cuMemcpyDtoH_v7000_ptds, DTOH_PARAMS, (dst, src, n),
          LEAVES(src, n), NOTHING_WRITTEN, mgpu_copy_to_host(dst, src, n, SYNC_PER_THREAD, &routed),
          AFTER_BLOCKING_COPY)
COPY_HOOK(cuMemcpyDtoD_v2_ptds, PFN_cuMemcpyDtoD_v7000_ptds, DTOD_PARAMS, (dst, src, n),
          LEAVES(dst, n) || LEAVES(src, n), WRITES(dst, n),
          mgpu_copy_on_device(dst, src, n, SYNC_PER_THREAD, &routed), AFTER_BLOCKING_COPY)
COPY_HOOK(cuMemcpy_ptds, PFN_cuMemcpy_v7000_ptds, DTOD_PARAMS, (dst, src, n),
          LEAVES(dst, n) || LEAVES(src, n), WRITES(dst, n),
          mgpu_copy_unified(dst, src, n, SYNC_PER_THREAD, &routed), AFTER_BLOCKING_COPY)
COPY_HOOK(cuMemsetD8_v2_ptds, PFN_cuMemsetD8_v7000_ptds, SET_PARAMS(unsigned char), (dst, value, n),
          LEAVES(dst, SET_BYTES(n, 1)), WRITES(dst, n),
          mgpu_set_device(dst, value, 1, n, SYNC_PER_THREAD, &routed), AFTER_BLOCKING_SET)
COPY_HOOK(cuMemsetD16_v2_ptds, PFN_cuMemsetD16_v7000_ptds, SET_PARAMS(unsigned short),
          (dst, value, n), LEAVES(dst, SET_BYTES(n, 2)), WRITES(dst, 2 * n),
          mgpu_set_device(dst, value, 2, n, SYNC_PER_THREAD, &routed), AFTER_BLOCKING_SET)
COPY_HOOK(cuMemsetD32_v2_ptds, PFN_cuMemsetD32_v7000_ptds, SET_PARAMS(unsigned), (dst, value, n),
          LEAVES(dst, SET_BYTES(n, 4)), WRITES(dst, 4 * n),
          mgpu_set_device(dst, value, 4, n, SYNC_PER_THREAD, &routed), AFTER_BLOCKING_SET)
COPY_HOOK(cuMemcpyHtoDAsync_v2, PFN_cuMemcpyHtoDAsync_v3020, HTOD_ASYNC_PARAMS, (dst, src, n, s),
          LEAVES(dst, n), WRITES(dst, n), mgpu_copy_to_device(dst, src, n, ASYNC(s), &routed),
          AS_QUEUED)
COPY_HOOK(cuMemcpyDtoHAsync_v2, PFN_cuMemcpyDtoHAsync_v3020, DTOH_ASYNC_PARAMS, (dst, src, n, s),
          LEAVES(src, n), NOTHING_WRITTEN, mgpu_copy_to_host(dst, src, n, ASYNC(s), &routed),
          AS_QUEUED)
COPY_HOOK(cuMemcpyDtoDAsync_v2, PFN_cuMemcpyDtoDAsync_v3020, DTOD_ASYNC_PARAMS, (dst, src, n, s),
          LEAVES(dst, n) || LEAVES(src, n), WRITES(dst, n),
          mgpu_copy_on_device(dst, src, n, ASYNC(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemcpyAsync, PFN_cuMemcpyAsync_v4000, DTOD_ASYNC_PARAMS, (dst, src, n, s),
          LEAVES(dst, n) || LEAVES(src, n), WRITES(dst, n),
          mgpu_copy_unified(dst, src, n, ASYNC(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemsetD8Async, PFN_cuMemsetD8Async_v3020, SET_ASYNC_PARAMS(unsigned char),
          (dst, value, n, s), LEAVES(dst, SET_BYTES(n, 1)), WRITES(dst, n),
          mgpu_set_device(dst, value, 1, n, ASYNC(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemsetD16Async, PFN_cuMemsetD16Async_v3020, SET_ASYNC_PARAMS(unsigned short),
          (dst, value, n, s), LEAVES(dst, SET_BYTES(n, 2)), WRITES(dst, 2 * n),
          mgpu_set_device(dst, value, 2, n, ASYNC(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemsetD32Async, PFN_cuMemsetD32Async_v3020, SET_ASYNC_PARAMS(unsigned),
          (dst, value, n, s), LEAVES(dst, SET_BYTES(n, 4)), WRITES(dst, 4 * n),
          mgpu_set_device(dst, value, 4, n, ASYNC(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemcpyHtoDAsync_v2_ptsz, PFN_cuMemcpyHtoDAsync_v7000_ptsz, HTOD_ASYNC_PARAMS,
          (dst, src, n, s), LEAVES(dst, n), WRITES(dst, n),
          mgpu_copy_to_device(dst, src, n, ASYNC_PER_THREAD(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemcpyDtoHAsync_v2_ptsz, PFN_cuMemcpyDtoHAsync_v7000_ptsz, DTOH_ASYNC_PARAMS,
          (dst, src, n, s), LEAVES(src, n), NOTHING_WRITTEN,
          mgpu_copy_to_host(dst, src, n, ASYNC_PER_THREAD(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemcpyDtoDAsync_v2_ptsz, PFN_cuMemcpyDtoDAsync_v7000_ptsz, DTOD_ASYNC_PARAMS,
          (dst, src, n, s), LEAVES(dst, n) || LEAVES(src, n), WRITES(dst, n),
          mgpu_copy_on_device(dst, src, n, ASYNC_PER_THREAD(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemcpyAsync_ptsz, PFN_cuMemcpyAsync_v7000_ptsz, DTOD_ASYNC_PARAMS, (dst, src, n, s),
          LEAVES(dst, n) || LEAVES(src, n), WRITES(dst, n),
          mgpu_copy_unified(dst, src, n, ASYNC_PER_THREAD(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemsetD8Async_ptsz, PFN_cuMemsetD8Async_v7000_ptsz, SET_ASYNC_PARAMS(unsigned char),
          (dst, value, n, s), LEAVES(dst, SET_BYTES(n, 1)), WRITES(dst, n),
          mgpu_set_device(dst, value, 1, n, ASYNC_PER_THREAD(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemsetD16Async_ptsz, PFN_cuMemsetD16Async_v7000_ptsz, SET_ASYNC_PARAMS(unsigned short),
          (dst, value, n, s), LEAVES(dst, SET_BYTES(n, 2)), WRITES(dst, 2 * n),
          mgpu_set_device(dst, value, 2, n, ASYNC_PER_THREAD(s), &routed), AS_QUEUED)
COPY_HOOK(cuMemsetD32Async_ptsz, PFN_cuMemsetD32Async_v7000_ptsz, SET_ASYNC_PARAMS(unsigned),
          (dst, value, n, s), LEAVES(dst, SET_BYTES(n, 4)), WRITES(dst, 4 * n),
          mgpu_set_device(dst, value, 4, n, ASYNC_PER_THREAD(s), &routed), AS_QUEUED)

/* Blocking forms the router leaves to the driver, hooked for their answer.
 * Where they write is not worked out: every replica goes stale. */
#define BLOCKING_COPY_HOOK(sym, pfn, params, args)                                                 \
    MGPU_DECLARE_HOOK(sym, pfn);                                                                   \
    static CUresult CUDAAPI hook_##sym params                                                      \
    {                                                                                              \
        MGPU_HOOK_ENTRY(sym);                                                                      \
        mgpu_replicas_written_anywhere();                                                          \
        return AFTER_BLOCKING_COPY(real_##sym args);                                               \
    }

#define PEER_PARAMS                                                                                \
    (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n)
#define PEER_ARGS (dst, dst_ctx, src, src_ctx, n)

BLOCKING_COPY_HOOK(cuMemcpy2D_v2, PFN_cuMemcpy2D_v3020, (const CUDA_MEMCPY2D *copy), (copy))
BLOCKING_COPY_HOOK(cuMemcpy2DUnaligned_v2, PFN_cuMemcpy2DUnaligned_v3020,
                   (const CUDA_MEMCPY2D *copy), (copy))
BLOCKING_COPY_HOOK(cuMemcpy3D_v2, PFN_cuMemcpy3D_v3020, (const CUDA_MEMCPY3D *copy), (copy))
BLOCKING_COPY_HOOK(cuMemcpy3DPeer, PFN_cuMemcpy3DPeer_v4000, (const CUDA_MEMCPY3D_PEER *copy),
                   (copy))
BLOCKING_COPY_HOOK(cuMemcpyPeer, PFN_cuMemcpyPeer_v4000, PEER_PARAMS, PEER_ARGS)
BLOCKING_COPY_HOOK(cuMemcpy2D_v2_ptds, PFN_cuMemcpy2D_v7000_ptds, (const CUDA_MEMCPY2D *copy),
                   (copy))
BLOCKING_COPY_HOOK(cuMemcpy2DUnaligned_v2_ptds, PFN_cuMemcpy2DUnaligned_v7000_ptds,
                   (const CUDA_MEMCPY2D *copy), (copy))
BLOCKING_COPY_HOOK(cuMemcpy3D_v2_ptds, PFN_cuMemcpy3D_v7000_ptds, (const CUDA_MEMCPY3D *copy),
                   (copy))
BLOCKING_COPY_HOOK(cuMemcpy3DPeer_ptds, PFN_cuMemcpy3DPeer_v7000_ptds,
                   (const CUDA_MEMCPY3D_PEER *copy), (copy))
BLOCKING_COPY_HOOK(cuMemcpyPeer_ptds, PFN_cuMemcpyPeer_v7000_ptds, PEER_PARAMS, PEER_ARGS)

const struct mgpu_hook mgpu_copy_hooks[] = {
    MGPU_HOOK(cuMemcpyHtoD_v2),
    MGPU_HOOK(cuMemcpyDtoH_v2),
    MGPU_HOOK(cuMemcpyDtoD_v2),
    MGPU_HOOK(cuMemcpy),
    MGPU_HOOK(cuMemsetD8_v2),
    MGPU_HOOK(cuMemsetD16_v2),
    MGPU_HOOK(cuMemsetD32_v2),
    MGPU_HOOK(cuMemcpyHtoD_v2_ptds),
    MGPU_HOOK(cuMemcpyDtoH_v2_ptds),
    MGPU_HOOK(cuMemcpyDtoD_v2_ptds),
    MGPU_HOOK(cuMemcpy_ptds),
    MGPU_HOOK(cuMemsetD8_v2_ptds),
    MGPU_HOOK(cuMemsetD16_v2_ptds),
    MGPU_HOOK(cuMemsetD32_v2_ptds),
    MGPU_HOOK(cuMemcpyHtoDAsync_v2),
    MGPU_HOOK(cuMemcpyDtoHAsync_v2),
    MGPU_HOOK(cuMemcpyDtoDAsync_v2),
    MGPU_HOOK(cuMemcpyAsync),
    MGPU_HOOK(cuMemsetD8Async),
    MGPU_HOOK(cuMemsetD16Async),
    MGPU_HOOK(cuMemsetD32Async),
    MGPU_HOOK(cuMemcpyHtoDAsync_v2_ptsz),
    MGPU_HOOK(cuMemcpyDtoHAsync_v2_ptsz),
    MGPU_HOOK(cuMemcpyDtoDAsync_v2_ptsz),
    MGPU_HOOK(cuMemcpyAsync_ptsz),
    MGPU_HOOK(cuMemsetD8Async_ptsz),
    MGPU_HOOK(cuMemsetD16Async_ptsz),
    MGPU_HOOK(cuMemsetD32Async_ptsz),
    MGPU_HOOK(cuMemcpy2D_v2),
    MGPU_HOOK(cuMemcpy2DUnaligned_v2),
    MGPU_HOOK(cuMemcpy3D_v2),
    MGPU_HOOK(cuMemcpy3DPeer),
    MGPU_HOOK(cuMemcpyPeer),
    MGPU_HOOK(cuMemcpy2D_v2_ptds),
    MGPU_HOOK(cuMemcpy2DUnaligned_v2_ptds),
    MGPU_HOOK(cuMemcpy3D_v2_ptds),
    MGPU_HOOK(cuMemcpy3DPeer_ptds),
    MGPU_HOOK(cuMemcpyPeer_ptds),
    MGPU_HOOK_END,
};
