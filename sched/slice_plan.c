/* Owns the choice of cuts for split launches (see slice_plan.h): the
 * GPUs' weights, asked of the driver once, and the written buffer's
 * owners, asked of the pool at each launch. */
#include "sched/slice_plan.h"

#include "partition/gpu_choice.h"
#include "partition/gpu_contexts.h"
#include "sched/launch_params.h"
#include "memory/memory_pool.h"
#include "ptx/ptx_analysis.h"
#include "base/real_driver.h"
#include "base/config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* Every module's rewritten modules span the same GPUs, so one set of ends serves all
 * launches; it is measured again only if a kernel comes with another
 * count. */
static pthread_mutex_t weights_lock = PTHREAD_MUTEX_INITIALIZER;
static double weight_ends[MGPU_MAX_GPUS];
static atomic_int weight_gpus; /* the count weight_ends is for; 0 before the first */
/* The threads resident on the run's smallest device when full
 * (multiprocessors x threads each); 0 when not known. With weight_ends. */
static double fill_threads;

/* Each device's share by its multiprocessors and clock, split equally
 * among the entries that stand on it (gpu_entries.h). */
static void measure_weights(const struct mgpu_gpu_kernels *k)
{
    double weights[MGPU_MAX_GPUS];
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    if (e == NULL || e->count != k->ngpus) {
        mgpu_gpu_weights(k->ngpus, NULL, NULL, weights); /* equal */
    } else {
        int devices[MGPU_MAX_GPUS], sms[MGPU_MAX_GPUS] = {0}, khz[MGPU_MAX_GPUS] = {0};
        int n = mgpu_gpu_entries_distinct(e, devices);
        fill_threads = 0;
        for (int i = 0; i < n; i++) {
            CUdevice dev;
            int per_sm = 0;
            if (mgpu_drv.cuDeviceGet(&dev, devices[i]) == CUDA_SUCCESS) {
                mgpu_drv.cuDeviceGetAttribute(&sms[i], CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                              dev);
                mgpu_drv.cuDeviceGetAttribute(&khz[i], CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
                mgpu_drv.cuDeviceGetAttribute(
                    &per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
            }
            double full = (double)sms[i] * per_sm;
            if (i == 0 || full < fill_threads)
                fill_threads = full > 0 ? full : 0;
        }
        double device_share[MGPU_MAX_GPUS], by_device[MGPU_MAX_GPUS] = {0};
        mgpu_gpu_weights(n, sms, khz, device_share);
        for (int i = 0; i < n; i++)
            by_device[devices[i]] = device_share[i];
        mgpu_gpu_entries_weights(e, by_device, weights);
    }
    mgpu_grid_ends_from_weights(k->ngpus, weights, weight_ends);
}

static const double *ends_by_weight(const struct mgpu_gpu_kernels *k)
{
    if (atomic_load_explicit(&weight_gpus, memory_order_acquire) != k->ngpus) {
        pthread_mutex_lock(&weights_lock);
        if (atomic_load_explicit(&weight_gpus, memory_order_relaxed) != k->ngpus) {
            measure_weights(k);
            atomic_store_explicit(&weight_gpus, k->ngpus, memory_order_release);
        }
        pthread_mutex_unlock(&weights_lock);
    }
    return weight_ends;
}

/* Whether parameter i is a pointer into a pool buffer; fills *b if so. */
static bool parameter_block(const struct mgpu_gpu_kernels *k, unsigned i, void *const *params,
                            const void *buffer, struct mgpu_pool_block *b)
{
    CUdeviceptr p;
    return mgpu_launch_param_buffer(k, i, params, buffer, &p, b);
}

/* Ends at the owner boundaries of the largest buffer the kernel writes,
 * when there is one the pool spread one part per GPU. */
static bool ends_by_owner(const struct mgpu_gpu_kernels *k, void *const *params, const void *buffer,
                          double *ends)
{
    if (k->param_use == NULL)
        return false;
    struct mgpu_pool_block largest = {0};
    for (unsigned i = 0; i < k->nparams; i++) {
        struct mgpu_pool_block b;
        if ((k->param_use[i] & (MGPU_PARAM_STORE | MGPU_PARAM_ATOMIC)) &&
            parameter_block(k, i, params, buffer, &b) && b.bytes > largest.bytes)
            largest = b;
    }
    if (largest.bytes == 0)
        return false;
    struct mgpu_owner_run runs[MGPU_MAX_GPUS];
    size_t n = mgpu_pool_runs(largest.start, largest.bytes, runs, MGPU_MAX_GPUS);
    return n <= MGPU_MAX_GPUS && mgpu_grid_ends_from_owners(runs, n, largest.bytes, k->ngpus, ends);
}

/* The iteration count of a kernel's grid-stride loop: the value of the
 * parameter that bounds it, when it is a positive count that fits the
 * loop's index (a 4-byte one may be signed, so it stays below 2^31). */
static bool stride_iterations(const struct mgpu_gpu_kernels *k, void *const *params,
                              const void *buffer, unsigned long long *iterations)
{
    int i = k->stride_bound_param;
    const void *at =
        i >= 0 && (unsigned)i < k->nparams ? mgpu_launch_param_at(k, i, params, buffer) : NULL;
    if (at == NULL)
        return false;
    size_t size = k->param_sizes[i];
    if (size == 4) {
        uint32_t v;
        memcpy(&v, at, sizeof v);
        *iterations = v;
        return v > 0 && v < (1u << 31);
    }
    if (size == 8) {
        uint64_t v;
        memcpy(&v, at, sizeof v);
        *iterations = v;
        return v > 0 && v < (1ull << 63);
    }
    return false;
}

/* MGPU_STRIDE_BLOCKS=fill: each slice of a loop cut by iterations runs as
 * many blocks as fill its GPU, up to the whole grid. A program sizes a
 * grid-stride loop's grid to fill one GPU (2048 blocks of 256 threads on
 * an H200, which holds 270k resident): four slices of a quarter each would
 * leave every GPU half idle, each thread walking four times the
 * iterations. A slice's blocks are then 0.. of the whole grid; which of
 * them run does not matter to a loop cut by iterations, whose blocks only
 * start its index. */
static void fill_iteration_slices(const unsigned grid[3], unsigned block_threads,
                                  struct mgpu_grid_slice *out, int n)
{
    int dim = mgpu_grid_split_dim(grid);
    if (dim < 0 || block_threads == 0 || fill_threads <= 0)
        return;
    double want = fill_threads / block_threads;
    unsigned blocks = grid[dim];
    if (want < grid[dim]) {
        blocks = (unsigned)want; /* rounded up: a device holds whole blocks */
        blocks += blocks < want;
    }
    for (int s = 0; s < n; s++) {
        if (!out[s].iterations || out[s].dims[dim] >= blocks)
            continue;
        out[s].first[dim] = 0;
        out[s].dims[dim] = blocks;
    }
}

int mgpu_slice_plan(const struct mgpu_gpu_kernels *k, const unsigned grid[3],
                    unsigned block_threads, void *const *params, const void *buffer,
                    struct mgpu_grid_slice *out)
{
    double owner_ends[MGPU_MAX_GPUS];
    const double *ends = ends_by_weight(k);
    if (ends_by_owner(k, params, buffer, owner_ends))
        ends = owner_ends;
    int n = mgpu_grid_split(grid, k->ngpus, ends, out);
    /* A grid-stride loop of a 1D grid: each slice runs the iterations next
     * to its data, cut where its blocks would have been. */
    unsigned long long iterations;
    if (n > 1 && grid[1] == 1 && grid[2] == 1 &&
        stride_iterations(k, params, buffer, &iterations)) {
        mgpu_grid_split_iterations(iterations, ends, out, n);
        if (mgpu_cfg.stride_fill)
            fill_iteration_slices(grid, block_threads, out, n);
    }
    return n;
}

/* The distinct buffers weighed; a kernel rarely names more. */
#define COUNTED_BUFFERS 64

int mgpu_slice_plan_data_owner(const struct mgpu_gpu_kernels *k, void *const *params,
                               const void *buffer)
{
    double bytes_on[MGPU_MAX_GPUS] = {0};
    unsigned long long counted[COUNTED_BUFFERS]; /* a buffer named twice counts once */
    int ncounted = 0;
    for (unsigned i = 0; k->param_sizes != NULL && i < k->nparams; i++) {
        struct mgpu_pool_block b;
        if (!parameter_block(k, i, params, buffer, &b))
            continue;
        bool seen = false;
        for (int c = 0; c < ncounted; c++)
            seen = seen || counted[c] == b.id;
        if (seen || ncounted == COUNTED_BUFFERS)
            continue;
        counted[ncounted++] = b.id;
        size_t held[MGPU_MAX_GPUS];
        mgpu_pool_bytes_by_gpu(b.start, b.bytes, held);
        for (int g = 0; g < k->ngpus; g++)
            bytes_on[g] += (double)held[g];
    }
    int owner = 0;
    for (int g = 1; g < k->ngpus; g++)
        if (bytes_on[g] > bytes_on[owner])
            owner = g;
    return owner;
}
