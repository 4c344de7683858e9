/* A stand-in CUDA driver for the tests that run without a GPU. It exports a
 * small part of the driver API with the driver's names and signatures, counts
 * what reaches it, and honours CUDA_VISIBLE_DEVICES (as a list of its own
 * UUIDs) the way the real driver does, so that mgpu-run and the shim can be
 * tested end to end. FAKE_CUDA_GPUS sets how many GPUs it has (default 4);
 * FAKE_CUDA_NVLINK lists the pairs of GPUs with native peer atomics (as over
 * NVLink) and FAKE_CUDA_NO_PEER those without peer access, as "0-1,2-3";
 * FAKE_CUDA_INIT_LOG names a file that gets a line per cuInit. */
/* The driver's own names, without cuda.h's version macros. */
#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_SMS 100
#define FAKE_MEM (1ULL << 30)

/* Counters the tests read directly (dlopen of this file). */
FAKE_EXPORT unsigned long fake_launches, fake_launches_ptsz, fake_allocs;
static int initialised;

static int machine_gpus(void)
{
    const char *n = getenv("FAKE_CUDA_GPUS");
    return n ? atoi(n) : 4;
}

static void fake_uuid(CUuuid *u, int physical)
{
    memset(u->bytes, 0, sizeof u->bytes);
    u->bytes[0] = (char)0xfa;
    u->bytes[15] = (char)physical;
}

/* Visible devices: physical indices in CUDA_VISIBLE_DEVICES order. */
static int visible[64], visible_count = -1;

static void find_visible(void)
{
    if (visible_count >= 0)
        return;
    const char *list = getenv("CUDA_VISIBLE_DEVICES");
    int total = machine_gpus();
    visible_count = 0;
    if (list == NULL) {
        for (int i = 0; i < total && i < 64; i++)
            visible[visible_count++] = i;
        return;
    }
    while (*list && visible_count < 64) {
        unsigned b[16];
        if (sscanf(list, "GPU-%2x%2x%2x%2x-%2x%2x-%2x%2x-%2x%2x-%2x%2x%2x%2x%2x%2x", &b[0], &b[1],
                   &b[2], &b[3], &b[4], &b[5], &b[6], &b[7], &b[8], &b[9], &b[10], &b[11], &b[12],
                   &b[13], &b[14], &b[15]) == 16 &&
            b[0] == 0xfa && (int)b[15] < total)
            visible[visible_count++] = (int)b[15];
        else if (list[0] >= '0' && list[0] <= '9' && atoi(list) < total)
            visible[visible_count++] = atoi(list);
        else
            break; /* like the driver: the list ends at the first bad entry */
        list += strcspn(list, ",");
        if (*list)
            list++;
    }
}

FAKE_EXPORT CUresult cuInit(unsigned flags)
{
    (void)flags;
    /* FAKE_CUDA_INIT_LOG: a line per initialisation, to count them. */
    const char *log = getenv("FAKE_CUDA_INIT_LOG");
    FILE *f = log != NULL ? fopen(log, "a") : NULL;
    if (f != NULL) {
        fprintf(f, "cuInit in %d\n", (int)getpid());
        fclose(f);
    }
    find_visible();
    if (visible_count == 0)
        return CUDA_ERROR_NO_DEVICE;
    initialised = 1;
    return CUDA_SUCCESS;
}

#define NEED_INIT()                                                                                \
    do {                                                                                           \
        if (!initialised)                                                                          \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

FAKE_EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult e, const char **s)
{
    switch (e) {
    case CUDA_SUCCESS:
        *s = "CUDA_SUCCESS";
        return CUDA_SUCCESS;
    case CUDA_ERROR_NO_DEVICE:
        *s = "CUDA_ERROR_NO_DEVICE";
        return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE:
        *s = "CUDA_ERROR_INVALID_DEVICE";
        return CUDA_SUCCESS;
    default:
        *s = "CUDA_ERROR_FAKE";
        return CUDA_SUCCESS;
    }
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *count)
{
    NEED_INIT();
    *count = visible_count;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    NEED_INIT();
    if (ordinal < 0 || ordinal >= visible_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
    NEED_INIT();
    if (dev < 0 || dev >= visible_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *value = attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? FAKE_SMS : 7;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    NEED_INIT();
    if (dev < 0 || dev >= visible_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = FAKE_MEM;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    NEED_INIT();
    snprintf(name, (size_t)len, "Fake GPU %d", visible[dev]);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    NEED_INIT();
    if (dev < 0 || dev >= visible_count)
        return CUDA_ERROR_INVALID_DEVICE;
    fake_uuid(uuid, visible[dev]);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *bus)
{
    NEED_INIT();
    int n = atoi(bus);
    if (n < 0 || n >= visible_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = n;
    return CUDA_SUCCESS;
}

/* Whether the pair of physical GPUs (a, b) is in the list `var` names. */
static int listed_pair(const char *var, int a, int b)
{
    const char *list = getenv(var);
    int x, y, used;
    while (list != NULL && sscanf(list, "%d-%d%n", &x, &y, &used) == 2) {
        if ((x == a && y == b) || (x == b && y == a))
            return 1;
        list += used;
        list += *list == ',';
    }
    return 0;
}

FAKE_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    NEED_INIT();
    if (dev < 0 || dev >= visible_count || peer < 0 || peer >= visible_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *can = dev != peer && !listed_pair("FAKE_CUDA_NO_PEER", visible[dev], visible[peer]);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attr, CUdevice src,
                                             CUdevice dst)
{
    NEED_INIT();
    if (src < 0 || src >= visible_count || dst < 0 || dst >= visible_count || src == dst)
        return CUDA_ERROR_INVALID_DEVICE;
    int nvlink = listed_pair("FAKE_CUDA_NVLINK", visible[src], visible[dst]);
    int peer = !listed_pair("FAKE_CUDA_NO_PEER", visible[src], visible[dst]);
    switch (attr) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
        *value = nvlink ? 0 : 1;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
        *value = peer;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
        *value = peer && nvlink;
        return CUDA_SUCCESS;
    default:
        *value = 0;
        return CUDA_SUCCESS;
    }
}

static int fake_context = 1;

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    *ctx = (CUcontext)&fake_context;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx)
{
    (void)s;
    *ctx = (CUcontext)&fake_context;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
    (void)s;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

/* Events: a tick counter stands for the GPU clock; a launch takes 2 ticks. */
struct fake_event {
    double ms;
};
static double fake_clock_ms;

FAKE_EXPORT CUresult cuEventCreate(CUevent *ev, unsigned flags)
{
    (void)flags;
    *ev = (CUevent)calloc(1, sizeof(struct fake_event));
    return *ev ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent ev, CUstream s)
{
    (void)s;
    ((struct fake_event *)ev)->ms = fake_clock_ms;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventQuery(CUevent ev)
{
    (void)ev;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent ev)
{
    (void)ev;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    *ms = (float)(((struct fake_event *)b)->ms - ((struct fake_event *)a)->ms);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent ev)
{
    free(ev);
    return CUDA_SUCCESS;
}

/* Kernel handles are pointers to these names. */
FAKE_EXPORT const char fake_kernel_a[] = "_Z8kernel_aPfi";
FAKE_EXPORT const char fake_kernel_b[] = "_Z8kernel_bPKfPfm";

FAKE_EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
    if (f != (CUfunction)fake_kernel_a && f != (CUfunction)fake_kernel_b)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = (const char *)f;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuKernelGetName(const char **name, CUkernel k)
{
    return cuFuncGetName(name, (CUfunction)k);
}

static CUresult launch(CUfunction f)
{
    NEED_INIT();
    if (f != (CUfunction)fake_kernel_a && f != (CUfunction)fake_kernel_b)
        return CUDA_ERROR_INVALID_HANDLE;
    fake_clock_ms += 2.0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shm, CUstream s,
                                    void **params, void **extra)
{
    (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)s, (void)params,
        (void)extra;
    CUresult r = launch(f);
    if (r == CUDA_SUCCESS)
        fake_launches++;
    return r;
}

FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                         CUstream s, void **params, void **extra)
{
    (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)s, (void)params,
        (void)extra;
    CUresult r = launch(f);
    if (r == CUDA_SUCCESS)
        fake_launches_ptsz++;
    return r;
}

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    NEED_INIT();
    void *m = malloc(bytes ? bytes : 1);
    if (m == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)(uintptr_t)m;
    fake_allocs++;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    NEED_INIT();
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
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

/* The real cuGetProcAddress picks the newest version of a name (and the
 * _ptsz variant when asked for per-thread default streams). */
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
    for (int v = 3; p == NULL && v >= 2; v--) {
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
