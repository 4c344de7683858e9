/* Owns the shape keys' hashing and the two-way timings of launch shapes
 * (see shape_timings.h). */
#include "base/shape_timings.h"

#include "base/monotonic_clock.h"
#include "base/pointer_hash.h"
#include "base/real_driver.h"

#include <math.h>
#include <string.h>
#include <time.h>

void *mgpu_shape_record(void *records, size_t count, size_t stride, const void *kernel,
                        const unsigned grid[3], const unsigned block[3], bool *fresh)
{
    size_t h = mgpu_pointer_hash(kernel);
    for (int d = 0; d < 3; d++)
        h = h * 1000003u ^ grid[d] ^ ((size_t)block[d] << 20);
    *fresh = false;
    for (size_t probes = 0, i = h & (count - 1); probes < count;
         probes++, i = (i + 1) & (count - 1)) {
        struct mgpu_shape_key *key = (struct mgpu_shape_key *)((char *)records + i * stride);
        if (key->kernel == NULL) {
            key->kernel = kernel;
            memcpy(key->grid, grid, sizeof key->grid);
            memcpy(key->block, block, sizeof key->block);
            *fresh = true;
            return key;
        }
        if (key->kernel == kernel && memcmp(key->grid, grid, sizeof key->grid) == 0 &&
            memcmp(key->block, block, sizeof key->block) == 0)
            return key;
    }
    return NULL;
}

void mgpu_shape_timings_reset(struct mgpu_shape_timings *t, enum mgpu_try_kind kind)
{
    t->best_us[0] = t->best_us[1] = INFINITY;
    t->try_kind = kind;
}

void mgpu_shape_timings_collect(struct mgpu_shape_timings *t)
{
    if (!t->in_flight)
        return;
    CUresult q = mgpu_drv.cuEventQuery(t->stop);
    if (q == CUDA_ERROR_NOT_READY)
        return;
    float ms;
    if (q == CUDA_SUCCESS && mgpu_drv.cuEventElapsedTime(&ms, t->start, t->stop) == CUDA_SUCCESS) {
        double us = ms * 1000.0;
        if (t->in_flight_way && isfinite(t->best_us[0]))
            mgpu_try_budget_spend(t->try_kind, us - t->best_us[0]);
        if (us < t->best_us[t->in_flight_way])
            t->best_us[t->in_flight_way] = us;
        t->samples[t->in_flight_way]++;
        t->sum_us[t->in_flight_way] += us;
        t->summed[t->in_flight_way]++;
    }
    t->in_flight = false;
}

void mgpu_shape_timings_ran(const struct mgpu_shape_timings *t, bool way)
{
    double us = way && isfinite(t->best_us[1]) ? t->best_us[1] : t->best_us[0];
    if (isfinite(us))
        mgpu_try_budget_ran(us);
}

double mgpu_shape_timings_tries_over_us(const struct mgpu_shape_timings *t)
{
    if (t->summed[1] == 0 || !isfinite(t->best_us[0]))
        return 0.0;
    double over = t->sum_us[1] - t->summed[1] * t->best_us[0];
    return over > 0.0 ? over : 0.0;
}

double mgpu_shape_table_tries_over_us(void *records, size_t count, size_t stride,
                                      size_t timings_at, unsigned long *tries)
{
    double over = 0.0;
    *tries = 0;
    for (size_t i = 0; i < count; i++) {
        char *record = (char *)records + i * stride;
        if (((const struct mgpu_shape_key *)(void *)record)->kernel == NULL)
            continue;
        struct mgpu_shape_timings *t = (struct mgpu_shape_timings *)(void *)(record + timings_at);
        mgpu_shape_timings_collect(t);
        *tries += (unsigned long)t->summed[1];
        over += mgpu_shape_timings_tries_over_us(t);
    }
    return over;
}

bool mgpu_shape_timings_arm(struct mgpu_shape_timings *t, bool way)
{
    if (t->start == NULL && (mgpu_drv.cuEventCreate(&t->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
                             mgpu_drv.cuEventCreate(&t->stop, CU_EVENT_DEFAULT) != CUDA_SUCCESS))
        t->start = t->stop = NULL;
    if (t->stop == NULL)
        return false;
    t->in_flight = true;
    t->in_flight_way = way;
    return true;
}

static void give_up(struct mgpu_shape_timings *t, pthread_mutex_t *lock)
{
    pthread_mutex_lock(lock);
    t->in_flight = false;
    pthread_mutex_unlock(lock);
}

bool mgpu_shape_timings_begin(struct mgpu_shape_timings *t, pthread_mutex_t *lock, CUstream stream)
{
    if (mgpu_drv.cuEventRecord(t->start, stream) == CUDA_SUCCESS)
        return true;
    give_up(t, lock);
    return false;
}

void mgpu_shape_timings_end(struct mgpu_shape_timings *t, pthread_mutex_t *lock, CUstream stream,
                            CUresult launched)
{
    if (launched != CUDA_SUCCESS || mgpu_drv.cuEventRecord(t->stop, stream) != CUDA_SUCCESS)
        give_up(t, lock);
}

#define TIMING_WAIT_MAX_MS 1000.0

void mgpu_shape_timings_await(struct mgpu_shape_timings *t, pthread_mutex_t *lock)
{
    CUevent stop = t->stop;
    pthread_mutex_unlock(lock);
    struct timespec pause = {0, 20000};
    long long deadline = mgpu_monotonic_ns() + (long long)(TIMING_WAIT_MAX_MS * 1e6);
    while (mgpu_drv.cuEventQuery(stop) == CUDA_ERROR_NOT_READY && mgpu_monotonic_ns() <= deadline)
        nanosleep(&pause, NULL);
    pthread_mutex_lock(lock);
    mgpu_shape_timings_collect(t);
}
