/* Owns the placement policies' arithmetic (see placement.h). */
#include "partition/placement.h"

#include <string.h>

static const char *const policy_names[] = {"distributed", "home", "interleave"};

int mgpu_placement_parse(const char *text, enum mgpu_placement *out)
{
    for (size_t i = 0; i < sizeof policy_names / sizeof policy_names[0]; i++)
        if (text != NULL && strcmp(text, policy_names[i]) == 0) {
            *out = (enum mgpu_placement)i;
            return 0;
        }
    return -1;
}

const char *mgpu_placement_name(enum mgpu_placement p)
{
    return (unsigned)p < sizeof policy_names / sizeof policy_names[0] ? policy_names[p] : "?";
}

int mgpu_placement_owner(enum mgpu_placement p, size_t i, size_t n, int ngpus,
                         const double *weights)
{
    if (ngpus <= 1 || n == 0 || p == MGPU_PLACE_HOME)
        return 0;
    if (p == MGPU_PLACE_INTERLEAVE)
        return (int)(i % (size_t)ngpus);
    double total = 0;
    for (int g = 0; g < ngpus; g++)
        total += weights ? (weights[g] > 0 ? weights[g] : 0) : 1.0;
    if (total <= 0)
        return 0;
    /* The granule's middle, as a fraction of the buffer, against the
     * GPUs' cumulative shares. */
    double middle = ((double)i + 0.5) / (double)n * total, edge = 0;
    for (int g = 0; g < ngpus; g++) {
        edge += weights ? (weights[g] > 0 ? weights[g] : 0) : 1.0;
        if (middle < edge)
            return g;
    }
    return ngpus - 1;
}

size_t mgpu_placement_runs(const int *owners, size_t ngranules, size_t offset, size_t bytes,
                           struct mgpu_owner_run *runs, size_t max)
{
    size_t count = 0, end = offset + bytes;
    if (end > ngranules * MGPU_GRANULE_SIZE)
        end = ngranules * MGPU_GRANULE_SIZE;
    for (size_t at = offset; at < end;) {
        size_t g = at / MGPU_GRANULE_SIZE;
        size_t stop = (g + 1) * MGPU_GRANULE_SIZE;
        while (stop < end && owners[stop / MGPU_GRANULE_SIZE] == owners[g])
            stop += MGPU_GRANULE_SIZE;
        if (stop > end)
            stop = end;
        if (count < max)
            runs[count] = (struct mgpu_owner_run){at, stop - at, owners[g]};
        count++;
        at = stop;
    }
    return count;
}

void mgpu_placement_range_bytes(enum mgpu_placement p, size_t ngranules, int ngpus, size_t offset,
                                size_t bytes, size_t *held)
{
    memset(held, 0, (size_t)ngpus * sizeof *held);
    size_t end = offset + bytes;
    for (size_t g = offset / MGPU_GRANULE_SIZE; g < ngranules && g * MGPU_GRANULE_SIZE < end; g++) {
        size_t lo = g * MGPU_GRANULE_SIZE > offset ? g * MGPU_GRANULE_SIZE : offset;
        size_t hi = (g + 1) * MGPU_GRANULE_SIZE < end ? (g + 1) * MGPU_GRANULE_SIZE : end;
        held[mgpu_placement_owner(p, g, ngranules, ngpus, NULL)] += hi - lo;
    }
}

void mgpu_placement_bytes_per_gpu(const int *owners, size_t ngranules, int ngpus,
                                  size_t *bytes_per_gpu)
{
    memset(bytes_per_gpu, 0, (size_t)ngpus * sizeof *bytes_per_gpu);
    for (size_t g = 0; g < ngranules; g++)
        if (owners[g] >= 0 && owners[g] < ngpus)
            bytes_per_gpu[owners[g]] += MGPU_GRANULE_SIZE;
}
