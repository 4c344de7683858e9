/* Owns the grid-cutting arithmetic (see grid_split.h). */
#include "partition/grid_split.h"

#include <math.h>

int mgpu_grid_split_dim(const unsigned grid[3])
{
    for (int d = 2; d >= 0; d--)
        if (grid[d] > 1)
            return d;
    return -1;
}

void mgpu_grid_ends_from_weights(int ngpus, const double *weights, double *ends)
{
    double total = 0;
    for (int g = 0; weights != NULL && g < ngpus; g++)
        if (weights[g] > 0)
            total += weights[g];
    double sum = 0;
    for (int g = 0; g < ngpus; g++) {
        sum += total > 0 ? (weights[g] > 0 ? weights[g] : 0) / total : 1.0 / ngpus;
        ends[g] = sum;
    }
    ends[ngpus - 1] = 1.0;
}

bool mgpu_grid_ends_from_owners(const struct mgpu_owner_run *runs, size_t nruns, size_t size,
                                int ngpus, double *ends)
{
    if (size == 0 || nruns != (size_t)ngpus)
        return false;
    for (int g = 0; g < ngpus; g++) {
        if (runs[g].gpu != g)
            return false;
        ends[g] = (double)(runs[g].offset + runs[g].bytes) / (double)size;
    }
    ends[ngpus - 1] = 1.0;
    return true;
}

int mgpu_grid_split(const unsigned grid[3], int ngpus, const double *ends,
                    struct mgpu_grid_slice *out)
{
    int dim = mgpu_grid_split_dim(grid);
    struct mgpu_grid_slice whole = {.gpu = 0, .first = {0, 0, 0}};
    for (int d = 0; d < 3; d++)
        whole.dims[d] = grid[d];
    if (dim < 0 || ngpus <= 1) {
        out[0] = whole;
        return 1;
    }
    unsigned blocks = grid[dim];
    unsigned start = 0;
    int n = 0;
    for (int g = 0; g < ngpus; g++) {
        double end_share = ends[g] < 0 ? 0 : ends[g] > 1 ? 1 : ends[g];
        unsigned end = g == ngpus - 1 ? blocks : (unsigned)llround(end_share * blocks);
        if (end <= start)
            continue;
        out[n] = whole;
        out[n].gpu = g;
        out[n].first[dim] = start;
        out[n].dims[dim] = end - start;
        n++;
        start = end;
    }
    return n;
}

void mgpu_grid_split_iterations(unsigned long long iterations, const double *ends,
                                struct mgpu_grid_slice *slices, int nslices)
{
    unsigned long long begin = 0;
    for (int s = 0; s < nslices; s++) {
        double share = ends[slices[s].gpu];
        share = share < 0 ? 0 : share > 1 ? 1 : share;
        unsigned long long end =
            s == nslices - 1 ? iterations : (unsigned long long)llround(share * (double)iterations);
        if (end < begin)
            end = begin;
        slices[s].iterations = true;
        slices[s].iteration_begin = begin;
        slices[s].iteration_end = end;
        begin = end;
    }
}
