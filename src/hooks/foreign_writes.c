/* Owns the entry points handed to libraries whose driver calls bypass
 * mgpu's hooks (libnccl, MGPU_PASSTHROUGH; see procaddress_hooks.c): each
 * is the driver's own function, except that those which may write device
 * memory first tell the replicas that anything may have changed
 * (mirror/replicas.h). Without that, a program's NCCL all-reduce into a
 * buffer mgpu mirrors would leave its replicas stale. mgpu's own NCCL
 * refreshes run "quiet" and are not counted. */
#include "src/hooks/foreign_writes.h"

#include "src/hooks/hook_table.h"
#include "mirror/replicas.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>

#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamBatchMemOp

#define FOREIGN(sym, pfn, params, args)                                                            \
    static pfn foreign_real_##sym;                                                                 \
    static CUresult CUDAAPI foreign_##sym params                                                   \
    {                                                                                              \
        mgpu_replicas_foreign_write();                                                             \
        return foreign_real_##sym args;                                                            \
    }

#define LAUNCH_PARAMS                                                                              \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,   \
     unsigned shared, CUstream s, void **params, void **extra)
#define LAUNCH_ARGS (f, gx, gy, gz, bx, by, bz, shared, s, params, extra)
#define COOPERATIVE_PARAMS                                                                         \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,   \
     unsigned shared, CUstream s, void **params)
#define COOPERATIVE_ARGS (f, gx, gy, gz, bx, by, bz, shared, s, params)
#define COPY_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
#define COPY_ARGS (dst, src, n, s)
#define HTOD_PARAMS (CUdeviceptr dst, const void *src, size_t n, CUstream s)
#define SET8_PARAMS (CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
#define SET32_PARAMS (CUdeviceptr dst, unsigned v, size_t n, CUstream s)
#define SET_ARGS (dst, v, n, s)
#define WRITE32_PARAMS (CUstream s, CUdeviceptr at, cuuint32_t v, unsigned flags)
#define WRITE64_PARAMS (CUstream s, CUdeviceptr at, cuuint64_t v, unsigned flags)
#define WRITE_ARGS (s, at, v, flags)
#define BATCH_PARAMS (CUstream s, unsigned n, CUstreamBatchMemOpParams *ops, unsigned flags)
#define BATCH_ARGS (s, n, ops, flags)
#define PEER_PARAMS                                                                                \
    (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s)
#define PEER_ARGS (dst, dc, src, sc, n, s)

FOREIGN(cuLaunchKernel, PFN_cuLaunchKernel_v4000, LAUNCH_PARAMS, LAUNCH_ARGS)
FOREIGN(cuLaunchKernel_ptsz, PFN_cuLaunchKernel_v7000_ptsz, LAUNCH_PARAMS, LAUNCH_ARGS)
FOREIGN(cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060,
        (const CUlaunchConfig *c, CUfunction f, void **params, void **extra), (c, f, params, extra))
FOREIGN(cuLaunchKernelEx_ptsz, PFN_cuLaunchKernelEx_v11060_ptsz,
        (const CUlaunchConfig *c, CUfunction f, void **params, void **extra), (c, f, params, extra))
FOREIGN(cuLaunchCooperativeKernel, PFN_cuLaunchCooperativeKernel_v9000, COOPERATIVE_PARAMS,
        COOPERATIVE_ARGS)
FOREIGN(cuLaunchCooperativeKernel_ptsz, PFN_cuLaunchCooperativeKernel_v9000_ptsz,
        COOPERATIVE_PARAMS, COOPERATIVE_ARGS)
FOREIGN(cuGraphLaunch, PFN_cuGraphLaunch_v10000, (CUgraphExec g, CUstream s), (g, s))
FOREIGN(cuGraphLaunch_ptsz, PFN_cuGraphLaunch_v10000_ptsz, (CUgraphExec g, CUstream s), (g, s))
FOREIGN(cuMemcpyAsync, PFN_cuMemcpyAsync_v4000, COPY_PARAMS, COPY_ARGS)
FOREIGN(cuMemcpyAsync_ptsz, PFN_cuMemcpyAsync_v7000_ptsz, COPY_PARAMS, COPY_ARGS)
FOREIGN(cuMemcpyDtoDAsync_v2, PFN_cuMemcpyDtoDAsync_v3020, COPY_PARAMS, COPY_ARGS)
FOREIGN(cuMemcpyDtoDAsync_v2_ptsz, PFN_cuMemcpyDtoDAsync_v7000_ptsz, COPY_PARAMS, COPY_ARGS)
FOREIGN(cuMemcpyHtoDAsync_v2, PFN_cuMemcpyHtoDAsync_v3020, HTOD_PARAMS, COPY_ARGS)
FOREIGN(cuMemcpyHtoDAsync_v2_ptsz, PFN_cuMemcpyHtoDAsync_v7000_ptsz, HTOD_PARAMS, COPY_ARGS)
FOREIGN(cuMemcpyPeerAsync, PFN_cuMemcpyPeerAsync_v4000, PEER_PARAMS, PEER_ARGS)
FOREIGN(cuMemcpyPeerAsync_ptsz, PFN_cuMemcpyPeerAsync_v7000_ptsz, PEER_PARAMS, PEER_ARGS)
FOREIGN(cuMemsetD8Async, PFN_cuMemsetD8Async_v3020, SET8_PARAMS, SET_ARGS)
FOREIGN(cuMemsetD8Async_ptsz, PFN_cuMemsetD8Async_v7000_ptsz, SET8_PARAMS, SET_ARGS)
FOREIGN(cuMemsetD32Async, PFN_cuMemsetD32Async_v3020, SET32_PARAMS, SET_ARGS)
FOREIGN(cuMemsetD32Async_ptsz, PFN_cuMemsetD32Async_v7000_ptsz, SET32_PARAMS, SET_ARGS)
FOREIGN(cuStreamWriteValue32, PFN_cuStreamWriteValue32_v8000, WRITE32_PARAMS, WRITE_ARGS)
FOREIGN(cuStreamWriteValue32_v2, PFN_cuStreamWriteValue32_v11070, WRITE32_PARAMS, WRITE_ARGS)
FOREIGN(cuStreamWriteValue64, PFN_cuStreamWriteValue64_v9000, WRITE64_PARAMS, WRITE_ARGS)
FOREIGN(cuStreamWriteValue64_v2, PFN_cuStreamWriteValue64_v11070, WRITE64_PARAMS, WRITE_ARGS)
FOREIGN(cuStreamBatchMemOp, PFN_cuStreamBatchMemOp_v8000, BATCH_PARAMS, BATCH_ARGS)
FOREIGN(cuStreamBatchMemOp_v2, PFN_cuStreamBatchMemOp_v11070, BATCH_PARAMS, BATCH_ARGS)

struct foreign_entry {
    const char *name; /* the hook's exported symbol */
    void *wrapper;
    void **real;
};

#define ENTRY(sym)                                                                                 \
    {                                                                                              \
#sym, (void *)foreign_##sym, (void **)&foreign_real_##sym                                  \
    }

static const struct foreign_entry entries[] = {
    ENTRY(cuLaunchKernel),
    ENTRY(cuLaunchKernel_ptsz),
    ENTRY(cuLaunchKernelEx),
    ENTRY(cuLaunchKernelEx_ptsz),
    ENTRY(cuLaunchCooperativeKernel),
    ENTRY(cuLaunchCooperativeKernel_ptsz),
    ENTRY(cuGraphLaunch),
    ENTRY(cuGraphLaunch_ptsz),
    ENTRY(cuMemcpyAsync),
    ENTRY(cuMemcpyAsync_ptsz),
    ENTRY(cuMemcpyDtoDAsync_v2),
    ENTRY(cuMemcpyDtoDAsync_v2_ptsz),
    ENTRY(cuMemcpyHtoDAsync_v2),
    ENTRY(cuMemcpyHtoDAsync_v2_ptsz),
    ENTRY(cuMemcpyPeerAsync),
    ENTRY(cuMemcpyPeerAsync_ptsz),
    ENTRY(cuMemsetD8Async),
    ENTRY(cuMemsetD8Async_ptsz),
    ENTRY(cuMemsetD32Async),
    ENTRY(cuMemsetD32Async_ptsz),
    ENTRY(cuStreamWriteValue32),
    ENTRY(cuStreamWriteValue32_v2),
    ENTRY(cuStreamWriteValue64),
    ENTRY(cuStreamWriteValue64_v2),
    ENTRY(cuStreamBatchMemOp),
    ENTRY(cuStreamBatchMemOp_v2),
};

void *mgpu_foreign_entry(void *real)
{
    if (!mgpu_replicas_on())
        return real;
    const struct mgpu_hook *h = mgpu_hook_find_by_real(real);
    if (h == NULL)
        return real;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entries[i].name, h->name) == 0) {
            __atomic_store_n(entries[i].real, real, __ATOMIC_RELEASE);
            return entries[i].wrapper;
        }
    return real;
}
