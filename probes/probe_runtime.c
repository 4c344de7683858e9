/* Owns the probes' state inside the program (see probe_runtime.h): the
 * probe set, each GPU's maps and clock, the attached kernels, the launch
 * table, and reading it all back at exit. Driver calls go to the real
 * driver. */
#include "probes/probe_runtime.h"

#include "base/demangle.h"
#include "partition/gpu_contexts.h"
#include "base/kernel_timing.h"
#include "base/log.h"
#include "base/monotonic_clock.h"
#include "probes/probe_clock.h"
#include "probes/probe_page_map.h"
#include "probes/probe_tables.h"
#include "base/real_driver.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gpu_maps {
    CUcontext context;
    CUdeviceptr base;
    struct mgpu_probe_clock clock;
    bool ready;
};

static struct {
    struct ptx_probe_set set;
    struct ptx_probe_inject inject;
    bool on;
    char out[MGPU_PATH_MAX]; /* MGPU_PROBE_OUT, or empty */
    void (*started)(void);   /* called at the first maps made */
    uint64_t run_start_ns;   /* host clock at load: mgpu_run_ns()'s zero */
    bool any_maps;
    uint64_t *map_offset; /* per map, in words; [nmaps] is the total */
    pthread_mutex_t lock; /* maps being made, kernels being added */
    struct gpu_maps gpus[MGPU_MAX_GPUS];
    struct mgpu_probe_kernel kernels[MGPU_PROBE_MAX_KERNELS];
    atomic_uint nkernels;
    bool kernels_full; /* a kernel past MGPU_PROBE_MAX_KERNELS shares the last id */
    atomic_uint next_sequence;
    /* per kernel, its launches' fewest and most threads per block (0: none
     * yet), copied into kernels[] at exit */
    atomic_uint block_threads_min[MGPU_PROBE_MAX_KERNELS],
        block_threads_max[MGPU_PROBE_MAX_KERNELS];
    uint64_t *launch_host_ns;
    int32_t *launch_kernel;
    char unprobed[32][200];
    size_t nunprobed;
} probes = {.lock = PTHREAD_MUTEX_INITIALIZER};

static unsigned attach_kernel(void *ctx, const char *kernel, const size_t *chosen, size_t n)
{
    (void)ctx;
    pthread_mutex_lock(&probes.lock);
    unsigned count = atomic_load(&probes.nkernels), id = 0;
    while (id < count && strcmp(probes.kernels[id].name, kernel) != 0)
        id++;
    if (id == count && count < MGPU_PROBE_MAX_KERNELS) {
        struct mgpu_probe_kernel *k = &probes.kernels[id];
        k->name = strdup(kernel);
        k->pretty = mgpu_demangle(kernel);
        if (k->name == NULL) {
            free(k->pretty);
            k->pretty = NULL;
            id = MGPU_PROBE_MAX_KERNELS - 1;
        } else {
            atomic_store(&probes.nkernels, count + 1);
        }
    } else if (id == count) {
        probes.kernels_full = true;
        id = MGPU_PROBE_MAX_KERNELS - 1;
    }
    for (size_t i = 0; i < n; i++)
        if (chosen[i] < 64)
            probes.kernels[id].probes |= 1ull << chosen[i];
    probes.kernels[id].sample_blocks = ptx_probe_block_sampling(&probes.set, chosen, n);
    pthread_mutex_unlock(&probes.lock);
    return id;
}

static char *demangle(const char *mangled)
{
    return mgpu_demangle(mangled);
}

int mgpu_probes_load(const char *list, const char *out, void (*started)(void), char *err,
                     size_t errlen)
{
    if (list == NULL || list[0] == '\0')
        return 0;
    char *copy = strdup(list);
    if (copy == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    char *save = NULL;
    for (char *entry = strtok_r(copy, ",", &save); entry && rc == 0;
         entry = strtok_r(NULL, ",", &save)) {
        /* NAME=PATH: the name the user gave --probe, and its PTX */
        char *path = entry, *name = entry, *eq = strchr(entry, '=');
        if (eq != NULL) {
            *eq = '\0';
            path = eq + 1;
        }
        rc = ptx_probe_set_add_file(&probes.set, name, path, err, errlen);
    }
    free(copy);
    if (rc == 0) {
        probes.map_offset = calloc(probes.set.nmaps + 1, sizeof *probes.map_offset);
        probes.launch_host_ns = calloc(MGPU_PROBE_MAX_LAUNCHES, sizeof *probes.launch_host_ns);
        probes.launch_kernel = malloc(MGPU_PROBE_MAX_LAUNCHES * sizeof *probes.launch_kernel);
        if (!probes.map_offset || !probes.launch_host_ns || !probes.launch_kernel) {
            snprintf(err, errlen, "out of memory for the probes' tables");
            rc = -1;
        }
    }
    if (rc != 0) {
        ptx_probe_set_free(&probes.set);
        return -1;
    }
    memset(probes.launch_kernel, 0xff, MGPU_PROBE_MAX_LAUNCHES * sizeof *probes.launch_kernel);
    for (size_t i = 0; i < probes.set.nmaps; i++) /* 256-byte aligned, as the driver's */
        probes.map_offset[i + 1] =
            probes.map_offset[i] + (ptx_probe_map_bytes(&probes.set.maps[i]) + 255) / 256 * 32;
    probes.inject = (struct ptx_probe_inject){
        .set = &probes.set, .demangle = demangle, .attach = attach_kernel, .ctx = NULL};
    atomic_store(&probes.next_sequence, 1);
    snprintf(probes.out, sizeof probes.out, "%s", out ? out : "");
    probes.started = started;
    probes.run_start_ns = (uint64_t)mgpu_monotonic_ns();
    probes.on = true;
    mgpu_info("probes: %zu probe%s and %zu map%s from %zu file%s", probes.set.nprobes,
              probes.set.nprobes == 1 ? "" : "s", probes.set.nmaps,
              probes.set.nmaps == 1 ? "" : "s", probes.set.nfiles,
              probes.set.nfiles == 1 ? "" : "s");
    return 0;
}

bool mgpu_probes_on(void)
{
    return probes.on;
}

const struct ptx_probe_inject *mgpu_probes_inject(void)
{
    return probes.on ? &probes.inject : NULL;
}

/* GPU `gpu`'s maps, in the current context, at their initial values. */
static int make_maps(struct gpu_maps *g, char *err, size_t errlen)
{
    size_t words = probes.map_offset[probes.set.nmaps];
    uint64_t *initial = calloc(words + 1, sizeof *initial);
    if (initial == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < probes.set.nmaps; i++) {
        const struct ptx_probe_map *map = &probes.set.maps[i];
        if (map->kind == PTX_PROBE_ARRAY)
            for (uint64_t e = 0; e < map->length; e++)
                initial[probes.map_offset[i] + e] = map->initial;
    }
    CUresult r = mgpu_drv.cuMemAlloc(&g->base, (words + 1) * sizeof *initial);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemcpyHtoD(g->base, initial, (words + 1) * sizeof *initial);
    free(initial);
    if (r == CUDA_SUCCESS)
        r = mgpu_probe_clock_measure(&g->clock);
    if (r != CUDA_SUCCESS) {
        if (g->base)
            mgpu_drv.cuMemFree(g->base);
        g->base = 0;
        snprintf(err, errlen, "the probes' maps (%zu bytes) or clock: %s", words * 8,
                 mgpu_cu_error_name(r));
        return -1;
    }
    mgpu_drv.cuCtxGetCurrent(&g->context);
    g->ready = true;
    if (!probes.any_maps && probes.started)
        probes.started();
    probes.any_maps = true;
    return 0;
}

static CUresult set_word(CUmodule module, const char *name, uint64_t value)
{
    CUdeviceptr where;
    size_t bytes;
    CUresult r = mgpu_drv.cuModuleGetGlobal(&where, &bytes, module, name);
    if (r == CUDA_SUCCESS && bytes != sizeof value)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemcpyHtoD(where, &value, sizeof value);
    return r;
}

int mgpu_probes_fill_module(CUmodule module, int gpu, char *err, size_t errlen)
{
    if (!probes.on)
        return 0;
    if (gpu < 0 || gpu >= MGPU_MAX_GPUS) {
        snprintf(err, errlen, "no GPU %d", gpu);
        return -1;
    }
    struct gpu_maps *g = &probes.gpus[gpu];
    pthread_mutex_lock(&probes.lock);
    int rc = g->ready ? 0 : make_maps(g, err, errlen);
    pthread_mutex_unlock(&probes.lock);
    if (rc != 0)
        return -1;
    CUresult r = set_word(module, PTX_PROBE_CLOCK_OFFSET, (uint64_t)g->clock.offset_ns);
    if (r == CUDA_SUCCESS)
        r = set_word(module, PTX_PROBE_RUN_START, probes.run_start_ns);
    for (size_t i = 0; i < probes.set.nmaps && r == CUDA_SUCCESS; i++) {
        char name[160];
        snprintf(name, sizeof name, PTX_PROBE_MAP_PREFIX "%s", probes.set.maps[i].name);
        r = set_word(module, name, g->base + probes.map_offset[i] * 8);
    }
    if (r == CUDA_SUCCESS)
        r = mgpu_probe_page_map_fill_module(module, gpu);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "setting the probes' words on GPU %d: %s", gpu,
                 mgpu_cu_error_name(r));
        return -1;
    }
    return 0;
}

void mgpu_probes_module_unprobed(int module, const char *loaded_by, const char *why)
{
    if (!probes.on)
        return;
    pthread_mutex_lock(&probes.lock);
    if (probes.nunprobed < sizeof probes.unprobed / sizeof probes.unprobed[0])
        snprintf(probes.unprobed[probes.nunprobed++], sizeof probes.unprobed[0],
                 "module %d (%s): %.150s", module, loaded_by, why);
    pthread_mutex_unlock(&probes.lock);
}

/* *word = the lower (or higher) of it and value; 0 in *word stands for none yet. */
static void keep_extreme(atomic_uint *word, unsigned value, bool lowest)
{
    unsigned now = atomic_load_explicit(word, memory_order_relaxed);
    while ((now == 0 || (lowest ? value < now : value > now)) &&
           !atomic_compare_exchange_weak_explicit(word, &now, value, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

unsigned mgpu_probes_launch(const char *kernel, unsigned block_threads, unsigned *sample_blocks)
{
    if (!probes.on)
        return 0;
    mgpu_probe_page_map_refresh();
    unsigned sequence = atomic_fetch_add_explicit(&probes.next_sequence, 1, memory_order_relaxed);
    unsigned count = atomic_load_explicit(&probes.nkernels, memory_order_acquire);
    int32_t id = -1;
    for (unsigned k = 0; k < count && id < 0; k++)
        if (strcmp(probes.kernels[k].name, kernel) == 0)
            id = (int32_t)k;
    if (id >= 0) {
        *sample_blocks = probes.kernels[id].sample_blocks;
        keep_extreme(&probes.block_threads_min[id], block_threads, true);
        keep_extreme(&probes.block_threads_max[id], block_threads, false);
    }
    if (sequence < MGPU_PROBE_MAX_LAUNCHES) {
        probes.launch_kernel[sequence] = id;
        probes.launch_host_ns[sequence] = (uint64_t)mgpu_monotonic_ns();
    }
    return sequence;
}

void mgpu_probes_before_slices(void)
{
    if (probes.on)
        mgpu_probe_page_map_refresh();
}

/* GPU g's maps, copied to the host after its work is done; NULL when it
 * has none or they cannot be read. */
static uint64_t *read_maps(int g)
{
    struct gpu_maps *m = &probes.gpus[g];
    if (!m->ready)
        return NULL;
    size_t words = probes.map_offset[probes.set.nmaps];
    uint64_t *data = malloc((words + 1) * sizeof *data);
    if (data == NULL)
        return NULL;
    CUresult r = mgpu_drv_push_context(m->context);
    if (r == CUDA_SUCCESS) {
        /* Every stream's kernels, non-blocking ones too, before the copy. */
        r = mgpu_drv.cuCtxSynchronize();
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuMemcpyDtoHAsync(data, m->base, words * sizeof *data, NULL);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuCtxSynchronize();
        mgpu_drv.cuMemFree(m->base);
        mgpu_drv_pop_context();
    }
    m->ready = false;
    if (r != CUDA_SUCCESS) {
        mgpu_error("probes: GPU %d's maps cannot be read: %s", g, mgpu_cu_error_name(r));
        free(data);
        return NULL;
    }
    return data;
}

/* With --trace: each launch's slice on each GPU, first block start to last
 * block end (from launch-latency's or block-time's maps), and each ring
 * record that starts with a time, on the GPU's track. */
static void add_trace_spans(const struct mgpu_probe_results *r)
{
    if (!mgpu_timing_traced())
        return;
    static char *labels[MGPU_PROBE_MAX_KERNELS];
    const char *first_map = "ll_first", *last_map = "ll_last";
    size_t capacity = mgpu_probe_slice_capacity(r, first_map);
    if (capacity == 0) {
        first_map = "bt_first";
        last_map = "bt_last";
        capacity = mgpu_probe_slice_capacity(r, first_map);
    }
    struct mgpu_probe_slice *slices = malloc((capacity + 1) * sizeof *slices);
    for (int g = 0; g < r->ngpus && slices; g++) {
        size_t n = mgpu_probe_slices(r, first_map, last_map, g, slices);
        for (size_t i = 0; i < n; i++) {
            uint64_t s = slices[i].sequence;
            int32_t k = mgpu_probe_launch_kernel(r, s);
            if (k < 0)
                continue;
            if (labels[k] == NULL) {
                const struct mgpu_probe_kernel *pk = &r->kernels[k];
                size_t len = strlen(pk->pretty ? pk->pretty : pk->name) + 16;
                labels[k] = malloc(len);
                if (labels[k] == NULL)
                    continue;
                snprintf(labels[k], len, "probe: %s", pk->pretty ? pk->pretty : pk->name);
            }
            mgpu_timing_host_span(labels[k], g, (long long)slices[i].first_ns,
                                  (long long)slices[i].last_ns);
        }
        for (size_t i = 0; i < r->set->nmaps; i++) {
            const struct ptx_probe_map *map = &r->set->maps[i];
            uint64_t words;
            const uint64_t *ring = mgpu_probe_results_map(r, map->name, g, &words);
            if (map->kind != PTX_PROBE_RING || ring == NULL)
                continue;
            uint64_t kept = mgpu_probe_ring_records(map, ring);
            uint64_t per = ptx_probe_record_words(map);
            for (uint64_t e = 0; e < kept; e++) {
                uint64_t t = ring[PTX_PROBE_RING_HEADER_WORDS + e * per];
                /* a time of this run, on the host's clock */
                if (t >= r->run_start_ns && t < (uint64_t)mgpu_monotonic_ns())
                    mgpu_timing_host_span(map->name, g, (long long)t, (long long)t);
            }
        }
    }
    free(slices);
}

static void (*results_reader)(const struct mgpu_probe_results *r, FILE *out);

void mgpu_probes_set_reader(void (*reader)(const struct mgpu_probe_results *r, FILE *out))
{
    results_reader = reader;
}

bool mgpu_probes_declare_map(const char *name)
{
    for (size_t i = 0; probes.on && i < probes.set.nmaps; i++)
        if (strcmp(probes.set.maps[i].name, name) == 0)
            return true;
    return false;
}

void mgpu_probes_finish(void)
{
    if (!probes.on)
        return;
    probes.on = false; /* once */
    const struct mgpu_gpu_entries *entries = mgpu_run_gpus();
    for (unsigned k = 0; k < atomic_load(&probes.nkernels); k++) {
        probes.kernels[k].block_threads_min = atomic_load(&probes.block_threads_min[k]);
        probes.kernels[k].block_threads_max = atomic_load(&probes.block_threads_max[k]);
    }
    struct mgpu_probe_results r = {
        .set = &probes.set,
        .ngpus = entries ? entries->count : 0,
        .gpu_devices = entries ? entries->device : NULL,
        .map_offset = probes.map_offset,
        .kernels = probes.kernels,
        .nkernels = atomic_load(&probes.nkernels),
        .launch_host_ns = probes.launch_host_ns,
        .launch_kernel = probes.launch_kernel,
        .run_start_ns = probes.run_start_ns,
        .unprobed = probes.unprobed,
        .nunprobed = probes.nunprobed,
    };
    uint64_t given = atomic_load(&probes.next_sequence) - 1;
    r.launches = given;
    r.launches_kept = given < MGPU_PROBE_MAX_LAUNCHES ? given : MGPU_PROBE_MAX_LAUNCHES - 1;
    for (int g = 0; g < r.ngpus; g++) {
        r.clock_error_ns[g] = (int64_t)probes.gpus[g].clock.error_ns;
        r.cycles_per_ns[g] = probes.gpus[g].clock.cycles_per_ns;
        r.timer_step_ns[g] = probes.gpus[g].clock.timer_step_ns;
        r.maps[g] = read_maps(g);
    }
    mgpu_probe_page_map_release();
    if (probes.kernels_full)
        mgpu_warn("probes: more than %d kernels probed; the last id stands for the rest",
                  MGPU_PROBE_MAX_KERNELS);
    mgpu_probe_tables_print(&r, stderr);
    if (results_reader != NULL)
        results_reader(&r, stderr);
    add_trace_spans(&r);
    if (probes.out[0])
        mgpu_probe_jsonl_write(&r, probes.out);
    for (int g = 0; g < r.ngpus; g++)
        free(r.maps[g]);
}
