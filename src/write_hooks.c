/* Owns the hooks of the copies and sets that write device memory
 * (cuMemcpy*, cuMemset*, plain and stream-ordered, each with its
 * per-thread-stream variant). For now they only watch for writes into a
 * __constant__ variable of a module with per-GPU copies, which makes the
 * copies refresh it before that module's next launch; every call goes to
 * the driver unchanged. Forms not hooked here (2D/3D copies, peer copies)
 * write constants only in programs that look the address up again first,
 * which the symbol lookup hooks see. */
#include "hook_table.h"
#include "program_modules.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#define WRITE_HOOK(sym, pfn, params, args, dst, bytes)                                             \
    MGPU_DECLARE_HOOK(sym, pfn);                                                                   \
    static CUresult CUDAAPI hook_##sym params                                                      \
    {                                                                                              \
        MGPU_COUNT_CALL(sym);                                                                      \
        mgpu_program_memory_written((dst), (bytes));                                               \
        return real_##sym args;                                                                    \
    }

#define HTOD_PARAMS (CUdeviceptr dst, const void *src, size_t n)
#define HTOD_ASYNC_PARAMS (CUdeviceptr dst, const void *src, size_t n, CUstream s)
#define DTOD_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t n)
#define DTOD_ASYNC_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
#define SET_PARAMS(T) (CUdeviceptr dst, T value, size_t n)
#define SET_ASYNC_PARAMS(T) (CUdeviceptr dst, T value, size_t n, CUstream s)

WRITE_HOOK(cuMemcpyHtoD_v2, PFN_cuMemcpyHtoD_v3020, HTOD_PARAMS, (dst, src, n), dst, n)
WRITE_HOOK(cuMemcpyHtoD_v2_ptds, PFN_cuMemcpyHtoD_v7000_ptds, HTOD_PARAMS, (dst, src, n), dst, n)
WRITE_HOOK(cuMemcpyHtoDAsync_v2, PFN_cuMemcpyHtoDAsync_v3020, HTOD_ASYNC_PARAMS, (dst, src, n, s),
           dst, n)
WRITE_HOOK(cuMemcpyHtoDAsync_v2_ptsz, PFN_cuMemcpyHtoDAsync_v7000_ptsz, HTOD_ASYNC_PARAMS,
           (dst, src, n, s), dst, n)
WRITE_HOOK(cuMemcpyDtoD_v2, PFN_cuMemcpyDtoD_v3020, DTOD_PARAMS, (dst, src, n), dst, n)
WRITE_HOOK(cuMemcpyDtoD_v2_ptds, PFN_cuMemcpyDtoD_v7000_ptds, DTOD_PARAMS, (dst, src, n), dst, n)
WRITE_HOOK(cuMemcpyDtoDAsync_v2, PFN_cuMemcpyDtoDAsync_v3020, DTOD_ASYNC_PARAMS, (dst, src, n, s),
           dst, n)
WRITE_HOOK(cuMemcpyDtoDAsync_v2_ptsz, PFN_cuMemcpyDtoDAsync_v7000_ptsz, DTOD_ASYNC_PARAMS,
           (dst, src, n, s), dst, n)
WRITE_HOOK(cuMemcpy, PFN_cuMemcpy_v4000, DTOD_PARAMS, (dst, src, n), dst, n)
WRITE_HOOK(cuMemcpy_ptds, PFN_cuMemcpy_v7000_ptds, DTOD_PARAMS, (dst, src, n), dst, n)
WRITE_HOOK(cuMemcpyAsync, PFN_cuMemcpyAsync_v4000, DTOD_ASYNC_PARAMS, (dst, src, n, s), dst, n)
WRITE_HOOK(cuMemcpyAsync_ptsz, PFN_cuMemcpyAsync_v7000_ptsz, DTOD_ASYNC_PARAMS, (dst, src, n, s),
           dst, n)
WRITE_HOOK(cuMemsetD8_v2, PFN_cuMemsetD8_v3020, SET_PARAMS(unsigned char), (dst, value, n), dst, n)
WRITE_HOOK(cuMemsetD8_v2_ptds, PFN_cuMemsetD8_v7000_ptds, SET_PARAMS(unsigned char),
           (dst, value, n), dst, n)
WRITE_HOOK(cuMemsetD16_v2, PFN_cuMemsetD16_v3020, SET_PARAMS(unsigned short), (dst, value, n), dst,
           2 * n)
WRITE_HOOK(cuMemsetD16_v2_ptds, PFN_cuMemsetD16_v7000_ptds, SET_PARAMS(unsigned short),
           (dst, value, n), dst, 2 * n)
WRITE_HOOK(cuMemsetD32_v2, PFN_cuMemsetD32_v3020, SET_PARAMS(unsigned), (dst, value, n), dst, 4 * n)
WRITE_HOOK(cuMemsetD32_v2_ptds, PFN_cuMemsetD32_v7000_ptds, SET_PARAMS(unsigned), (dst, value, n),
           dst, 4 * n)
WRITE_HOOK(cuMemsetD8Async, PFN_cuMemsetD8Async_v3020, SET_ASYNC_PARAMS(unsigned char),
           (dst, value, n, s), dst, n)
WRITE_HOOK(cuMemsetD8Async_ptsz, PFN_cuMemsetD8Async_v7000_ptsz, SET_ASYNC_PARAMS(unsigned char),
           (dst, value, n, s), dst, n)
WRITE_HOOK(cuMemsetD16Async, PFN_cuMemsetD16Async_v3020, SET_ASYNC_PARAMS(unsigned short),
           (dst, value, n, s), dst, 2 * n)
WRITE_HOOK(cuMemsetD16Async_ptsz, PFN_cuMemsetD16Async_v7000_ptsz, SET_ASYNC_PARAMS(unsigned short),
           (dst, value, n, s), dst, 2 * n)
WRITE_HOOK(cuMemsetD32Async, PFN_cuMemsetD32Async_v3020, SET_ASYNC_PARAMS(unsigned),
           (dst, value, n, s), dst, 4 * n)
WRITE_HOOK(cuMemsetD32Async_ptsz, PFN_cuMemsetD32Async_v7000_ptsz, SET_ASYNC_PARAMS(unsigned),
           (dst, value, n, s), dst, 4 * n)

const struct mgpu_hook mgpu_write_hooks[] = {
    MGPU_HOOK(cuMemcpyHtoD_v2),
    MGPU_HOOK(cuMemcpyHtoD_v2_ptds),
    MGPU_HOOK(cuMemcpyHtoDAsync_v2),
    MGPU_HOOK(cuMemcpyHtoDAsync_v2_ptsz),
    MGPU_HOOK(cuMemcpyDtoD_v2),
    MGPU_HOOK(cuMemcpyDtoD_v2_ptds),
    MGPU_HOOK(cuMemcpyDtoDAsync_v2),
    MGPU_HOOK(cuMemcpyDtoDAsync_v2_ptsz),
    MGPU_HOOK(cuMemcpy),
    MGPU_HOOK(cuMemcpy_ptds),
    MGPU_HOOK(cuMemcpyAsync),
    MGPU_HOOK(cuMemcpyAsync_ptsz),
    MGPU_HOOK(cuMemsetD8_v2),
    MGPU_HOOK(cuMemsetD8_v2_ptds),
    MGPU_HOOK(cuMemsetD16_v2),
    MGPU_HOOK(cuMemsetD16_v2_ptds),
    MGPU_HOOK(cuMemsetD32_v2),
    MGPU_HOOK(cuMemsetD32_v2_ptds),
    MGPU_HOOK(cuMemsetD8Async),
    MGPU_HOOK(cuMemsetD8Async_ptsz),
    MGPU_HOOK(cuMemsetD16Async),
    MGPU_HOOK(cuMemsetD16Async_ptsz),
    MGPU_HOOK(cuMemsetD32Async),
    MGPU_HOOK(cuMemsetD32Async_ptsz),
    MGPU_HOOK_END,
};
