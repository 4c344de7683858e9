/* Owns the cuGetProcAddress hooks (v1, v2, the self-lookup). The driver's
 * answer is swapped for the shim's export of the same function, which jumps
 * to mgpu's hook or to that very driver function: so the program gets what
 * dlsym on libcuda.so.1 gives, as with the real driver, and matching on the
 * returned address covers every version and per-thread-stream variant the
 * driver picks. Lookups made from pass-through libraries (NCCL, mgpu itself,
 * MGPU_PASSTHROUGH) get the driver's answer. So do the device attribute
 * queries of NVIDIA's math libraries (cuBLAS, cuDNN, ...): their kernels
 * are machine code that runs whole on one GPU, sized by that GPU's
 * multiprocessors; told the sum of all GPUs', cuBLAS's BF16 kernels on
 * 4 x H200 left parts of C unwritten. */
#include "src/hooks/procaddress_hooks.h"

#include "src/hooks/export_map.h"
#include "src/hooks/foreign_writes.h"
#include "src/hooks/hook_table.h"
#include "base/log.h"
#include "base/config.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

MGPU_DECLARE_HOOK(cuGetProcAddress, PFN_cuGetProcAddress_v11030);
MGPU_DECLARE_HOOK(cuGetProcAddress_v2, PFN_cuGetProcAddress_v12000);

static atomic_ulong lookups, hooked, passed;

/* Who makes a lookup. */
enum caller_kind {
    CALLER_PROGRAM,        /* the program and its other libraries: mgpu's hooks */
    CALLER_PASSES_THROUGH, /* the driver's own functions, writes still seen */
    CALLER_DEVICE_LIBRARY, /* mgpu's hooks, but one GPU's own attributes */
};

/* Decisions per calling library, by load address: a lookup burst comes from
 * a handful of libraries. */
#define CALLER_CACHE_SIZE 32
static struct {
    const void *base;
    enum caller_kind kind;
} caller_cache[CALLER_CACHE_SIZE];
static int caller_cache_len;
static pthread_mutex_t caller_lock = PTHREAD_MUTEX_INITIALIZER;

static bool name_has_prefix_in_list(const char *base, const char *list)
{
    while (list && *list) {
        size_t n = strcspn(list, ",");
        if (n > 0 && strncmp(base, list, n) == 0)
            return true;
        list += n;
        if (*list)
            list++;
    }
    return false;
}

static enum caller_kind library_kind(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (name_has_prefix_in_list(base, "libnccl,libmgpu") ||
        name_has_prefix_in_list(base, mgpu_cfg.passthrough))
        return CALLER_PASSES_THROUGH;
    if (name_has_prefix_in_list(base, "libcublas,libcudnn,libcufft,libcusparse,libcusolver,"
                                      "libcurand,libcutensor,libnpp,libnvjpeg"))
        return CALLER_DEVICE_LIBRARY;
    return CALLER_PROGRAM;
}

static enum caller_kind caller_kind_of(const void *caller)
{
    Dl_info info;
    if (caller == NULL || dladdr(caller, &info) == 0 || info.dli_fname == NULL)
        return CALLER_PROGRAM;
    enum caller_kind result;
    pthread_mutex_lock(&caller_lock);
    int i;
    for (i = 0; i < caller_cache_len; i++)
        if (caller_cache[i].base == info.dli_fbase)
            break;
    if (i < caller_cache_len) {
        result = caller_cache[i].kind;
    } else {
        result = library_kind(info.dli_fname);
        if (caller_cache_len < CALLER_CACHE_SIZE) {
            caller_cache[caller_cache_len].base = info.dli_fbase;
            caller_cache[caller_cache_len].kind = result;
            caller_cache_len++;
        }
        if (result == CALLER_PASSES_THROUGH)
            mgpu_info("driver lookups from %s pass through", info.dli_fname);
        else if (result == CALLER_DEVICE_LIBRARY)
            mgpu_info("%s sees one GPU's attributes (multiprocessors, memory)", info.dli_fname);
    }
    pthread_mutex_unlock(&caller_lock);
    return result;
}

/* The queries that a device library gets answered by the driver itself. */
static bool is_attribute_query(const char *symbol)
{
    return strcmp(symbol, "cuDeviceGetAttribute") == 0 || strcmp(symbol, "cuDeviceTotalMem") == 0;
}

static void redirect(const char *symbol, void **pfn, const void *caller)
{
    if (pfn == NULL || *pfn == NULL)
        return;
    atomic_fetch_add_explicit(&lookups, 1, memory_order_relaxed);
    enum caller_kind kind = caller_kind_of(caller);
    if (kind == CALLER_PASSES_THROUGH) {
        atomic_fetch_add_explicit(&passed, 1, memory_order_relaxed);
        *pfn = mgpu_foreign_entry(*pfn);
        return;
    }
    if (kind == CALLER_DEVICE_LIBRARY && is_attribute_query(symbol)) {
        atomic_fetch_add_explicit(&passed, 1, memory_order_relaxed);
        return; /* the driver's function, unchanged */
    }
    void *exported = mgpu_export_map_find(*pfn);
    if (exported == NULL)
        return;
    const struct mgpu_hook *h = mgpu_hook_find_by_real(*pfn);
    if (h != NULL) {
        atomic_fetch_add_explicit(&hooked, 1, memory_order_relaxed);
        mgpu_debug("lookup of %s answered with the shim's %s, hooked", symbol, h->name);
    }
    *pfn = exported;
}

static CUresult CUDAAPI hook_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                              cuuint64_t flags)
{
    const void *caller = __builtin_return_address(0);
    MGPU_HOOK_ENTRY(cuGetProcAddress);
    CUresult r = real_cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS)
        redirect(symbol, pfn, caller);
    return r;
}

static CUresult CUDAAPI hook_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                                 cuuint64_t flags,
                                                 CUdriverProcAddressQueryResult *symbolStatus)
{
    const void *caller = __builtin_return_address(0);
    MGPU_HOOK_ENTRY(cuGetProcAddress_v2);
    CUresult r = real_cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS)
        redirect(symbol, pfn, caller);
    return r;
}

const struct mgpu_hook mgpu_procaddress_hooks[] = {
    MGPU_HOOK(cuGetProcAddress),
    MGPU_HOOK(cuGetProcAddress_v2),
    MGPU_HOOK_END,
};

void mgpu_lookup_stats_get(struct mgpu_lookup_stats *out)
{
    out->lookups = atomic_load(&lookups);
    out->hooked = atomic_load(&hooked);
    out->passed = atomic_load(&passed);
}
