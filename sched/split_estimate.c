/* Owns the estimate of a split launch's time (see split_estimate.h): the
 * bytes each slice would read from other GPUs' memory, from the pool's
 * owner runs and the run's link model. */
#include "sched/split_estimate.h"

#include "sched/launch_params.h"
#include "memory/memory_pool.h"
#include "sched/placement_follow.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_footprint.h"
#include "base/real_driver.h"
#include "sched/run_links.h"
#include "base/config.h"

#include <math.h>
#include <string.h>

/* A kernel with atomics whose whole launch takes this many times what its
 * bytes take at local bandwidth is taken to spend the rest on its atomics. */
#define ATOMICS_BOUND 4.0

/* [lo, hi) as fractions of the grid (or of the iterations) slice s runs. */
static void slice_share(const struct mgpu_split_estimate *e, int s, double *lo, double *hi)
{
    const struct mgpu_grid_slice *slice = &e->slices[s];
    if (slice->iterations) {
        unsigned long long total = 0;
        for (int i = 0; i < e->nslices; i++)
            if (e->slices[i].iteration_end > total)
                total = e->slices[i].iteration_end;
        *lo = total ? (double)slice->iteration_begin / (double)total : 0.0;
        *hi = total ? (double)slice->iteration_end / (double)total : 1.0;
        return;
    }
    int dim = mgpu_grid_split_dim(e->grid);
    if (dim < 0) {
        *lo = 0.0;
        *hi = 1.0;
        return;
    }
    *lo = (double)slice->first[dim] / e->grid[dim];
    *hi = (double)(slice->first[dim] + slice->dims[dim]) / e->grid[dim];
}

/* The bytes of [from, to) of buffer b each GPU holds, into held[]: as the
 * pool has them, or, for an estimate with the large buffers spread, as
 * the pool's spread would lay them out. */
static void bytes_held(const struct mgpu_split_estimate *e, const struct mgpu_pool_block *b,
                       CUdeviceptr from, CUdeviceptr to, size_t held[MGPU_MAX_GPUS])
{
    if (!(e->spread && b->bytes >= MGPU_FOLLOW_MIN_BYTES &&
          mgpu_pool_spread_bytes_by_gpu(from, to - from, held) > 0))
        mgpu_pool_bytes_by_gpu(from, to - from, held);
}

/* What GPU entry `gpu` reads of [from, to) of buffer b where another
 * entry holds it, `scatter` bytes over the link per byte used: the seconds
 * at the links' bandwidths, added to *seconds, and the bytes, added to
 * bytes_from[owner]. */
static void remote_bytes(const struct mgpu_split_estimate *e, const struct mgpu_link_model *m,
                         const struct mgpu_pool_block *b, double scatter, CUdeviceptr from,
                         CUdeviceptr to, int gpu, double *seconds, double *bytes_from)
{
    if (to <= from || gpu >= m->nentries)
        return;
    size_t held[MGPU_MAX_GPUS];
    bytes_held(e, b, from, to, held);
    for (int owner = 0; owner < m->nentries && owner < MGPU_MAX_GPUS; owner++) {
        if (owner == gpu || held[owner] == 0)
            continue;
        double bytes = (double)held[owner] * scatter;
        *seconds += bytes / (m->gbps[owner][gpu] * 1e9);
        bytes_from[owner] += bytes;
    }
}

/* The same for [lo, hi) of b as fractions of it (a slice's share). */
static void remote_reads(const struct mgpu_split_estimate *e, const struct mgpu_link_model *m,
                         const struct mgpu_pool_block *b, double scatter, double lo, double hi,
                         int gpu, double *seconds, double *bytes_from)
{
    CUdeviceptr from = b->start + (CUdeviceptr)(lo * (double)b->bytes);
    CUdeviceptr to = b->start + (CUdeviceptr)(hi * (double)b->bytes);
    remote_bytes(e, m, b, scatter, from, to, gpu, seconds, bytes_from);
}

/* Under MGPU_FOOTPRINTS=on: per buffer, the byte range [from[j], to[j])
 * that the blocks [begin, end) along `dim` may touch by the kernel's
 * footprint (the hull over the pointers into it of what they read and
 * write, clamped to the buffer); false when the footprint cannot say for
 * every buffer (none, unknown, a pointer in a struct, a buffer no slot
 * points into), and the shares are used instead. */
static bool footprint_ranges(const struct mgpu_split_estimate *e,
                             const struct mgpu_pool_block *buffers, int nbuffers, int dim,
                             unsigned begin, unsigned end, CUdeviceptr *from, CUdeviceptr *to)
{
    const struct mgpu_gpu_kernels *k = e->kernel;
    const struct mgpu_kernel_footprint *fp = k->footprint;
    if (!mgpu_cfg.footprints || fp == NULL || fp->unknown || e->block == NULL || dim < 0 ||
        fp->nslots > 64)
        return false;
    void *values[64];
    struct mgpu_fp_launch l;
    if (k->nparams > 64 ||
        !mgpu_launch_footprint(k, e->params, e->buffer, e->grid, e->block, values, 64, &l))
        return false;
    struct mgpu_fp_range reads[64], writes[64];
    mgpu_fp_slice(fp, &l, dim, begin, end, reads, writes);
    bool covered[64] = {false};
    for (size_t s = 0; s < fp->nslots; s++) {
        const struct mgpu_fp_slot *slot = &fp->slots[s];
        CUdeviceptr pointer;
        if (slot->offset != 0 || slot->param < 0 || (unsigned)slot->param >= k->nparams ||
            !mgpu_launch_param_pointer(k, (unsigned)slot->param, e->params, e->buffer, &pointer))
            return false;
        int j = 0;
        while (j < nbuffers &&
               !(pointer >= buffers[j].start && pointer < buffers[j].start + buffers[j].bytes))
            j++;
        if (j == nbuffers)
            continue; /* not in the pool: no link to cross */
        CUdeviceptr lo = buffers[j].start, hi = buffers[j].start + buffers[j].bytes;
        for (int w = 0; w < 2; w++) {
            const struct mgpu_fp_range *r = w ? &writes[s] : &reads[s];
            if (!r->any)
                continue;
            CUdeviceptr a = lo, b = hi;
            if (!r->whole) {
                long long rel = (long long)(pointer - lo);
                long long ra = rel + r->lo, rb = rel + r->hi;
                a = ra <= 0 ? lo : lo + (CUdeviceptr)ra;
                b = rb <= 0 ? lo : lo + (CUdeviceptr)rb;
                if (b > hi)
                    b = hi;
                if (a > hi)
                    a = hi;
            }
            if (!covered[j]) {
                from[j] = a;
                to[j] = b;
                covered[j] = true;
            } else {
                from[j] = a < from[j] ? a : from[j];
                to[j] = b > to[j] ? b : to[j];
            }
        }
    }
    for (int j = 0; j < nbuffers; j++)
        if (!covered[j])
            return false;
    return true;
}

/* Seconds entry `gpu` spends reading what blocks [begin, end) of the cut
 * touch by the footprint; false as footprint_ranges. */
static bool footprint_remote_seconds(const struct mgpu_split_estimate *e,
                                     const struct mgpu_link_model *m,
                                     const struct mgpu_pool_block *buffers, const double *scatter,
                                     int nbuffers, int dim, unsigned begin, unsigned end, int gpu,
                                     double *bytes_from, double *seconds)
{
    CUdeviceptr from[64], to[64];
    if (nbuffers > 64 || !footprint_ranges(e, buffers, nbuffers, dim, begin, end, from, to))
        return false;
    *seconds = 0.0;
    for (int j = 0; j < nbuffers; j++)
        remote_bytes(e, m, &buffers[j], scatter[j], from[j], to[j], gpu, seconds, bytes_from);
    return true;
}

/* Seconds entry `gpu` spends reading [lo, hi) of every touched buffer
 * from other entries' memory; the bytes per owner added to bytes_from. */
static double share_remote_seconds(const struct mgpu_split_estimate *e,
                                   const struct mgpu_link_model *m,
                                   const struct mgpu_pool_block *buffers, const double *scatter,
                                   int nbuffers, double lo, double hi, int gpu, double *bytes_from)
{
    double seconds = 0.0;
    for (int j = 0; j < nbuffers; j++)
        remote_reads(e, m, &buffers[j], scatter[j], lo, hi, gpu, &seconds, bytes_from);
    return seconds;
}

/* Per buffer, the most bytes a link carries per byte used among the
 * parameters pointing into it (the analysis's scatter: 8 for a column of
 * floats a naive transpose stores, a sector per thread); 1 without it. */
static void buffer_scatter(const struct mgpu_split_estimate *e,
                           const struct mgpu_pool_block *buffers, int nbuffers, double *scatter)
{
    const struct mgpu_gpu_kernels *k = e->kernel;
    for (int j = 0; j < nbuffers; j++)
        scatter[j] = 1.0;
    for (unsigned i = 0; k->param_scatter != NULL && i < k->nparams; i++) {
        CUdeviceptr pointer;
        struct mgpu_pool_block b;
        if (k->param_use[i] == 0 || k->param_scatter[i] <= 1 ||
            !mgpu_launch_param_buffer(k, i, e->params, e->buffer, &pointer, &b))
            continue;
        for (int j = 0; j < nbuffers; j++)
            if (buffers[j].start == b.start && k->param_scatter[i] > scatter[j])
                scatter[j] = k->param_scatter[i];
    }
}

/* Seconds the owners take to send what the slices read from them: an
 * owner's links share its NVLink ports, so what several GPUs read from it
 * goes out at about its fastest link's bandwidth in all. (conv2d, its 32
 * MiB on the home GPU of 4 x H200: split two ways as fast as whole, four
 * ways 2.3 times slower, though each slice read less.) */
static double busiest_owner_seconds(const struct mgpu_link_model *m, const double *bytes_from)
{
    double worst = 0.0;
    for (int o = 0; o < m->nentries; o++) {
        double fastest = 0.0;
        for (int g = 0; g < m->nentries; g++)
            if (g != o && m->gbps[o][g] > fastest)
                fastest = m->gbps[o][g];
        if (bytes_from[o] > 0.0 && fastest > 0.0 && bytes_from[o] / (fastest * 1e9) > worst)
            worst = bytes_from[o] / (fastest * 1e9);
    }
    return worst;
}

/* The GPU holding most of buffer b, or -1. */
static int main_owner(const struct mgpu_pool_block *b)
{
    size_t held[MGPU_MAX_GPUS];
    if (mgpu_pool_bytes_by_gpu(b->start, b->bytes, held) == 0)
        return -1;
    int owner = 0;
    for (int g = 1; g < MGPU_MAX_GPUS; g++)
        if (held[g] > held[owner])
            owner = g;
    return owner;
}

/* The owner of the buffer the kernel updates with atomics through a
 * parameter, where those are not privatised (a privatised split makes each
 * GPU's slice update a copy of its own); -1 when it has none. */
static int atomics_owner(const struct mgpu_split_estimate *e)
{
    const struct mgpu_gpu_kernels *k = e->kernel;
    for (unsigned i = 0; i < k->nparams; i++) {
        if (!(k->param_use[i] & MGPU_PARAM_ATOMIC))
            continue;
        if (e->privatised && k->param_reduction != NULL && k->param_reduction[i] != 0)
            continue;
        CUdeviceptr pointer;
        struct mgpu_pool_block b;
        if (mgpu_launch_param_buffer(k, i, e->params, e->buffer, &pointer, &b))
            return main_owner(&b);
    }
    return -1;
}

/* A kernel whose whole launch took over ATOMICS_BOUND times what its bytes
 * take at local bandwidth, and that updates a buffer with atomics that are
 * not privatised, is taken to spend the rest on its atomics. Split, those
 * still meet at the buffer's owner, and the slices on other GPUs make
 * theirs across a link, a round trip each: modelled as the atomics' time
 * whole, plus as much again for the share of the grid run away from the
 * owner. (histogram_atomicinc, 256 bins on the home GPU of 4 x H200, 0.62
 * ms whole: 0.84 ms split two ways, 1.1 ms four ways.) Returns 0 for any
 * other kernel. */
static double atomics_bound_us(const struct mgpu_split_estimate *e, const struct mgpu_link_model *m,
                               const struct mgpu_pool_block *buffers, int nbuffers, double whole_us)
{
    int owner = atomics_owner(e);
    if (owner < 0 || owner >= m->nentries || m->gbps[owner][owner] <= 0.0)
        return 0.0;
    double bytes = 0.0;
    for (int j = 0; j < nbuffers; j++)
        bytes += (double)buffers[j].bytes;
    double bytes_us = bytes / (m->gbps[owner][owner] * 1e9) * 1e6;
    if (whole_us < ATOMICS_BOUND * bytes_us)
        return 0.0;
    double away = 0.0;
    for (int s = 0; s < e->nslices; s++) {
        double lo, hi;
        slice_share(e, s, &lo, &hi);
        if (e->slices[s].gpu != owner)
            away += hi - lo;
    }
    return (whole_us - bytes_us) * (1.0 + away);
}

/* Whether a pointer parameter the kernel uses points into managed memory
 * (cuMemAllocManaged, outside the pool). */
static bool uses_managed_memory(const struct mgpu_split_estimate *e)
{
    const struct mgpu_gpu_kernels *k = e->kernel;
    if (mgpu_drv.cuPointerGetAttribute == NULL)
        return false;
    for (unsigned i = 0; i < k->nparams; i++) {
        CUdeviceptr pointer;
        unsigned managed = 0;
        if (k->param_use[i] != 0 &&
            mgpu_launch_param_pointer(k, i, e->params, e->buffer, &pointer) && pointer != 0 &&
            !mgpu_pool_holds(pointer) &&
            mgpu_drv.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, pointer) ==
                CUDA_SUCCESS &&
            managed)
            return true;
    }
    return false;
}

double mgpu_split_estimate_us(const struct mgpu_split_estimate *e, double whole_us)
{
    const struct mgpu_gpu_kernels *k = e->kernel;
    if (k->param_use == NULL || (k->notes & (MGPU_NOTE_UNKNOWN_LOAD | MGPU_NOTE_UNKNOWN_STORE)) ||
        e->nslices < 2)
        return -1.0;
    if (uses_managed_memory(e))
        return INFINITY;
    const struct mgpu_link_model *m = mgpu_run_links();
    if (m == NULL)
        return mgpu_run_links_pending() ? NAN : -1.0;
    struct mgpu_pool_block buffers[64];
    int nbuffers = (int)mgpu_launch_param_buffers(k, e->params, e->buffer, buffers, 64);
    double scatter[64];
    buffer_scatter(e, buffers, nbuffers, scatter);
    /* The whole launch, on the home GPU, read what others hold too (as
     * they lie now: that is what it was measured with). */
    double whole_from[MGPU_MAX_GPUS] = {0}, split_from[MGPU_MAX_GPUS] = {0};
    struct mgpu_split_estimate as_measured = *e;
    as_measured.spread = false;
    double whole_remote_us =
        share_remote_seconds(&as_measured, m, buffers, scatter, nbuffers, 0.0, 1.0, 0, whole_from) *
        1e6;
    double rest_us = whole_us > whole_remote_us ? whole_us - whole_remote_us : 0.0;
    double slowest_us = 0.0;
    int dim = mgpu_grid_split_dim(e->grid);
    for (int s = 0; s < e->nslices; s++) {
        double lo, hi;
        slice_share(e, s, &lo, &hi);
        const struct mgpu_grid_slice *sl = &e->slices[s];
        double from_fp[MGPU_MAX_GPUS] = {0}, fp_seconds = 0.0;
        double remote_us;
        if (!sl->iterations && dim >= 0 &&
            footprint_remote_seconds(e, m, buffers, scatter, nbuffers, dim, sl->first[dim],
                                     sl->first[dim] + sl->dims[dim], sl->gpu, from_fp,
                                     &fp_seconds)) {
            remote_us = fp_seconds * 1e6;
            for (int g = 0; g < MGPU_MAX_GPUS; g++)
                split_from[g] += from_fp[g];
        } else {
            remote_us = share_remote_seconds(e, m, buffers, scatter, nbuffers, lo, hi,
                                             e->slices[s].gpu, split_from) *
                        1e6;
        }
        double us = rest_us * (hi - lo) + remote_us;
        if (us > slowest_us)
            slowest_us = us;
    }
    double owners_us = busiest_owner_seconds(m, split_from) * 1e6;
    double atomics_us = atomics_bound_us(e, m, buffers, nbuffers, whole_us);
    double split_us = owners_us > slowest_us ? owners_us : slowest_us;
    return atomics_us > split_us ? atomics_us : split_us;
}
