/* Cutting a launch's grid into one slice of blocks per GPU: which
 * dimension is cut, where the cuts go (by the GPUs' weights, or at the
 * owner boundaries of the buffer the kernel writes), and the slices. Pure
 * arithmetic, so that it is tested without a GPU. */
#ifndef MGPU_GRID_SPLIT_H
#define MGPU_GRID_SPLIT_H

#include "partition/placement.h"

#include <stdbool.h>
#include <stddef.h>

/* A contiguous range of blocks for one GPU: blocks first[d] ..
 * first[d] + dims[d] - 1 of the full grid in each dimension d. */
struct mgpu_grid_slice {
    int gpu;
    unsigned first[3];
    unsigned dims[3];
    /* For a kernel whose grid-stride loop is cut by iterations instead:
     * this slice runs iterations [iteration_begin, iteration_end). */
    bool iterations;
    unsigned long long iteration_begin, iteration_end;
};

/* The dimension a grid is cut along: the slowest-varying one (z, then y,
 * then x) that has more than one block; -1 for a grid of one block. */
int mgpu_grid_split_dim(const unsigned grid[3]);

/* Shares as cumulative ends: ends[g] is the fraction of the grid that GPUs
 * 0..g take, ends[ngpus - 1] is 1. From weights (NULL or all zero: equal
 * shares). */
void mgpu_grid_ends_from_weights(int ngpus, const double *weights, double *ends);

/* Ends that put each cut where the owner of a written buffer of `size`
 * bytes changes, from its owner runs (mgpu_pool_runs). Only when every GPU
 * owns exactly one run and the runs come in GPU order (the distributed
 * placement); returns false otherwise, and the caller keeps the weights. */
bool mgpu_grid_ends_from_owners(const struct mgpu_owner_run *runs, size_t nruns, size_t size,
                                int ngpus, double *ends);

/* Cuts `grid` along mgpu_grid_split_dim at round(ends[g] * blocks) and
 * writes the non-empty slices, in GPU order, to out (room for ngpus).
 * Returns how many there are (1 for a grid that cannot be cut). */
int mgpu_grid_split(const unsigned grid[3], int ngpus, const double *ends,
                    struct mgpu_grid_slice *out);

/* Gives the slices of a grid-stride loop of `iterations` iterations the
 * ranges the same ends give their GPUs, so that each runs the iterations
 * next to its data: slice s from where the previous one stops to
 * round(ends[gpu] * iterations), the first from 0, the last to the end,
 * which covers every iteration once whichever GPUs got no slice. */
void mgpu_grid_split_iterations(unsigned long long iterations, const double *ends,
                                struct mgpu_grid_slice *slices, int nslices);

#endif
