/* Owns the table of kernels seen at launch: one record per kernel handle,
 * found through a hash on the handle, named once through the driver. */
#include "base/kernel_stats.h"

#include "base/pointer_hash.h"
#include "base/real_driver.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool mgpu_stats_enabled;

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_kernel_record *records;
static size_t record_count, record_capacity;
static int *slots;           /* open addressing: record id + 1, 0 when empty */
static size_t slot_capacity; /* power of two */

const char *mgpu_unsplit_reason_text(enum mgpu_unsplit_reason reason)
{
    switch (reason) {
    case MGPU_UNSPLIT_ONE_GPU:
        return "only one GPU selected";
    case MGPU_UNSPLIT_SMALL:
        return "ran whole on the home GPU: one block, or the cost model measured it faster whole "
               "(MGPU_SPLIT=always splits it anyway)";
    case MGPU_UNSPLIT_NO_COPY:
        return "ran the program's own code: its module has no rewritten modules (see modules)";
    case MGPU_UNSPLIT_SPLIT_OFF:
        return "MGPU_SPLIT=never";
    case MGPU_UNSPLIT_COOPERATIVE:
        return "cooperative launch (grid-wide sync)";
    case MGPU_UNSPLIT_CLUSTER:
        return "thread-block cluster launch";
    case MGPU_UNSPLIT_CAPTURE:
        return "launched into a stream capture (graph)";
    case MGPU_UNSPLIT_ANALYSIS:
        return "the kernel does what a split cannot keep (grid sync, device launches, ...: see "
               "`mgpu-ptx list`)";
    case MGPU_UNSPLIT_ATTRIBUTE:
        return "a launch attribute ties it to events or to the next kernel";
    case MGPU_UNSPLIT_NOT_READY:
        return "ran whole while the other GPUs were made ready beside the program (their "
               "contexts, from 0.1 s after its first allocation, then its module's copies there)";
    default:
        return "unknown";
    }
}

static char *kernel_name(const void *handle)
{
    const char *name = NULL;
    if (mgpu_drv.cuFuncGetName((const char **)&name, (CUfunction)handle) != CUDA_SUCCESS ||
        name == NULL) {
        name = NULL;
        if (mgpu_drv.cuKernelGetName((const char **)&name, (CUkernel)handle) != CUDA_SUCCESS)
            name = NULL;
    }
    return strdup(name ? name : "(unnamed kernel)");
}

static int grow(void)
{
    if (record_count == record_capacity) {
        size_t cap = record_capacity ? record_capacity * 2 : 64;
        struct mgpu_kernel_record *r = realloc(records, cap * sizeof *r);
        if (r == NULL)
            return -1;
        records = r;
        record_capacity = cap;
    }
    if ((record_count + 1) * 2 > slot_capacity) {
        size_t cap = slot_capacity ? slot_capacity * 2 : 128;
        int *s = calloc(cap, sizeof *s);
        if (s == NULL)
            return -1;
        for (size_t i = 0; i < record_count; i++) {
            size_t h = mgpu_pointer_hash(records[i].handle) & (cap - 1);
            while (s[h])
                h = (h + 1) & (cap - 1);
            s[h] = (int)i + 1;
        }
        free(slots);
        slots = s;
        slot_capacity = cap;
    }
    return 0;
}

int mgpu_kernel_stats_find(const void *handle)
{
    pthread_mutex_lock(&stats_lock);
    int id = -1;
    if (slot_capacity) {
        for (size_t h = mgpu_pointer_hash(handle) & (slot_capacity - 1); slots[h];
             h = (h + 1) & (slot_capacity - 1))
            if (records[slots[h] - 1].handle == handle) {
                id = slots[h] - 1;
                break;
            }
    }
    if (id < 0 && grow() == 0) {
        struct mgpu_kernel_record *r = &records[record_count];
        memset(r, 0, sizeof *r);
        r->handle = handle;
        r->name = kernel_name(handle);
        size_t h = mgpu_pointer_hash(handle) & (slot_capacity - 1);
        while (slots[h])
            h = (h + 1) & (slot_capacity - 1);
        id = (int)record_count++;
        slots[h] = id + 1;
    }
    pthread_mutex_unlock(&stats_lock);
    return id;
}

/* Under stats_lock: the record of a successful launch, its shape noted. */
static struct mgpu_kernel_record *launched(int id, const unsigned grid[3], const unsigned block[3])
{
    if (id < 0 || (size_t)id >= record_count)
        return NULL;
    struct mgpu_kernel_record *r = &records[id];
    if (!r->shape_known) {
        memcpy(r->grid, grid, sizeof r->grid);
        memcpy(r->block, block, sizeof r->block);
        r->shape_known = true;
    } else if (memcmp(r->grid, grid, sizeof r->grid) != 0 ||
               memcmp(r->block, block, sizeof r->block) != 0) {
        r->shape_varies = true;
    }
    r->launches++;
    return r;
}

void mgpu_kernel_stats_count_launch(int id, const unsigned grid[3], const unsigned block[3],
                                    enum mgpu_unsplit_reason reason)
{
    pthread_mutex_lock(&stats_lock);
    struct mgpu_kernel_record *r = launched(id, grid, block);
    if (r != NULL && reason != MGPU_UNSPLIT_NONE)
        r->reasons |= 1u << reason;
    pthread_mutex_unlock(&stats_lock);
}

static unsigned long slices_on[MGPU_MAX_GPUS]; /* under stats_lock */

void mgpu_kernel_stats_count_split(int id, const unsigned grid[3], const unsigned block[3],
                                   int slices, const int *gpus)
{
    pthread_mutex_lock(&stats_lock);
    struct mgpu_kernel_record *r = launched(id, grid, block);
    if (r != NULL) {
        r->split_launches++;
        if (slices > r->most_slices)
            r->most_slices = slices;
    }
    for (int i = 0; i < slices; i++)
        if (gpus[i] >= 0 && gpus[i] < MGPU_MAX_GPUS)
            slices_on[gpus[i]]++;
    pthread_mutex_unlock(&stats_lock);
}

void mgpu_kernel_stats_mirrored(int id, unsigned long long read, unsigned long long privatised)
{
    pthread_mutex_lock(&stats_lock);
    if (id >= 0 && (size_t)id < record_count) {
        records[id].mirrored_params |= read;
        records[id].privatised_params |= privatised;
    }
    pthread_mutex_unlock(&stats_lock);
}

int mgpu_kernel_stats_slices_per_gpu(unsigned long out[MGPU_MAX_GPUS])
{
    int gpus = 0;
    pthread_mutex_lock(&stats_lock);
    for (int g = 0; g < MGPU_MAX_GPUS; g++) {
        out[g] = slices_on[g];
        if (out[g] > 0)
            gpus = g + 1;
    }
    pthread_mutex_unlock(&stats_lock);
    return gpus;
}

void mgpu_kernel_stats_count_moved(int id, const unsigned grid[3], const unsigned block[3],
                                   enum mgpu_unsplit_reason reason, int gpu)
{
    pthread_mutex_lock(&stats_lock);
    struct mgpu_kernel_record *r = launched(id, grid, block);
    if (r != NULL) {
        r->reasons |= 1u << reason;
        r->moved_gpu = r->moved_launches == 0 || r->moved_gpu == gpu ? gpu : -1;
        r->moved_launches++;
    }
    if (gpu >= 0 && gpu < MGPU_MAX_GPUS)
        slices_on[gpu]++;
    pthread_mutex_unlock(&stats_lock);
}

void mgpu_kernel_stats_add_time(int id, double ms)
{
    pthread_mutex_lock(&stats_lock);
    if (id >= 0 && (size_t)id < record_count) {
        records[id].gpu_ms += ms;
        records[id].timed++;
    }
    pthread_mutex_unlock(&stats_lock);
}

size_t mgpu_kernel_stats_count(void)
{
    pthread_mutex_lock(&stats_lock);
    size_t n = record_count;
    pthread_mutex_unlock(&stats_lock);
    return n;
}

const struct mgpu_kernel_record *mgpu_kernel_stats_get(size_t id)
{
    pthread_mutex_lock(&stats_lock);
    const struct mgpu_kernel_record *r = id < record_count ? &records[id] : NULL;
    pthread_mutex_unlock(&stats_lock);
    return r;
}
