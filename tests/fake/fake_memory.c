/* Owns the fake GPU's plain memory: device allocations (cuMemAlloc and its
 * pitched and stream-ordered forms), pinned host memory (cuMemHostAlloc,
 * mapped at the same address for the device), module variables' storage,
 * the copies and sets (memcpy and memset, in stream order), memory info,
 * and the pointer queries, which answer for these regions and for the VMM
 * mappings of fake_vmm.c. Device pointers are host addresses; device
 * memory starts filled with 0xa5 bytes, not zeros, as a GPU's is not
 * cleared either. */
#include "fake_gpu.h"

#include <stdlib.h>
#include <string.h>

extern unsigned long fake_allocs;

enum region_kind { DEVICE_ALLOCATION, HOST_ALLOCATION, MODULE_VARIABLE };

struct region {
    uint64_t base;
    size_t bytes;
    enum region_kind kind;
    struct fake_context *ctx;
    unsigned host_flags;
    bool stream_ordered;
    uint64_t id;
};

static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region *regions;
static size_t nregions, regions_capacity;
static uint64_t next_id = 1;
/* Stands for the device's default memory pool in pointer queries. */
static int default_mempool;

static bool add_region(struct region r)
{
    pthread_mutex_lock(&regions_lock);
    bool ok = true;
    if (nregions == regions_capacity) {
        size_t capacity = regions_capacity ? 2 * regions_capacity : 64;
        struct region *grown = realloc(regions, capacity * sizeof *grown);
        if (grown == NULL)
            ok = false;
        else
            regions = grown, regions_capacity = capacity;
    }
    if (ok) {
        r.id = next_id++;
        regions[nregions++] = r;
    }
    pthread_mutex_unlock(&regions_lock);
    return ok;
}

/* Removes the region of `kind` that starts at `base`; false if none. */
static bool remove_region(uint64_t base, enum region_kind kind, struct region *out)
{
    pthread_mutex_lock(&regions_lock);
    bool found = false;
    for (size_t i = 0; i < nregions && !found; i++)
        if (regions[i].base == base && regions[i].kind == kind) {
            *out = regions[i];
            regions[i] = regions[--nregions];
            found = true;
        }
    pthread_mutex_unlock(&regions_lock);
    return found;
}

static bool find_region(uint64_t address, struct region *out)
{
    pthread_mutex_lock(&regions_lock);
    bool found = false;
    for (size_t i = 0; i < nregions && !found; i++)
        if (address >= regions[i].base && address - regions[i].base < regions[i].bytes) {
            *out = regions[i];
            found = true;
        }
    pthread_mutex_unlock(&regions_lock);
    return found;
}

bool fake_memory_valid(uint64_t address, size_t bytes)
{
    uint64_t end = address + bytes;
    if (end < address)
        return false;
    do {
        struct region r;
        uint64_t covered_to;
        if (find_region(address, &r))
            address = r.base + r.bytes;
        else if (fake_vmm_valid(address, end - address, &covered_to))
            address = covered_to;
        else
            return false;
    } while (address < end);
    return true;
}

/* --- device allocations ---------------------------------------------------------- */

static CUresult device_alloc(CUdeviceptr *out, size_t bytes, struct fake_context *ctx,
                             bool stream_ordered)
{
    if (out == NULL || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_device_take(ctx->device, bytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = NULL;
    if (posix_memalign(&p, 512, bytes) != 0) {
        fake_device_give(ctx->device, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(p, 0xa5, bytes);
    struct region r = {(uint64_t)(uintptr_t)p, bytes, DEVICE_ALLOCATION, ctx, 0, stream_ordered, 0};
    if (!add_region(r)) {
        free(p);
        fake_device_give(ctx->device, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_live(FAKE_DEVICE_ALLOCATION, 1);
    fake_allocs++;
    *out = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult device_free(CUdeviceptr p)
{
    struct region r;
    if (p == 0 || !remove_region(p, DEVICE_ALLOCATION, &r))
        return CUDA_ERROR_INVALID_VALUE;
    free((void *)(uintptr_t)r.base);
    fake_device_give(r.ctx->device, r.bytes);
    fake_live(FAKE_DEVICE_ALLOCATION, -1);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    FAKE_ENTER_INIT("cuMemAlloc_v2", CUDA_ERROR_OUT_OF_MEMORY);
    return device_alloc(p, bytes, fake_context_current(), false);
}

FAKE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height,
                                        unsigned element_size)
{
    FAKE_ENTER_INIT("cuMemAllocPitch_v2", CUDA_ERROR_OUT_OF_MEMORY);
    if (pitch == NULL || width == 0 || height == 0 ||
        (element_size != 4 && element_size != 8 && element_size != 16))
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (width + 511) / 512 * 512;
    return device_alloc(p, *pitch * height, fake_context_current(), false);
}

/* Frees take effect even when the call is the one made to fail (see
 * fake_contexts.c). */
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuMemFree_v2");
    fake_wait_for_held_streams("cuMemFree_v2"); /* waits for the device, as the driver's */
    CUresult r = device_free(p);
    return r == CUDA_SUCCESS && fail ? CUDA_ERROR_UNKNOWN : r;
}

FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream stream)
{
    FAKE_ENTER_INIT("cuMemAllocAsync", CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = CUDA_SUCCESS;
    struct fake_stream *s = fake_stream_of(stream, &r);
    if (s == NULL)
        return r;
    return device_alloc(p, bytes, fake_stream_context(s), true);
}

FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream stream)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuMemFreeAsync");
    CUresult r = CUDA_SUCCESS;
    if (fake_stream_of(stream, &r) == NULL)
        return r;
    r = device_free(p);
    return r == CUDA_SUCCESS && fail ? CUDA_ERROR_UNKNOWN : r;
}

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    FAKE_ENTER_INIT("cuMemGetInfo_v2", CUDA_ERROR_UNKNOWN);
    CUdevice dev = fake_context_current()->device;
    *total_bytes = FAKE_DEVICE_MEMORY;
    *free_bytes = FAKE_DEVICE_MEMORY - fake_device_used(dev);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *bytes, CUdeviceptr p)
{
    FAKE_ENTER_INIT("cuMemGetAddressRange_v2", CUDA_ERROR_INVALID_VALUE);
    struct region r;
    uint64_t mapping_base, block;
    size_t mapping_bytes;
    CUdevice dev;
    if (find_region(p, &r)) {
        mapping_base = r.base;
        mapping_bytes = r.bytes;
    } else if (!fake_vmm_find(p, &mapping_base, &mapping_bytes, &dev, &block)) {
        return CUDA_ERROR_NOT_FOUND;
    }
    if (base)
        *base = mapping_base;
    if (bytes)
        *bytes = mapping_bytes;
    return CUDA_SUCCESS;
}

/* --- module variables ----------------------------------------------------------- */

void *fake_memory_module_variable(size_t bytes, struct fake_context *ctx)
{
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0)
        return NULL;
    memset(p, 0, bytes ? bytes : 1);
    struct region r = {
        (uint64_t)(uintptr_t)p, bytes ? bytes : 1, MODULE_VARIABLE, ctx, 0, false, 0};
    if (!add_region(r)) {
        free(p);
        return NULL;
    }
    return p;
}

void fake_memory_module_variable_free(void *p)
{
    struct region r;
    if (remove_region((uint64_t)(uintptr_t)p, MODULE_VARIABLE, &r))
        free(p);
}

/* --- pinned host memory ----------------------------------------------------------- */

FAKE_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned flags)
{
    FAKE_ENTER_INIT("cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY);
    if (pp == NULL || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct region r = {
        (uint64_t)(uintptr_t)p, bytes, HOST_ALLOCATION, fake_context_current(), flags, false, 0};
    if (!add_region(r)) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_live(FAKE_HOST_ALLOCATION, 1);
    *pp = p;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytes)
{
    return cuMemHostAlloc(pp, bytes, 0);
}

FAKE_EXPORT CUresult cuMemFreeHost(void *p)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuMemFreeHost");
    struct region r;
    if (!remove_region((uint64_t)(uintptr_t)p, HOST_ALLOCATION, &r))
        return CUDA_ERROR_INVALID_VALUE;
    free(p);
    fake_live(FAKE_HOST_ALLOCATION, -1);
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

/* Unified addressing: the device sees pinned memory at its host address. */
FAKE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned flags)
{
    FAKE_ENTER_INIT("cuMemHostGetDevicePointer_v2", CUDA_ERROR_INVALID_VALUE);
    struct region r;
    if (dptr == NULL || flags != 0 || !find_region((uint64_t)(uintptr_t)p, &r) ||
        r.kind != HOST_ALLOCATION)
        return CUDA_ERROR_INVALID_VALUE;
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemHostGetFlags(unsigned *flags, void *p)
{
    FAKE_ENTER_INIT("cuMemHostGetFlags", CUDA_ERROR_INVALID_VALUE);
    struct region r;
    if (!find_region((uint64_t)(uintptr_t)p, &r) || r.kind != HOST_ALLOCATION)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = r.host_flags;
    return CUDA_SUCCESS;
}

/* --- copies and sets, in stream order -------------------------------------------- */

/* Runs a copy of `bytes` from `src` to `dst` in `stream`; `check_dst` and
 * `check_src` say which sides must be device memory. */
static CUresult copy(uint64_t dst, uint64_t src, size_t bytes, CUstream stream, bool check_dst,
                     bool check_src, bool blocking)
{
    CUresult r = CUDA_SUCCESS;
    struct fake_stream *s = fake_stream_of(stream, &r);
    if (s == NULL)
        return r;
    if (bytes == 0)
        return CUDA_SUCCESS;
    if ((check_dst && !fake_memory_valid(dst, bytes)) ||
        (check_src && !fake_memory_valid(src, bytes)) || dst == 0 || src == 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_stream_begin(s);
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    fake_stream_end(s);
    return blocking ? atomic_load(&fake_stream_context(s)->sticky) : CUDA_SUCCESS;
}

#define U(p) ((uint64_t)(uintptr_t)(p))

FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    FAKE_ENTER_INIT("cuMemcpyHtoD_v2", CUDA_ERROR_INVALID_VALUE);
    return copy(dst, U(src), n, NULL, true, false, true);
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    FAKE_ENTER_INIT("cuMemcpyDtoH_v2", CUDA_ERROR_INVALID_VALUE);
    return copy(U(dst), src, n, NULL, false, true, true);
}

FAKE_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    FAKE_ENTER_INIT("cuMemcpyDtoD_v2", CUDA_ERROR_INVALID_VALUE);
    return copy(dst, src, n, NULL, true, true, false);
}

/* cuMemcpy's sides may be host or device memory: a side that starts in
 * the fake's memory must lie in it, as the driver checks its allocations. */
#define STARTS_IN_FAKE(p) fake_memory_valid((p), 1)

FAKE_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    FAKE_ENTER_INIT("cuMemcpy", CUDA_ERROR_INVALID_VALUE);
    return copy(dst, src, n, NULL, STARTS_IN_FAKE(dst), STARTS_IN_FAKE(src), true);
}

FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    FAKE_ENTER_INIT("cuMemcpyHtoDAsync_v2", CUDA_ERROR_INVALID_VALUE);
    return copy(dst, U(src), n, s, true, false, false);
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    FAKE_ENTER_INIT("cuMemcpyDtoHAsync_v2", CUDA_ERROR_INVALID_VALUE);
    return copy(U(dst), src, n, s, false, true, false);
}

FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    FAKE_ENTER_INIT("cuMemcpyDtoDAsync_v2", CUDA_ERROR_INVALID_VALUE);
    return copy(dst, src, n, s, true, true, false);
}

/* A 2D copy between host and device memory (arrays are not faked): row
 * by row, each row checked as one copy would be, the whole in stream
 * order. */
static CUresult copy_2d(const CUDA_MEMCPY2D *p, CUstream stream, bool blocking)
{
    if (p == NULL || p->srcXInBytes != 0 || p->srcY != 0 || p->dstXInBytes != 0 || p->dstY != 0 ||
        p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY ||
        p->srcMemoryType == CU_MEMORYTYPE_UNIFIED || p->dstMemoryType == CU_MEMORYTYPE_UNIFIED)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (p->srcPitch < p->WidthInBytes || p->dstPitch < p->WidthInBytes)
        return CUDA_ERROR_INVALID_VALUE;
    bool src_device = p->srcMemoryType == CU_MEMORYTYPE_DEVICE;
    bool dst_device = p->dstMemoryType == CU_MEMORYTYPE_DEVICE;
    uint64_t src = src_device ? p->srcDevice : U(p->srcHost);
    uint64_t dst = dst_device ? p->dstDevice : U(p->dstHost);
    CUresult r = CUDA_SUCCESS;
    struct fake_stream *s = fake_stream_of(stream, &r);
    if (s == NULL)
        return r;
    for (size_t row = 0; row < p->Height; row++)
        if ((src_device && !fake_memory_valid(src + row * p->srcPitch, p->WidthInBytes)) ||
            (dst_device && !fake_memory_valid(dst + row * p->dstPitch, p->WidthInBytes)) ||
            src == 0 || dst == 0)
            return CUDA_ERROR_INVALID_VALUE;
    fake_stream_begin(s);
    for (size_t row = 0; row < p->Height; row++)
        memmove((void *)(uintptr_t)(dst + row * p->dstPitch),
                (const void *)(uintptr_t)(src + row * p->srcPitch), p->WidthInBytes);
    fake_stream_end(s);
    return blocking ? atomic_load(&fake_stream_context(s)->sticky) : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p)
{
    FAKE_ENTER_INIT("cuMemcpy2D_v2", CUDA_ERROR_INVALID_VALUE);
    return copy_2d(p, NULL, true);
}

FAKE_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream s)
{
    FAKE_ENTER_INIT("cuMemcpy2DAsync_v2", CUDA_ERROR_INVALID_VALUE);
    return copy_2d(p, s, false);
}

FAKE_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    FAKE_ENTER_INIT("cuMemcpyAsync", CUDA_ERROR_INVALID_VALUE);
    return copy(dst, src, n, s, STARTS_IN_FAKE(dst), STARTS_IN_FAKE(src), false);
}

static CUresult set(CUdeviceptr dst, unsigned value, unsigned element, size_t count,
                    CUstream stream)
{
    CUresult r = CUDA_SUCCESS;
    struct fake_stream *s = fake_stream_of(stream, &r);
    if (s == NULL)
        return r;
    if (count == 0)
        return CUDA_SUCCESS;
    if (dst % element != 0 || !fake_memory_valid(dst, count * element))
        return CUDA_ERROR_INVALID_VALUE;
    fake_stream_begin(s);
    for (size_t i = 0; i < count; i++) {
        if (element == 1)
            ((unsigned char *)(uintptr_t)dst)[i] = (unsigned char)value;
        else if (element == 2)
            ((unsigned short *)(uintptr_t)dst)[i] = (unsigned short)value;
        else
            ((unsigned *)(uintptr_t)dst)[i] = value;
    }
    fake_stream_end(s);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
    FAKE_ENTER_INIT("cuMemsetD8_v2", CUDA_ERROR_INVALID_VALUE);
    return set(dst, v, 1, n, NULL);
}

FAKE_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short v, size_t n)
{
    FAKE_ENTER_INIT("cuMemsetD16_v2", CUDA_ERROR_INVALID_VALUE);
    return set(dst, v, 2, n, NULL);
}

FAKE_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned v, size_t n)
{
    FAKE_ENTER_INIT("cuMemsetD32_v2", CUDA_ERROR_INVALID_VALUE);
    return set(dst, v, 4, n, NULL);
}

FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    FAKE_ENTER_INIT("cuMemsetD8Async", CUDA_ERROR_INVALID_VALUE);
    return set(dst, v, 1, n, s);
}

FAKE_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s)
{
    FAKE_ENTER_INIT("cuMemsetD16Async", CUDA_ERROR_INVALID_VALUE);
    return set(dst, v, 2, n, s);
}

FAKE_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned v, size_t n, CUstream s)
{
    FAKE_ENTER_INIT("cuMemsetD32Async", CUDA_ERROR_INVALID_VALUE);
    return set(dst, v, 4, n, s);
}

/* A 2D set: `height` rows of `width` elements, `pitch` bytes apart, each
 * row checked as one set would be. */
static CUresult set_2d(CUdeviceptr dst, size_t pitch, unsigned value, unsigned element,
                       size_t width, size_t height, CUstream stream)
{
    CUresult r = CUDA_SUCCESS;
    struct fake_stream *s = fake_stream_of(stream, &r);
    if (s == NULL)
        return r;
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    if (dst % element != 0 || (height > 1 && pitch < width * element))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t row = 0; row < height; row++)
        if (!fake_memory_valid(dst + row * pitch, width * element))
            return CUDA_ERROR_INVALID_VALUE;
    for (size_t row = 0; row < height; row++)
        if ((r = set(dst + row * pitch, value, element, width, stream)) != CUDA_SUCCESS)
            return r;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w,
                                     size_t h)
{
    FAKE_ENTER_INIT("cuMemsetD2D8_v2", CUDA_ERROR_INVALID_VALUE);
    return set_2d(dst, pitch, v, 1, w, h, NULL);
}

FAKE_EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w,
                                      size_t h)
{
    FAKE_ENTER_INIT("cuMemsetD2D16_v2", CUDA_ERROR_INVALID_VALUE);
    return set_2d(dst, pitch, v, 2, w, h, NULL);
}

FAKE_EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr dst, size_t pitch, unsigned v, size_t w, size_t h)
{
    FAKE_ENTER_INIT("cuMemsetD2D32_v2", CUDA_ERROR_INVALID_VALUE);
    return set_2d(dst, pitch, v, 4, w, h, NULL);
}

FAKE_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char v, size_t w,
                                       size_t h, CUstream s)
{
    FAKE_ENTER_INIT("cuMemsetD2D8Async", CUDA_ERROR_INVALID_VALUE);
    return set_2d(dst, pitch, v, 1, w, h, s);
}

FAKE_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short v, size_t w,
                                        size_t h, CUstream s)
{
    FAKE_ENTER_INIT("cuMemsetD2D16Async", CUDA_ERROR_INVALID_VALUE);
    return set_2d(dst, pitch, v, 2, w, h, s);
}

FAKE_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned v, size_t w,
                                        size_t h, CUstream s)
{
    FAKE_ENTER_INIT("cuMemsetD2D32Async", CUDA_ERROR_INVALID_VALUE);
    return set_2d(dst, pitch, v, 4, w, h, s);
}

/* --- pointer queries ---------------------------------------------------------------- */

/* The value of `attribute` for `address`, written to `out` (at most 16
 * bytes); *size says how many bytes the driver writes for it. */
static CUresult attribute_value(CUpointer_attribute attribute, uint64_t address, void *out,
                                size_t *size)
{
    struct region r;
    uint64_t base, block = 0;
    size_t bytes;
    CUdevice device;
    void *context = NULL, *mempool = NULL;
    unsigned type;
    bool vmm = false;
    if (find_region(address, &r)) {
        base = r.base;
        bytes = r.bytes;
        device = r.ctx->device;
        context = r.stream_ordered ? NULL : (void *)r.ctx;
        mempool = r.stream_ordered ? (void *)&default_mempool : NULL;
        type = r.kind == HOST_ALLOCATION ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        block = r.id;
    } else if (fake_vmm_find(address, &base, &bytes, &device, &block)) {
        vmm = true;
        type = CU_MEMORYTYPE_DEVICE;
    } else {
        return CUDA_ERROR_INVALID_VALUE;
    }
#define ANSWER(T, v)                                                                               \
    do {                                                                                           \
        T value_ = (T)(v);                                                                         \
        memcpy(out, &value_, sizeof value_);                                                       \
        *size = sizeof value_;                                                                     \
        return CUDA_SUCCESS;                                                                       \
    } while (0)
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        ANSWER(void *, context);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        ANSWER(unsigned, type);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        ANSWER(CUdeviceptr, address);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (type != CU_MEMORYTYPE_HOST)
            return CUDA_ERROR_INVALID_VALUE;
        ANSWER(void *, (void *)(uintptr_t)address);
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        ANSWER(int, 1);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        ANSWER(unsigned long long, block);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        ANSWER(int, 0);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        ANSWER(int, device);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        ANSWER(int, !vmm && mempool == NULL && type == CU_MEMORYTYPE_DEVICE);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        ANSWER(CUdeviceptr, base);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        ANSWER(size_t, bytes);
    case CU_POINTER_ATTRIBUTE_MAPPED:
        ANSWER(int, 1);
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        ANSWER(unsigned long long, 0);
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        ANSWER(int, 0);
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        ANSWER(unsigned, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        ANSWER(void *, mempool);
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        ANSWER(size_t, bytes);
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        ANSWER(CUdeviceptr, base);
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        ANSWER(unsigned long long, block);
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        ANSWER(int, 0);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
#undef ANSWER
}

FAKE_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr p)
{
    FAKE_ENTER_INIT("cuPointerGetAttribute", CUDA_ERROR_INVALID_VALUE);
    unsigned char value[16];
    size_t size = 0;
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = attribute_value(attribute, p, value, &size);
    if (r == CUDA_SUCCESS)
        memcpy(data, value, size);
    return r;
}

/* How many bytes an attribute's value takes. */
static size_t attribute_size(CUpointer_attribute attribute)
{
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return 8;
    default:
        return 4;
    }
}

/* A batch answers zeros for what it cannot answer, as the driver does for
 * memory it does not know. */
FAKE_EXPORT CUresult cuPointerGetAttributes(unsigned count, CUpointer_attribute *attributes,
                                            void **data, CUdeviceptr p)
{
    FAKE_ENTER_INIT("cuPointerGetAttributes", CUDA_ERROR_INVALID_VALUE);
    if (count > 0 && (attributes == NULL || data == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++) {
        unsigned char value[16];
        size_t size = 0;
        if (attribute_value(attributes[i], p, value, &size) != CUDA_SUCCESS) {
            size = attribute_size(attributes[i]);
            memset(value, 0, sizeof value);
        }
        if (data[i] != NULL)
            memcpy(data[i], value, size);
    }
    return CUDA_SUCCESS;
}

/* --- the driver's own IPC of plain allocations: not faked ------------------------ */

/* Present, so that mgpu's hooks of these calls bind as with a real driver;
 * the fake shares only VMM memory (fake_vmm.c's export and import). */
FAKE_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr p)
{
    FAKE_ENTER_INIT("cuIpcGetMemHandle", CUDA_ERROR_INVALID_VALUE);
    (void)handle;
    (void)p;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle handle, unsigned flags)
{
    FAKE_ENTER_INIT("cuIpcOpenMemHandle_v2", CUDA_ERROR_INVALID_VALUE);
    (void)p;
    (void)handle;
    (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *p, CUipcMemHandle handle, unsigned flags)
{
    return cuIpcOpenMemHandle_v2(p, handle, flags);
}

FAKE_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
    FAKE_ENTER_INIT("cuIpcCloseMemHandle", CUDA_ERROR_INVALID_VALUE);
    (void)p;
    return CUDA_ERROR_NOT_SUPPORTED;
}
