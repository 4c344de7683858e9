/* Owns the table of slice streams (see slice_streams.h): a small array
 * searched by the program's stream. A program that makes more streams
 * than the table holds shares the least recently made sets; that only
 * orders slices that could have run side by side, it never reorders. */
#include "sched/slice_streams.h"

#include "base/log.h"
#include "base/real_driver.h"
#include "base/config.h"

#include <string.h>

#define TABLE_SIZE 64

pthread_mutex_t mgpu_slice_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_slice_streams table[TABLE_SIZE];
static int used, next_victim;

/* One row of MGPU_MAX_GPUS flags per set; made once, with the first set,
 * and kept to the end of the process. */
static volatile uint32_t *flag_rows;
static CUdeviceptr flag_rows_device;
static bool flag_rows_tried;

/* Whether the driver has the memory operations and mapped pinned memory
 * that sequence flags need. */
static bool driver_has_flags(void)
{
    return mgpu_drv.cuStreamWaitValue32 != NULL && mgpu_drv.cuStreamWriteValue32 != NULL &&
           mgpu_drv.cuStreamBatchMemOp != NULL && mgpu_drv.cuMemHostAlloc != NULL &&
           mgpu_drv.cuMemHostGetDevicePointer != NULL;
}

/* Pinned, mapped into every context (portable), and written by the GPUs
 * without the host caching them: the host reads them only to find a
 * flag a faulted GPU left behind. */
static void make_flag_rows(void)
{
    flag_rows_tried = true;
    if (mgpu_cfg.fork_join != MGPU_FORK_JOIN_FLAGS || !driver_has_flags())
        return;
    size_t bytes = (size_t)TABLE_SIZE * MGPU_MAX_GPUS * sizeof(uint32_t);
    void *rows = NULL;
    CUresult r =
        mgpu_drv.cuMemHostAlloc(&rows, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemHostGetDevicePointer(&flag_rows_device, rows, 0);
    if (r != CUDA_SUCCESS) {
        mgpu_info("split launches fork and join with events: no pinned memory for sequence "
                  "flags (%s)",
                  mgpu_cu_error_name(r));
        return;
    }
    memset(rows, 0, bytes);
    flag_rows = rows;
}

/* A set uses flags when the row exists and GPU g's stream accepts a
 * flag write (one that changes nothing: the value already there). */
static bool flags_work_on(struct mgpu_slice_streams *s, int g)
{
    CUresult r =
        mgpu_drv.cuStreamWriteValue32(s->streams[g], s->flags_device + g * sizeof(uint32_t),
                                      s->join_sequence[g], CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS)
        mgpu_info("split launches fork and join with events: GPU %d's stream takes no flag "
                  "write (%s)",
                  g, mgpu_cu_error_name(r));
    return r == CUDA_SUCCESS;
}

static CUresult make_set(struct mgpu_slice_streams *s, CUstream program, CUcontext home, int ngpus,
                         const CUcontext *contexts)
{
    if (!flag_rows_tried)
        make_flag_rows();
    if (flag_rows != NULL) {
        size_t row = (size_t)(s - table) * MGPU_MAX_GPUS;
        s->flags = flag_rows + row;
        s->flags_device = flag_rows_device + row * sizeof(uint32_t);
    }
    int priority = 0;
    if (mgpu_drv.cuStreamGetPriority(program, &priority) != CUDA_SUCCESS)
        priority = 0;
    CUresult r = mgpu_drv.cuEventCreate(&s->fork, CU_EVENT_DISABLE_TIMING);
    for (int g = 1; g < ngpus && r == CUDA_SUCCESS; g++) {
        r = mgpu_drv.cuCtxPushCurrent(contexts[g]);
        if (r != CUDA_SUCCESS)
            break;
        r = mgpu_drv.cuStreamCreateWithPriority(&s->streams[g], CU_STREAM_NON_BLOCKING, priority);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuEventCreate(&s->joins[g], CU_EVENT_DISABLE_TIMING);
        if (r == CUDA_SUCCESS && s->flags != NULL && !flags_work_on(s, g))
            s->flags = NULL;
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
    }
    s->program = program;
    s->home = home;
    s->ngpus = ngpus;
    for (int g = 1; g < ngpus; g++)
        s->on_home_context[g] = contexts[g] == home;
    return r;
}

/* What a set that failed half made holds goes back, and the slot is free:
 * the launch runs whole and the next one makes the set again in place. */
static void destroy_half_made(struct mgpu_slice_streams *s, const CUcontext *contexts)
{
    if (s->fork != NULL)
        mgpu_drv.cuEventDestroy(s->fork);
    for (int g = 1; g < s->ngpus; g++) {
        if (s->streams[g] == NULL && s->joins[g] == NULL)
            continue;
        if (mgpu_drv.cuCtxPushCurrent(contexts[g]) != CUDA_SUCCESS)
            continue;
        if (s->streams[g] != NULL)
            mgpu_drv.cuStreamDestroy(s->streams[g]);
        if (s->joins[g] != NULL)
            mgpu_drv.cuEventDestroy(s->joins[g]);
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
    }
    memset(s->streams, 0, sizeof s->streams);
    memset(s->joins, 0, sizeof s->joins);
    s->fork = NULL;
    s->program = NULL;
    s->ngpus = 0;
}

struct mgpu_slice_streams *mgpu_slice_streams_for(CUstream program, CUcontext home, int ngpus,
                                                  const CUcontext *contexts, CUresult *err)
{
    for (int i = 0; i < used; i++)
        if (table[i].program == program && table[i].home == home && table[i].ngpus == ngpus)
            return &table[i];
    struct mgpu_slice_streams *s;
    if (used < TABLE_SIZE) {
        s = &table[used];
    } else {
        /* Reuse the oldest set's objects under the new key. */
        s = &table[next_victim];
        next_victim = (next_victim + 1) % TABLE_SIZE;
        if (s->home == home && s->ngpus == ngpus) {
            s->program = program;
            return s;
        }
    }
    /* The flags of a row keep counting up from where they are. */
    struct mgpu_slice_streams before = *s;
    memset(s, 0, sizeof *s);
    s->fork_sequence = before.fork_sequence;
    memcpy(s->join_sequence, before.join_sequence, sizeof s->join_sequence);
    memcpy(s->seen_done, before.join_sequence, sizeof s->seen_done);
    *err = make_set(s, program, home, ngpus, contexts);
    if (*err != CUDA_SUCCESS) {
        destroy_half_made(s, contexts);
        static int told; /* under the caller's lock */
        if (told++ < 4)
            mgpu_info("a launch that would split runs whole: its stream's slice streams and "
                      "events could not be made (%s); the next one tries again",
                      mgpu_cu_error_name(*err));
        return NULL;
    }
    if (s == &table[used])
        used++;
    return s;
}

CUresult mgpu_slice_streams_query(int gpu)
{
    CUresult result = CUDA_SUCCESS;
    pthread_mutex_lock(&mgpu_slice_streams_lock);
    for (int i = 0; i < used && result != CUDA_ERROR_NOT_READY; i++) {
        if (gpu >= table[i].ngpus || table[i].streams[gpu] == NULL)
            continue;
        CUresult r = mgpu_drv.cuStreamQuery(table[i].streams[gpu]);
        if (r != CUDA_SUCCESS)
            result = r;
    }
    pthread_mutex_unlock(&mgpu_slice_streams_lock);
    return result;
}

/* Whether `flag` has not yet reached `wanted`, counting modulo 2^32 as the
 * driver's wait does. */
static bool behind(uint32_t flag, uint32_t wanted)
{
    return (int32_t)(flag - wanted) < 0;
}

/* The state of a context as any call in it reports: a fault is sticky. */
static CUresult context_state(CUcontext ctx)
{
    CUresult r = mgpu_drv.cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = mgpu_drv.cuStreamQuery(CU_STREAM_LEGACY);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return r == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : r;
}

/* Whether GPU g of set s has slices not yet seen done. */
static bool outstanding(const struct mgpu_slice_streams *s, int g)
{
    uint32_t done = s->flags != NULL ? s->flags[g] : s->seen_done[g];
    return behind(done, s->join_sequence[g]);
}

/* A slice stream that waits for a fork flag that a failed home context
 * will never write. */
static void release_fork_of_failed_home(struct mgpu_slice_streams *s)
{
    if (s->flags == NULL || !behind(s->flags[0], s->fork_sequence))
        return;
    CUresult home = context_state(s->home);
    if (home == CUDA_SUCCESS)
        return;
    mgpu_info("the home context failed (%s); the fork flag is written for it",
              mgpu_cu_error_name(home));
    s->flags[0] = s->fork_sequence;
}

bool mgpu_slice_streams_watch(void (*failed)(int gpu, CUresult error))
{
    bool awaited = false;
    pthread_mutex_lock(&mgpu_slice_streams_lock);
    for (int i = 0; i < used; i++) {
        struct mgpu_slice_streams *s = &table[i];
        bool some_busy = false;
        for (int g = 1; g < s->ngpus; g++) {
            if (!outstanding(s, g))
                continue;
            CUresult r = mgpu_drv.cuStreamQuery(s->streams[g]);
            if (r == CUDA_ERROR_NOT_READY) {
                awaited = true;
                some_busy = true;
                continue;
            }
            if (r != CUDA_SUCCESS)
                failed(g, r);
            /* Idle or failed, the stream will write nothing more: its flag
             * gets the value it has (idle: no worker is queueing, the lock
             * is held) or will never get (failed), and the program's
             * stream moves on. */
            if (s->flags != NULL)
                s->flags[g] = s->join_sequence[g];
            s->seen_done[g] = s->join_sequence[g];
        }
        if (some_busy)
            release_fork_of_failed_home(s);
    }
    pthread_mutex_unlock(&mgpu_slice_streams_lock);
    return awaited;
}
