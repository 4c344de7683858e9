/* Owns the mirror-or-not decisions of MGPU_MIRROR=auto (see
 * mirror_policy.h): a table of launch shapes, each with its best measured
 * times without and with mirrors and at most one timing in flight. */
#include "mirror_policy.h"

#include "real_driver.h"
#include "runtime.h"
#include "shape_table.h"

#include <math.h>
#include <pthread.h>

#define TABLE_SIZE 4096 /* a power of two */
#define MIRRORED_SAMPLES 2

struct shape {
    struct mgpu_shape_key key;
    double best_us[2]; /* [mirrored]: INFINITY until measured */
    int samples[2];
    bool warmed; /* launched once, untimed */
    bool in_flight, in_flight_mirrored, counted;
    CUevent start, stop;
};

static pthread_mutex_t policy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shape table[TABLE_SIZE];
static struct mgpu_mirror_policy_stats stats;

static bool decided(const struct shape *s)
{
    return s->samples[0] >= 1 && s->samples[1] >= MIRRORED_SAMPLES;
}

static bool faster_mirrored(const struct shape *s)
{
    return s->best_us[1] < s->best_us[0] * MGPU_MIRROR_GAIN;
}

/* Under policy_lock: takes in a finished timing. */
static void collect(struct shape *s)
{
    if (!s->in_flight)
        return;
    CUresult q = mgpu_drv.cuEventQuery(s->stop);
    if (q == CUDA_ERROR_NOT_READY)
        return;
    float ms;
    if (q == CUDA_SUCCESS && mgpu_drv.cuEventElapsedTime(&ms, s->start, s->stop) == CUDA_SUCCESS) {
        double us = ms * 1000.0;
        if (us < s->best_us[s->in_flight_mirrored])
            s->best_us[s->in_flight_mirrored] = us;
        s->samples[s->in_flight_mirrored]++;
    }
    s->in_flight = false;
    if (decided(s) && !s->counted) {
        s->counted = true;
        stats.decided++;
        stats.mirrored += faster_mirrored(s);
    }
}


/* Under policy_lock, for a shape launched before: whether this launch
 * mirrors, and whether it is timed. */
static bool decide(struct shape *s, struct mgpu_mirror_probe *probe)
{
    if (decided(s))
        return faster_mirrored(s);
    if (s->in_flight)
        return false;
    if (s->start == NULL && (mgpu_drv.cuEventCreate(&s->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
                             mgpu_drv.cuEventCreate(&s->stop, CU_EVENT_DEFAULT) != CUDA_SUCCESS))
        s->start = s->stop = NULL;
    if (s->stop == NULL)
        return false;
    bool mirrored = s->samples[0] >= 1;
    probe->shape = s;
    s->in_flight = true;
    s->in_flight_mirrored = mirrored;
    return mirrored;
}

bool mgpu_mirror_policy_choose(const void *kernel, const unsigned grid[3], const unsigned block[3],
                               struct mgpu_mirror_probe *probe)
{
    probe->shape = NULL;
    if (mgpu_cfg.mirror != MGPU_MIRROR_AUTO)
        return mgpu_cfg.mirror == MGPU_MIRROR_ALWAYS;
    pthread_mutex_lock(&policy_lock);
    bool fresh, mirrored = false;
    struct shape *s =
        mgpu_shape_record(table, TABLE_SIZE, sizeof *table, kernel, grid, block, &fresh);
    if (s != NULL && fresh)
        s->best_us[0] = s->best_us[1] = INFINITY;
    if (s != NULL && !s->warmed) {
        s->warmed = true;
    } else if (s != NULL) {
        collect(s);
        mirrored = decide(s, probe);
    }
    pthread_mutex_unlock(&policy_lock);
    return mirrored;
}

void mgpu_mirror_probe_begin(struct mgpu_mirror_probe *probe, CUstream stream)
{
    struct shape *s = probe->shape;
    if (s != NULL && mgpu_drv.cuEventRecord(s->start, stream) != CUDA_SUCCESS) {
        pthread_mutex_lock(&policy_lock);
        s->in_flight = false;
        pthread_mutex_unlock(&policy_lock);
        probe->shape = NULL;
    }
}

void mgpu_mirror_probe_end(struct mgpu_mirror_probe *probe, CUstream stream, CUresult launched)
{
    struct shape *s = probe->shape;
    if (s == NULL)
        return;
    if (launched != CUDA_SUCCESS || mgpu_drv.cuEventRecord(s->stop, stream) != CUDA_SUCCESS) {
        pthread_mutex_lock(&policy_lock);
        s->in_flight = false;
        pthread_mutex_unlock(&policy_lock);
    }
}

void mgpu_mirror_policy_stats(struct mgpu_mirror_policy_stats *out)
{
    pthread_mutex_lock(&policy_lock);
    for (size_t i = 0; i < TABLE_SIZE; i++)
        if (table[i].in_flight && table[i].key.kernel != NULL)
            collect(&table[i]); /* a timing the last launches left out */
    *out = stats;
    pthread_mutex_unlock(&policy_lock);
}
