/* Owns the hooks of the program's peer-access calls: its view of peer
 * access between contexts is the one it would have without mgpu
 * (partition/gpu_contexts.c keeps both mgpu's pairs and the program's). */
#include "partition/gpu_contexts.h"
#include "src/hooks/hook_table.h"

#include <cuda.h>
#include <cudaTypedefs.h>

MGPU_DECLARE_HOOK(cuCtxEnablePeerAccess, PFN_cuCtxEnablePeerAccess_v4000);
MGPU_DECLARE_HOOK(cuCtxDisablePeerAccess, PFN_cuCtxDisablePeerAccess_v4000);

static CUresult CUDAAPI hook_cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
    MGPU_HOOK_ENTRY(cuCtxEnablePeerAccess);
    return mgpu_program_enable_peer(peer, flags, real_cuCtxEnablePeerAccess);
}

static CUresult CUDAAPI hook_cuCtxDisablePeerAccess(CUcontext peer)
{
    MGPU_HOOK_ENTRY(cuCtxDisablePeerAccess);
    return mgpu_program_disable_peer(peer, real_cuCtxDisablePeerAccess);
}

const struct mgpu_hook mgpu_peer_hooks[] = {
    MGPU_HOOK(cuCtxEnablePeerAccess),
    MGPU_HOOK(cuCtxDisablePeerAccess),
    MGPU_HOOK_END,
};
