/* Owns the fake GPU's virtual memory management: a reserved range is host
 * address space with no access (mmap PROT_NONE); physical memory is a
 * memfd of its size, counted against its device's memory; a mapping maps
 * the memfd at its address (MAP_FIXED | MAP_SHARED) without access until
 * cuMemSetAccess grants it, as on a GPU; unmapping puts the range back to
 * no access. Physical memory goes back to its device once it is released
 * and no longer mapped. A kernel or copy that touches memory without
 * access faults (SIGSEGV), which is a failed test, as it would be a fault
 * on a GPU. */
#include "fake_gpu.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct physical {
    int fd;
    size_t bytes;
    CUdevice device;
    uint64_t id;
    bool released;
    bool imported; /* another process's (cuMemImportFromShareableHandle): not this device's */
    int maps;
};

struct range {
    uint64_t base;
    size_t bytes;
};

struct mapping {
    uint64_t base;
    size_t bytes;
    struct physical *physical;
    int prot;
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range *reservations;
static size_t nreservations, reservations_capacity;
static struct mapping *mappings;
static size_t nmappings, mappings_capacity;
static struct fake_handles physicals = FAKE_HANDLES_INIT;
static uint64_t next_block_id = 1u << 20;

static bool grow(void **items, size_t *capacity, size_t count, size_t size)
{
    if (count < *capacity)
        return true;
    size_t bigger = *capacity ? 2 * *capacity : 64;
    void *grown = realloc(*items, bigger * size);
    if (grown == NULL)
        return false;
    *items = grown;
    *capacity = bigger;
    return true;
}

/* The reservation holding [base, base + bytes), or -1; under vmm_lock. */
static long reservation_holding(uint64_t base, size_t bytes)
{
    for (size_t i = 0; i < nreservations; i++)
        if (base >= reservations[i].base && base - reservations[i].base <= reservations[i].bytes &&
            bytes <= reservations[i].bytes - (base - reservations[i].base))
            return (long)i;
    return -1;
}

static bool overlaps(uint64_t base, size_t bytes, const struct mapping *m)
{
    return base < m->base + m->bytes && m->base < base + bytes;
}

static long mapping_holding(uint64_t address)
{
    for (size_t i = 0; i < nmappings; i++)
        if (address >= mappings[i].base && address - mappings[i].base < mappings[i].bytes)
            return (long)i;
    return -1;
}

bool fake_vmm_find(uint64_t address, uint64_t *base, size_t *bytes, CUdevice *device,
                   uint64_t *block_id)
{
    pthread_mutex_lock(&vmm_lock);
    long i = mapping_holding(address);
    if (i >= 0) {
        *base = mappings[i].base;
        *bytes = mappings[i].bytes;
        *device = mappings[i].physical->device;
        *block_id = mappings[i].physical->id;
    }
    pthread_mutex_unlock(&vmm_lock);
    return i >= 0;
}

bool fake_vmm_valid(uint64_t address, size_t bytes, uint64_t *covered_to)
{
    (void)bytes;
    pthread_mutex_lock(&vmm_lock);
    long i = mapping_holding(address);
    bool ok = i >= 0 && (mappings[i].prot & PROT_WRITE);
    if (ok)
        *covered_to = mappings[i].base + mappings[i].bytes;
    pthread_mutex_unlock(&vmm_lock);
    return ok;
}

FAKE_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                   const CUmemAllocationProp *prop,
                                                   CUmemAllocationGranularity_flags option)
{
    FAKE_ENTER_INIT("cuMemGetAllocationGranularity", CUDA_ERROR_INVALID_VALUE);
    (void)option;
    if (granularity == NULL || prop == NULL || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        !fake_device_valid(prop->location.id))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = FAKE_GRANULARITY;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *out, size_t bytes, size_t alignment,
                                         CUdeviceptr wanted, unsigned long long flags)
{
    FAKE_ENTER_INIT("cuMemAddressReserve", CUDA_ERROR_OUT_OF_MEMORY);
    (void)wanted, (void)flags;
    if (out == NULL || bytes == 0 || bytes % FAKE_GRANULARITY != 0 ||
        (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < FAKE_GRANULARITY)
        alignment = FAKE_GRANULARITY;
    size_t span = bytes + alignment;
    void *p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t start = (uint64_t)(uintptr_t)p, base = (start + alignment - 1) / alignment * alignment;
    if (base > start)
        munmap(p, base - start);
    if (start + span > base + bytes)
        munmap((void *)(uintptr_t)(base + bytes), start + span - (base + bytes));
    pthread_mutex_lock(&vmm_lock);
    bool ok =
        grow((void **)&reservations, &reservations_capacity, nreservations, sizeof *reservations);
    if (ok)
        reservations[nreservations++] = (struct range){base, bytes};
    pthread_mutex_unlock(&vmm_lock);
    if (!ok) {
        munmap((void *)(uintptr_t)base, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_live(FAKE_RESERVATION, 1);
    *out = base;
    return CUDA_SUCCESS;
}

/* A range with mappings left in it is refused: they would be lost. */
FAKE_EXPORT CUresult cuMemAddressFree(CUdeviceptr base, size_t bytes)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuMemAddressFree");
    pthread_mutex_lock(&vmm_lock);
    long i = reservation_holding(base, bytes);
    CUresult r = CUDA_SUCCESS;
    if (i < 0 || reservations[i].base != base || reservations[i].bytes != bytes)
        r = CUDA_ERROR_INVALID_VALUE;
    for (size_t m = 0; r == CUDA_SUCCESS && m < nmappings; m++)
        if (overlaps(base, bytes, &mappings[m]))
            r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        reservations[i] = reservations[--nreservations];
        munmap((void *)(uintptr_t)base, bytes);
    }
    pthread_mutex_unlock(&vmm_lock);
    if (r != CUDA_SUCCESS)
        return r;
    fake_live(FAKE_RESERVATION, -1);
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t bytes,
                                 const CUmemAllocationProp *prop, unsigned long long flags)
{
    FAKE_ENTER_INIT("cuMemCreate", CUDA_ERROR_OUT_OF_MEMORY);
    if (handle == NULL || prop == NULL || flags != 0 || bytes == 0 ||
        bytes % FAKE_GRANULARITY != 0 || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUdevice device = prop->location.id;
    if (!fake_device_valid(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!fake_device_take(device, bytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct physical *p = calloc(1, sizeof *p);
    int fd = memfd_create("fake-gpu-memory", MFD_CLOEXEC);
    if (p == NULL || fd < 0 || ftruncate(fd, (off_t)bytes) != 0 ||
        !fake_handles_add(&physicals, p)) {
        if (fd >= 0)
            close(fd);
        free(p);
        fake_device_give(device, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    p->fd = fd;
    p->bytes = bytes;
    p->device = device;
    pthread_mutex_lock(&vmm_lock);
    p->id = next_block_id++;
    pthread_mutex_unlock(&vmm_lock);
    fake_live(FAKE_PHYSICAL, 1);
    fake_live(FAKE_PHYSICAL_BYTES, (long)bytes);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Under vmm_lock: the physical memory goes back to its device once it is
 * both released and unmapped. */
static void give_back_if_unused(struct physical *p)
{
    if (p->released && p->maps == 0 && !p->imported)
        fake_device_give(p->device, p->bytes);
}

/* POSIX file descriptors only: the memory's memfd, duplicated for the
 * caller to pass on and close, as the driver's export does. */
FAKE_EXPORT CUresult cuMemExportToShareableHandle(void *shareable,
                                                  CUmemGenericAllocationHandle handle,
                                                  CUmemAllocationHandleType type,
                                                  unsigned long long flags)
{
    FAKE_ENTER_INIT("cuMemExportToShareableHandle", CUDA_ERROR_INVALID_VALUE);
    struct physical *p = (struct physical *)(uintptr_t)handle;
    if (shareable == NULL || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || flags != 0 ||
        !fake_handles_has(&physicals, p))
        return CUDA_ERROR_INVALID_VALUE;
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    *(int *)shareable = fd;
    return CUDA_SUCCESS;
}

/* Another process's memory from its memfd (the caller keeps its
 * descriptor): mapped like this process's own, counted against no
 * device here. */
FAKE_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                    void *os_handle, CUmemAllocationHandleType type)
{
    FAKE_ENTER_INIT("cuMemImportFromShareableHandle", CUDA_ERROR_INVALID_VALUE);
    int given = (int)(intptr_t)os_handle;
    struct stat st;
    if (handle == NULL || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
        fstat(given, &st) != 0 || st.st_size <= 0 || st.st_size % FAKE_GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct physical *p = calloc(1, sizeof *p);
    int fd = fcntl(given, F_DUPFD_CLOEXEC, 0);
    if (p == NULL || fd < 0 || !fake_handles_add(&physicals, p)) {
        if (fd >= 0)
            close(fd);
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    p->fd = fd;
    p->bytes = (size_t)st.st_size;
    p->imported = true;
    pthread_mutex_lock(&vmm_lock);
    p->id = next_block_id++;
    pthread_mutex_unlock(&vmm_lock);
    fake_live(FAKE_PHYSICAL, 1);
    fake_live(FAKE_PHYSICAL_BYTES, (long)p->bytes);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuMemRelease");
    struct physical *p = (struct physical *)(uintptr_t)handle;
    if (!fake_handles_remove(&physicals, p))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    close(p->fd);
    p->fd = -1;
    p->released = true;
    give_back_if_unused(p);
    pthread_mutex_unlock(&vmm_lock);
    fake_live(FAKE_PHYSICAL, -1);
    fake_live(FAKE_PHYSICAL_BYTES, -(long)p->bytes);
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemMap(CUdeviceptr base, size_t bytes, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    FAKE_ENTER_INIT("cuMemMap", CUDA_ERROR_OUT_OF_MEMORY);
    struct physical *p = (struct physical *)(uintptr_t)handle;
    if (!fake_handles_has(&physicals, p))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags != 0 || bytes == 0 || base % FAKE_GRANULARITY != 0 || bytes % FAKE_GRANULARITY != 0 ||
        offset % FAKE_GRANULARITY != 0 || offset > p->bytes || bytes > p->bytes - offset)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    CUresult r = CUDA_SUCCESS;
    if (reservation_holding(base, bytes) < 0)
        r = CUDA_ERROR_INVALID_VALUE;
    for (size_t m = 0; r == CUDA_SUCCESS && m < nmappings; m++)
        if (overlaps(base, bytes, &mappings[m]))
            r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS &&
        !grow((void **)&mappings, &mappings_capacity, nmappings, sizeof *mappings))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && mmap((void *)(uintptr_t)base, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED,
                                  p->fd, (off_t)offset) == MAP_FAILED)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        mappings[nmappings++] = (struct mapping){base, bytes, p, PROT_NONE};
        p->maps++;
    }
    pthread_mutex_unlock(&vmm_lock);
    if (r == CUDA_SUCCESS)
        fake_live(FAKE_MAPPING, 1);
    return r;
}

/* The range must be made of whole mappings. */
FAKE_EXPORT CUresult cuMemUnmap(CUdeviceptr base, size_t bytes)
{
    if (!atomic_load(&fake_initialised))
        return CUDA_ERROR_NOT_INITIALIZED;
    bool fail = fake_call_fails("cuMemUnmap");
    pthread_mutex_lock(&vmm_lock);
    CUresult r = CUDA_SUCCESS;
    size_t found = 0, covered = 0;
    for (size_t m = 0; m < nmappings; m++) {
        if (!overlaps(base, bytes, &mappings[m]))
            continue;
        if (mappings[m].base < base || mappings[m].base + mappings[m].bytes > base + bytes)
            r = CUDA_ERROR_INVALID_VALUE;
        found++;
        covered += mappings[m].bytes;
    }
    if (found == 0 || covered != bytes)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        mmap((void *)(uintptr_t)base, bytes, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        for (size_t m = 0; m < nmappings;) {
            if (!overlaps(base, bytes, &mappings[m])) {
                m++;
                continue;
            }
            struct physical *p = mappings[m].physical;
            p->maps--;
            give_back_if_unused(p);
            mappings[m] = mappings[--nmappings];
        }
    }
    pthread_mutex_unlock(&vmm_lock);
    if (r != CUDA_SUCCESS)
        return r;
    fake_live(FAKE_MAPPING, -(long)found);
    return fail ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

/* Every byte of the range must be mapped; the strongest access any device
 * gets is the host's. */
FAKE_EXPORT CUresult cuMemSetAccess(CUdeviceptr base, size_t bytes, const CUmemAccessDesc *desc,
                                    size_t count)
{
    FAKE_ENTER_INIT("cuMemSetAccess", CUDA_ERROR_INVALID_VALUE);
    if (desc == NULL || count == 0 || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int prot = PROT_NONE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            !fake_device_valid(desc[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            prot = PROT_READ | PROT_WRITE;
        else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE)
            prot = PROT_READ;
    }
    pthread_mutex_lock(&vmm_lock);
    CUresult r = CUDA_SUCCESS;
    size_t covered = 0;
    for (size_t m = 0; m < nmappings; m++) {
        if (!overlaps(base, bytes, &mappings[m]))
            continue;
        uint64_t lo = mappings[m].base > base ? mappings[m].base : base;
        uint64_t hi = mappings[m].base + mappings[m].bytes < base + bytes
                          ? mappings[m].base + mappings[m].bytes
                          : base + bytes;
        covered += hi - lo;
    }
    if (covered != bytes)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && mprotect((void *)(uintptr_t)base, bytes, prot) != 0)
        r = CUDA_ERROR_INVALID_VALUE;
    for (size_t m = 0; r == CUDA_SUCCESS && m < nmappings; m++)
        if (overlaps(base, bytes, &mappings[m]))
            mappings[m].prot = prot;
    pthread_mutex_unlock(&vmm_lock);
    return r;
}
