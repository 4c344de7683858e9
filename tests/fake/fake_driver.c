/* A fake CUDA driver for the tests that run without a GPU: a host-memory
 * emulation of a GPU (see README.md here for its files and variables). This
 * file owns the driver-wide entry points: cuInit, the version, error names,
 * cuGetProcAddress (which picks the newest version of a name, and the _ptsz
 * variant for per-thread default streams, as the real one does) and
 * cuGetExportTable; and the counters the tests read through dlsym.
 * FAKE_CUDA_INIT_LOG names a file that gets a line per cuInit. */
#include "fake_gpu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Counters the tests read directly (dlopen of this library). */
FAKE_EXPORT unsigned long fake_launches, fake_launches_ptsz, fake_allocs;

FAKE_EXPORT CUresult cuInit(unsigned flags)
{
    (void)flags;
    if (atomic_load(&fake_initialised))
        FAKE_ENTER("cuInit", CUDA_ERROR_UNKNOWN);
    const char *log = getenv("FAKE_CUDA_INIT_LOG");
    FILE *f = log != NULL ? fopen(log, "a") : NULL;
    if (f != NULL) {
        fprintf(f, "cuInit in %d\n", (int)getpid());
        fclose(f);
    }
    fake_find_visible();
    if (fake_visible_count == 0)
        return CUDA_ERROR_NO_DEVICE;
    atomic_store(&fake_initialised, true);
    fake_calls_start();
    return CUDA_SUCCESS;
}

/* Lookups that cannot fail on a working driver are not counted: an
 * injected failure of one would say nothing about mgpu. */
FAKE_EXPORT CUresult cuDriverGetVersion(int *v)
{
    if (v == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

#define ERROR_NAMES(X)                                                                             \
    X(CUDA_SUCCESS)                                                                                \
    X(CUDA_ERROR_INVALID_VALUE) X(CUDA_ERROR_OUT_OF_MEMORY) X(CUDA_ERROR_NOT_INITIALIZED) X(       \
        CUDA_ERROR_DEINITIALIZED) X(CUDA_ERROR_NO_DEVICE) X(CUDA_ERROR_INVALID_DEVICE)             \
        X(CUDA_ERROR_INVALID_IMAGE) X(CUDA_ERROR_INVALID_CONTEXT) X(                               \
            CUDA_ERROR_CONTEXT_ALREADY_CURRENT) X(CUDA_ERROR_MAP_FAILED)                           \
            X(CUDA_ERROR_UNMAP_FAILED) X(CUDA_ERROR_ALREADY_MAPPED) X(                             \
                CUDA_ERROR_NO_BINARY_FOR_GPU) X(CUDA_ERROR_NOT_MAPPED)                             \
                X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) X(CUDA_ERROR_INVALID_PTX) X(                 \
                    CUDA_ERROR_INVALID_SOURCE) X(CUDA_ERROR_FILE_NOT_FOUND)                        \
                    X(CUDA_ERROR_OPERATING_SYSTEM) X(CUDA_ERROR_INVALID_HANDLE) X(                 \
                        CUDA_ERROR_ILLEGAL_STATE) X(CUDA_ERROR_NOT_FOUND) X(CUDA_ERROR_NOT_READY)  \
                        X(CUDA_ERROR_ILLEGAL_ADDRESS) X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)        \
                            X(CUDA_ERROR_LAUNCH_TIMEOUT) X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) \
                                X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) X(                           \
                                    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)                             \
                                    X(CUDA_ERROR_CONTEXT_IS_DESTROYED) X(CUDA_ERROR_LAUNCH_FAILED) \
                                        X(CUDA_ERROR_NOT_PERMITTED) X(CUDA_ERROR_NOT_SUPPORTED)    \
                                            X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)               \
                                                X(CUDA_ERROR_TIMEOUT) X(CUDA_ERROR_UNKNOWN)

FAKE_EXPORT CUresult cuGetErrorName(CUresult e, const char **s)
{
    if (s == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
#define NAME_CASE(code)                                                                            \
    case code:                                                                                     \
        *s = #code;                                                                                \
        return CUDA_SUCCESS;
        ERROR_NAMES(NAME_CASE)
#undef NAME_CASE
    default:
        *s = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult e, const char **s)
{
    return cuGetErrorName(e, s);
}

/* Untouched by mgpu; the tests check they get this very table back. */
FAKE_EXPORT const CUuuid fake_export_table_id = {{0x42}};
FAKE_EXPORT const void *fake_export_table[2] = {(const void *)&fake_export_table_id, NULL};

FAKE_EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    (void)id;
    *table = fake_export_table;
    return CUDA_SUCCESS;
}

static void *self_symbol(const char *name)
{
    Dl_info info;
    if (!dladdr((void *)self_symbol, &info))
        return NULL;
    void *self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    void *p = self ? dlsym(self, name) : NULL;
    if (self)
        dlclose(self);
    return p;
}

static CUresult lookup(const char *symbol, void **pfn, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    char name[256];
    void *p = NULL;
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        snprintf(name, sizeof name, "%s_ptsz", symbol);
        p = self_symbol(name);
    }
    for (int v = 4; p == NULL && v >= 2; v--) {
        snprintf(name, sizeof name, "%s_v%d", symbol, v);
        p = self_symbol(name);
    }
    if (p == NULL)
        p = self_symbol(symbol);
    if (status)
        *status = p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (p == NULL) {
        *pfn = NULL;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = p;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    (void)version;
    return lookup(symbol, pfn, flags, NULL);
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    (void)version;
    return lookup(symbol, pfn, flags, status);
}
