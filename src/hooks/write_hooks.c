/* Owns the hooks of the driver calls that may write device memory and
 * that mgpu does not otherwise route: graph launches, stream memory
 * operations, the async 2D/3D/peer/array/batch copies, 2D sets and the
 * legacy launches. Each passes through unchanged after telling the
 * replicas what it may write (mirror/README.md, "Coherence"): the range
 * where it is plain to see, otherwise everything. Without replicas that is
 * one relaxed load. A 2D set that leaves the pool allocation it starts in
 * is refused instead, as copy_hooks.c refuses the other sets. */
#include "src/hooks/hook_table.h"
#include "memory/memory_pool.h"
#include "mirror/replicas.h"

#include <cuda.h>
#include <cudaTypedefs.h>

/* cuda.h maps these names to their _v2 forms; here they name the older
 * exported symbols, which programs built against older headers call. */
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamBatchMemOp

/* A call whose writes are not worked out: every replica goes stale. */
#define ANYWHERE_HOOK(sym, pfn, params, args)                                                      \
    MGPU_DECLARE_HOOK(sym, pfn);                                                                   \
    static CUresult CUDAAPI hook_##sym params                                                      \
    {                                                                                              \
        MGPU_HOOK_ENTRY(sym);                                                                      \
        mgpu_replicas_written_anywhere();                                                          \
        return real_##sym args;                                                                    \
    }

/* A call that writes [dst, dst + bytes). */
#define RANGE_HOOK(sym, pfn, params, args, dst, bytes)                                             \
    MGPU_DECLARE_HOOK(sym, pfn);                                                                   \
    static CUresult CUDAAPI hook_##sym params                                                      \
    {                                                                                              \
        MGPU_HOOK_ENTRY(sym);                                                                      \
        mgpu_replicas_written((dst), (bytes));                                                     \
        return real_##sym args;                                                                    \
    }

ANYWHERE_HOOK(cuGraphLaunch, PFN_cuGraphLaunch_v10000, (CUgraphExec g, CUstream s), (g, s))
ANYWHERE_HOOK(cuGraphLaunch_ptsz, PFN_cuGraphLaunch_v10000_ptsz, (CUgraphExec g, CUstream s),
              (g, s))
ANYWHERE_HOOK(cuLaunch, PFN_cuLaunch_v2000, (CUfunction f), (f))
ANYWHERE_HOOK(cuLaunchGrid, PFN_cuLaunchGrid_v2000, (CUfunction f, int w, int h), (f, w, h))
ANYWHERE_HOOK(cuLaunchGridAsync, PFN_cuLaunchGridAsync_v2000,
              (CUfunction f, int w, int h, CUstream s), (f, w, h, s))
ANYWHERE_HOOK(cuLaunchCooperativeKernelMultiDevice, PFN_cuLaunchCooperativeKernelMultiDevice_v9000,
              (CUDA_LAUNCH_PARAMS * list, unsigned n, unsigned flags), (list, n, flags))
ANYWHERE_HOOK(cuMemcpy2DAsync_v2, PFN_cuMemcpy2DAsync_v3020, (const CUDA_MEMCPY2D *c, CUstream s),
              (c, s))
ANYWHERE_HOOK(cuMemcpy2DAsync_v2_ptsz, PFN_cuMemcpy2DAsync_v7000_ptsz,
              (const CUDA_MEMCPY2D *c, CUstream s), (c, s))
ANYWHERE_HOOK(cuMemcpy3DAsync_v2, PFN_cuMemcpy3DAsync_v3020, (const CUDA_MEMCPY3D *c, CUstream s),
              (c, s))
ANYWHERE_HOOK(cuMemcpy3DAsync_v2_ptsz, PFN_cuMemcpy3DAsync_v7000_ptsz,
              (const CUDA_MEMCPY3D *c, CUstream s), (c, s))
ANYWHERE_HOOK(cuMemcpy3DPeerAsync, PFN_cuMemcpy3DPeerAsync_v4000,
              (const CUDA_MEMCPY3D_PEER *c, CUstream s), (c, s))
ANYWHERE_HOOK(cuMemcpy3DPeerAsync_ptsz, PFN_cuMemcpy3DPeerAsync_v7000_ptsz,
              (const CUDA_MEMCPY3D_PEER *c, CUstream s), (c, s))
ANYWHERE_HOOK(cuMemcpyBatchAsync, PFN_cuMemcpyBatchAsync_v12080,
              (CUdeviceptr * d, CUdeviceptr *src, size_t *sizes, size_t n, CUmemcpyAttributes *a,
               size_t *ai, size_t na, size_t *fail, CUstream s),
              (d, src, sizes, n, a, ai, na, fail, s))
ANYWHERE_HOOK(cuMemcpyBatchAsync_ptsz, PFN_cuMemcpyBatchAsync_v12080_ptsz,
              (CUdeviceptr * d, CUdeviceptr *src, size_t *sizes, size_t n, CUmemcpyAttributes *a,
               size_t *ai, size_t na, size_t *fail, CUstream s),
              (d, src, sizes, n, a, ai, na, fail, s))
ANYWHERE_HOOK(cuMemcpyBatchAsync_v2, PFN_cuMemcpyBatchAsync_v13000,
              (CUdeviceptr * d, CUdeviceptr *src, size_t *sizes, size_t n, CUmemcpyAttributes *a,
               size_t *ai, size_t na, CUstream s),
              (d, src, sizes, n, a, ai, na, s))
ANYWHERE_HOOK(cuMemcpyBatchAsync_v2_ptsz, PFN_cuMemcpyBatchAsync_v13000_ptsz,
              (CUdeviceptr * d, CUdeviceptr *src, size_t *sizes, size_t n, CUmemcpyAttributes *a,
               size_t *ai, size_t na, CUstream s),
              (d, src, sizes, n, a, ai, na, s))
ANYWHERE_HOOK(cuMemcpy3DBatchAsync, PFN_cuMemcpy3DBatchAsync_v12080,
              (size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail, unsigned long long flags,
               CUstream s),
              (n, ops, fail, flags, s))
ANYWHERE_HOOK(cuMemcpy3DBatchAsync_ptsz, PFN_cuMemcpy3DBatchAsync_v12080_ptsz,
              (size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail, unsigned long long flags,
               CUstream s),
              (n, ops, fail, flags, s))
ANYWHERE_HOOK(cuMemcpy3DBatchAsync_v2, PFN_cuMemcpy3DBatchAsync_v13000,
              (size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, CUstream s),
              (n, ops, flags, s))
ANYWHERE_HOOK(cuMemcpy3DBatchAsync_v2_ptsz, PFN_cuMemcpy3DBatchAsync_v13000_ptsz,
              (size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, CUstream s),
              (n, ops, flags, s))
ANYWHERE_HOOK(cuStreamBatchMemOp, PFN_cuStreamBatchMemOp_v8000,
              (CUstream s, unsigned n, CUstreamBatchMemOpParams *ops, unsigned flags),
              (s, n, ops, flags))
ANYWHERE_HOOK(cuStreamBatchMemOp_ptsz, PFN_cuStreamBatchMemOp_v8000_ptsz,
              (CUstream s, unsigned n, CUstreamBatchMemOpParams *ops, unsigned flags),
              (s, n, ops, flags))
ANYWHERE_HOOK(cuStreamBatchMemOp_v2, PFN_cuStreamBatchMemOp_v11070,
              (CUstream s, unsigned n, CUstreamBatchMemOpParams *ops, unsigned flags),
              (s, n, ops, flags))
ANYWHERE_HOOK(cuStreamBatchMemOp_v2_ptsz, PFN_cuStreamBatchMemOp_v11070_ptsz,
              (CUstream s, unsigned n, CUstreamBatchMemOpParams *ops, unsigned flags),
              (s, n, ops, flags))

RANGE_HOOK(cuMemcpyPeerAsync, PFN_cuMemcpyPeerAsync_v4000,
           (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s),
           (dst, dc, src, sc, n, s), dst, n)
RANGE_HOOK(cuMemcpyPeerAsync_ptsz, PFN_cuMemcpyPeerAsync_v7000_ptsz,
           (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s),
           (dst, dc, src, sc, n, s), dst, n)
RANGE_HOOK(cuMemcpyAtoD_v2, PFN_cuMemcpyAtoD_v3020,
           (CUdeviceptr dst, CUarray a, size_t offset, size_t n), (dst, a, offset, n), dst, n)
RANGE_HOOK(cuMemcpyAtoD_v2_ptds, PFN_cuMemcpyAtoD_v7000_ptds,
           (CUdeviceptr dst, CUarray a, size_t offset, size_t n), (dst, a, offset, n), dst, n)
RANGE_HOOK(cuStreamWriteValue32, PFN_cuStreamWriteValue32_v8000,
           (CUstream s, CUdeviceptr at, cuuint32_t v, unsigned flags), (s, at, v, flags), at, 4)
RANGE_HOOK(cuStreamWriteValue32_ptsz, PFN_cuStreamWriteValue32_v8000_ptsz,
           (CUstream s, CUdeviceptr at, cuuint32_t v, unsigned flags), (s, at, v, flags), at, 4)
RANGE_HOOK(cuStreamWriteValue32_v2, PFN_cuStreamWriteValue32_v11070,
           (CUstream s, CUdeviceptr at, cuuint32_t v, unsigned flags), (s, at, v, flags), at, 4)
RANGE_HOOK(cuStreamWriteValue32_v2_ptsz, PFN_cuStreamWriteValue32_v11070_ptsz,
           (CUstream s, CUdeviceptr at, cuuint32_t v, unsigned flags), (s, at, v, flags), at, 4)
RANGE_HOOK(cuStreamWriteValue64, PFN_cuStreamWriteValue64_v9000,
           (CUstream s, CUdeviceptr at, cuuint64_t v, unsigned flags), (s, at, v, flags), at, 8)
RANGE_HOOK(cuStreamWriteValue64_ptsz, PFN_cuStreamWriteValue64_v9000_ptsz,
           (CUstream s, CUdeviceptr at, cuuint64_t v, unsigned flags), (s, at, v, flags), at, 8)
RANGE_HOOK(cuStreamWriteValue64_v2, PFN_cuStreamWriteValue64_v11070,
           (CUstream s, CUdeviceptr at, cuuint64_t v, unsigned flags), (s, at, v, flags), at, 8)
RANGE_HOOK(cuStreamWriteValue64_v2_ptsz, PFN_cuStreamWriteValue64_v11070_ptsz,
           (CUstream s, CUdeviceptr at, cuuint64_t v, unsigned flags), (s, at, v, flags), at, 8)

/* A 2D set of [dst, dst + bytes): refused, as by the driver, when it
 * leaves the pool allocation it starts in (copy_hooks.c says why). */
#define BOUNDED_RANGE_HOOK(sym, pfn, params, args, dst, bytes)                                     \
    MGPU_DECLARE_HOOK(sym, pfn);                                                                   \
    static CUresult CUDAAPI hook_##sym params                                                      \
    {                                                                                              \
        MGPU_HOOK_ENTRY(sym);                                                                      \
        if (mgpu_pool_overruns((dst), (bytes)))                                                    \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
        mgpu_replicas_written((dst), (bytes));                                                     \
        return real_##sym args;                                                                    \
    }

/* The bytes a 2D set of `height` rows of `width` elements of `element`
 * bytes touches from its start, `pitch` apart. */
static size_t rows_span(size_t pitch, size_t width, size_t height, size_t element)
{
    return height == 0 ? 0 : pitch * (height - 1) + width * element;
}

#define SET2D_HOOK(sym, pfn, type, element)                                                        \
    BOUNDED_RANGE_HOOK(sym, pfn, (CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h),      \
                       (dst, pitch, v, w, h), dst, rows_span(pitch, w, h, element))
#define SET2D_ASYNC_HOOK(sym, pfn, type, element)                                                  \
    BOUNDED_RANGE_HOOK(sym, pfn,                                                                   \
                       (CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h, CUstream s),    \
                       (dst, pitch, v, w, h, s), dst, rows_span(pitch, w, h, element))

SET2D_HOOK(cuMemsetD2D8_v2, PFN_cuMemsetD2D8_v3020, unsigned char, 1)
SET2D_HOOK(cuMemsetD2D16_v2, PFN_cuMemsetD2D16_v3020, unsigned short, 2)
SET2D_HOOK(cuMemsetD2D32_v2, PFN_cuMemsetD2D32_v3020, unsigned int, 4)
SET2D_HOOK(cuMemsetD2D8_v2_ptds, PFN_cuMemsetD2D8_v7000_ptds, unsigned char, 1)
SET2D_HOOK(cuMemsetD2D16_v2_ptds, PFN_cuMemsetD2D16_v7000_ptds, unsigned short, 2)
SET2D_HOOK(cuMemsetD2D32_v2_ptds, PFN_cuMemsetD2D32_v7000_ptds, unsigned int, 4)
SET2D_ASYNC_HOOK(cuMemsetD2D8Async, PFN_cuMemsetD2D8Async_v3020, unsigned char, 1)
SET2D_ASYNC_HOOK(cuMemsetD2D16Async, PFN_cuMemsetD2D16Async_v3020, unsigned short, 2)
SET2D_ASYNC_HOOK(cuMemsetD2D32Async, PFN_cuMemsetD2D32Async_v3020, unsigned int, 4)
SET2D_ASYNC_HOOK(cuMemsetD2D8Async_ptsz, PFN_cuMemsetD2D8Async_v7000_ptsz, unsigned char, 1)
SET2D_ASYNC_HOOK(cuMemsetD2D16Async_ptsz, PFN_cuMemsetD2D16Async_v7000_ptsz, unsigned short, 2)
SET2D_ASYNC_HOOK(cuMemsetD2D32Async_ptsz, PFN_cuMemsetD2D32Async_v7000_ptsz, unsigned int, 4)

const struct mgpu_hook mgpu_write_hooks[] = {
    MGPU_HOOK(cuGraphLaunch),
    MGPU_HOOK(cuGraphLaunch_ptsz),
    MGPU_HOOK(cuLaunch),
    MGPU_HOOK(cuLaunchGrid),
    MGPU_HOOK(cuLaunchGridAsync),
    MGPU_HOOK(cuLaunchCooperativeKernelMultiDevice),
    MGPU_HOOK(cuMemcpy2DAsync_v2),
    MGPU_HOOK(cuMemcpy2DAsync_v2_ptsz),
    MGPU_HOOK(cuMemcpy3DAsync_v2),
    MGPU_HOOK(cuMemcpy3DAsync_v2_ptsz),
    MGPU_HOOK(cuMemcpy3DPeerAsync),
    MGPU_HOOK(cuMemcpy3DPeerAsync_ptsz),
    MGPU_HOOK(cuMemcpyBatchAsync),
    MGPU_HOOK(cuMemcpyBatchAsync_ptsz),
    MGPU_HOOK(cuMemcpyBatchAsync_v2),
    MGPU_HOOK(cuMemcpyBatchAsync_v2_ptsz),
    MGPU_HOOK(cuMemcpy3DBatchAsync),
    MGPU_HOOK(cuMemcpy3DBatchAsync_ptsz),
    MGPU_HOOK(cuMemcpy3DBatchAsync_v2),
    MGPU_HOOK(cuMemcpy3DBatchAsync_v2_ptsz),
    MGPU_HOOK(cuStreamBatchMemOp),
    MGPU_HOOK(cuStreamBatchMemOp_ptsz),
    MGPU_HOOK(cuStreamBatchMemOp_v2),
    MGPU_HOOK(cuStreamBatchMemOp_v2_ptsz),
    MGPU_HOOK(cuMemcpyPeerAsync),
    MGPU_HOOK(cuMemcpyPeerAsync_ptsz),
    MGPU_HOOK(cuMemcpyAtoD_v2),
    MGPU_HOOK(cuMemcpyAtoD_v2_ptds),
    MGPU_HOOK(cuStreamWriteValue32),
    MGPU_HOOK(cuStreamWriteValue32_ptsz),
    MGPU_HOOK(cuStreamWriteValue32_v2),
    MGPU_HOOK(cuStreamWriteValue32_v2_ptsz),
    MGPU_HOOK(cuStreamWriteValue64),
    MGPU_HOOK(cuStreamWriteValue64_ptsz),
    MGPU_HOOK(cuStreamWriteValue64_v2),
    MGPU_HOOK(cuStreamWriteValue64_v2_ptsz),
    MGPU_HOOK(cuMemsetD2D8_v2),
    MGPU_HOOK(cuMemsetD2D16_v2),
    MGPU_HOOK(cuMemsetD2D32_v2),
    MGPU_HOOK(cuMemsetD2D8_v2_ptds),
    MGPU_HOOK(cuMemsetD2D16_v2_ptds),
    MGPU_HOOK(cuMemsetD2D32_v2_ptds),
    MGPU_HOOK(cuMemsetD2D8Async),
    MGPU_HOOK(cuMemsetD2D16Async),
    MGPU_HOOK(cuMemsetD2D32Async),
    MGPU_HOOK(cuMemsetD2D8Async_ptsz),
    MGPU_HOOK(cuMemsetD2D16Async_ptsz),
    MGPU_HOOK(cuMemsetD2D32Async_ptsz),
    MGPU_HOOK_END,
};
