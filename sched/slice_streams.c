/* Owns the table of slice streams (see slice_streams.h): a small array
 * searched by the program's stream. A program that makes more streams
 * than the table holds shares the least recently made sets; that only
 * orders slices that could have run side by side, it never reorders. */
#include "slice_streams.h"

#include "real_driver.h"

#include <string.h>

#define TABLE_SIZE 64

pthread_mutex_t mgpu_slice_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mgpu_slice_streams table[TABLE_SIZE];
static int used, next_victim;

static CUresult make_set(struct mgpu_slice_streams *s, CUstream program, CUcontext home, int ngpus,
                         const CUcontext *contexts)
{
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
        CUcontext popped;
        mgpu_drv.cuCtxPopCurrent(&popped);
    }
    s->program = program;
    s->home = home;
    s->ngpus = ngpus;
    return r;
}

/* Objects of a set that failed half made are kept, not destroyed: the
 * set is made again in place, and the few handles lost do not matter. */
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
    memset(s, 0, sizeof *s);
    *err = make_set(s, program, home, ngpus, contexts);
    if (*err != CUDA_SUCCESS) {
        s->program = NULL;
        s->ngpus = 0;
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
