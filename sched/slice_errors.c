/* Owns the record of which GPUs ran slices since they were last asked,
 * the sticky slice error, and the printf flush (see slice_errors.h). */
#include "sched/slice_errors.h"

#include "base/config.h"
#include "base/log.h"
#include "base/real_driver.h"
#include "sched/slice_streams.h"

#include <pthread.h>
#include <stdatomic.h>

static atomic_ullong unchecked_gpus; /* bit g: GPU g ran slices not yet asked about */
static atomic_bool printf_pending;
static _Atomic CUresult sticky_error = CUDA_SUCCESS;
/* Copied, not pointed to: the module whose copies they came from may be
 * unloaded before the next synchronisation. */
static _Atomic(CUcontext) slice_contexts[MGPU_MAX_GPUS];
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;

void mgpu_slice_errors_launched(const CUcontext *contexts, int ngpus, bool prints,
                                const struct mgpu_grid_slice *slices, int nslices)
{
    unsigned long long gpus = 0;
    for (int s = 0; s < nslices; s++)
        if (slices[s].gpu > 0 && slices[s].gpu < 64)
            gpus |= 1ull << slices[s].gpu;
    for (int g = 1; g < ngpus && g < MGPU_MAX_GPUS; g++)
        if (slice_contexts[g] == NULL)
            slice_contexts[g] = contexts[g];
    if (prints)
        atomic_store(&printf_pending, true);
    atomic_fetch_or(&unchecked_gpus, gpus);
}

void mgpu_slice_errors_found(int gpu, CUresult error)
{
    CUresult none = CUDA_SUCCESS;
    if (atomic_compare_exchange_strong(&sticky_error, &none, error))
        mgpu_error("a slice of a split kernel failed on GPU %d: %s", gpu,
                   mgpu_cu_error_name(error));
}

CUresult mgpu_slice_errors_check(CUresult result, bool waited)
{
    CUresult sticky = atomic_load_explicit(&sticky_error, memory_order_relaxed);
    if (sticky != CUDA_SUCCESS)
        return sticky;
    if (atomic_load_explicit(&unchecked_gpus, memory_order_relaxed) == 0)
        return result;
    pthread_mutex_lock(&check_lock);
    unsigned long long gpus = atomic_exchange(&unchecked_gpus, 0), busy = 0;
    bool flush = waited && atomic_exchange(&printf_pending, false);
    CUresult slice_error = CUDA_SUCCESS;
    int failed_gpu = 0;
    for (int g = 1; g < 64 && gpus >> g; g++) {
        if (!(gpus >> g & 1))
            continue;
        CUresult r = flush && slice_contexts[g] != NULL ? mgpu_drv_synchronize_context(slice_contexts[g])
                                                        : mgpu_slice_streams_query(g);
        if (r == CUDA_ERROR_NOT_READY)
            busy |= 1ull << g; /* ask again at the next call */
        else if (r != CUDA_SUCCESS && slice_error == CUDA_SUCCESS) {
            slice_error = r;
            failed_gpu = g;
        }
    }
    atomic_fetch_or(&unchecked_gpus, busy);
    if (slice_error != CUDA_SUCCESS)
        mgpu_slice_errors_found(failed_gpu, slice_error);
    pthread_mutex_unlock(&check_lock);
    /* The first error found, here or by the slice watch meanwhile. */
    sticky = atomic_load(&sticky_error);
    return sticky != CUDA_SUCCESS ? sticky : result;
}
