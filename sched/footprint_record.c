/* Owns the footprint soundness check's predictions and its exit report
 * (footprint_record.h). */
#include "sched/footprint_record.h"

#include "base/log.h"
#include "memory/memory_pool.h"
#include "probes/probe_runtime.h"
#include "probes/probe_tables.h"
#include "ptx/ptx_footprint_check.h"
#include "sched/launch_params.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* As probes/tools/footprint-check.cu lays out its maps. */
#define FC_LAUNCHES 4096
#define FC_GPUS 8
#define FC_PARAMS 16
#define FC_BIAS (1ull << 62)

struct slice_prediction {
    int gpu;
    struct mgpu_fp_param_prediction pred[FC_PARAMS];
};

struct launch_prediction {
    char *kernel;
    size_t nparams;
    /* per parameter, its pool buffer's bounds as offsets from its pointer */
    long long buffer_lo[FC_PARAMS], buffer_hi[FC_PARAMS];
    int nslices;
    struct slice_prediction slices[];
};

static atomic_bool recording;
static _Atomic(struct launch_prediction *) launches[FC_LAUNCHES];
static atomic_ulong skipped; /* split launches not recorded: cut by iterations, past the table */

static void report(const struct mgpu_probe_results *r, FILE *out);

void mgpu_footprint_record_start(void)
{
    if (!mgpu_probes_declare_map("fc_lowest"))
        return;
    atomic_store(&recording, true);
    mgpu_probes_set_reader(report);
}

bool mgpu_footprint_recording(void)
{
    return atomic_load_explicit(&recording, memory_order_relaxed);
}

void mgpu_footprint_record(const struct mgpu_gpu_kernels *k, void *const *params,
                           const void *buffer, const unsigned grid[3], const unsigned block[3],
                           unsigned sequence, const struct mgpu_grid_slice *slices, int nslices)
{
    int dim = mgpu_grid_split_dim(grid);
    bool recordable = mgpu_footprint_recording() && k->footprint != NULL && sequence > 0 &&
                      sequence < FC_LAUNCHES && dim >= 0 && nslices > 0;
    for (int s = 0; recordable && s < nslices; s++)
        recordable = !slices[s].iterations && slices[s].gpu >= 0 && slices[s].gpu < FC_GPUS;
    if (!recordable) {
        if (mgpu_footprint_recording())
            atomic_fetch_add(&skipped, 1);
        return;
    }
    size_t nparams = k->nparams < FC_PARAMS ? k->nparams : FC_PARAMS;
    void *values[64];
    struct mgpu_fp_launch l;
    struct launch_prediction *p =
        calloc(1, sizeof *p + (size_t)nslices * sizeof(struct slice_prediction));
    if (p == NULL || (p->kernel = strdup(k->name)) == NULL ||
        !mgpu_launch_footprint(k, params, buffer, grid, block, values, 64, &l)) {
        if (p != NULL)
            free(p->kernel);
        free(p);
        atomic_fetch_add(&skipped, 1);
        return;
    }
    p->nparams = nparams;
    p->nslices = nslices;
    for (size_t i = 0; i < nparams; i++) {
        CUdeviceptr pointer;
        struct mgpu_pool_block b;
        p->buffer_lo[i] = LLONG_MIN / 4; /* outside the pool: no bound known */
        p->buffer_hi[i] = LLONG_MAX / 4;
        if (mgpu_launch_param_pointer(k, (unsigned)i, params, buffer, &pointer) &&
            mgpu_pool_find(pointer, &b)) {
            p->buffer_lo[i] = (long long)b.start - (long long)pointer;
            p->buffer_hi[i] = (long long)(b.start + b.bytes) - (long long)pointer;
        }
    }
    for (int s = 0; s < nslices; s++) {
        struct slice_prediction *sp = &p->slices[s];
        sp->gpu = slices[s].gpu;
        mgpu_fp_predict_slice(k->footprint, &l, dim, slices[s].first[dim],
                              slices[s].first[dim] + slices[s].dims[dim], nparams, sp->pred);
    }
    struct launch_prediction *old = atomic_exchange(&launches[sequence], p);
    if (old != NULL) {
        free(old->kernel);
        free(old);
    }
}

/* What the probe saw slice `gpu` of launch `sequence` touch through
 * parameter p, direction w, over every GPU's maps. */
static struct mgpu_fp_touched touched(const struct mgpu_probe_results *r, unsigned sequence,
                                      int gpu, size_t p, int w)
{
    uint64_t low = UINT64_MAX, high = 0;
    uint64_t index = (((uint64_t)sequence * FC_GPUS + (uint64_t)gpu) * FC_PARAMS + p) * 2 + w;
    for (int g = 0; g < r->ngpus; g++) {
        uint64_t nlow = 0, nhigh = 0;
        const uint64_t *lows = mgpu_probe_results_map(r, "fc_lowest", g, &nlow);
        const uint64_t *highs = mgpu_probe_results_map(r, "fc_highest", g, &nhigh);
        if (lows == NULL || highs == NULL || index >= nlow || index >= nhigh)
            continue;
        if (lows[index] < low)
            low = lows[index];
        if (highs[index] > high)
            high = highs[index];
    }
    if (low == UINT64_MAX || high == 0)
        return (struct mgpu_fp_touched){.any = false};
    return (struct mgpu_fp_touched){true, (long long)(low - FC_BIAS), (long long)(high - FC_BIAS)};
}

struct kernel_verdict {
    const char *kernel;
    unsigned long launches, slices;
    struct mgpu_fp_verdict v;
};

static void report(const struct mgpu_probe_results *r, FILE *out)
{
    enum { MAX_KERNELS = 256 };
    struct kernel_verdict *kv = calloc(MAX_KERNELS, sizeof *kv);
    if (kv == NULL)
        return;
    size_t nk = 0;
    unsigned long launches_checked = 0, slices_checked = 0, escapes = 0;
    for (unsigned seq = 1; seq < FC_LAUNCHES; seq++) {
        struct launch_prediction *p = atomic_load(&launches[seq]);
        if (p == NULL)
            continue;
        size_t i = 0;
        while (i < nk && strcmp(kv[i].kernel, p->kernel) != 0)
            i++;
        if (i == nk && nk < MAX_KERNELS)
            kv[nk++].kernel = p->kernel;
        if (i == MAX_KERNELS)
            i = MAX_KERNELS - 1;
        kv[i].launches++;
        launches_checked++;
        for (int s = 0; s < p->nslices; s++) {
            const struct slice_prediction *sp = &p->slices[s];
            struct mgpu_fp_param_touch touch[FC_PARAMS];
            for (size_t q = 0; q < p->nparams; q++)
                touch[q] = (struct mgpu_fp_param_touch){
                    .read = touched(r, seq, sp->gpu, q, 0),
                    .written = touched(r, seq, sp->gpu, q, 1),
                    .buffer_lo = p->buffer_lo[q],
                    .buffer_hi = p->buffer_hi[q],
                };
            unsigned long before = kv[i].v.escapes;
            mgpu_fp_compare(sp->pred, touch, p->nparams, &kv[i].v);
            escapes += kv[i].v.escapes - before;
            kv[i].slices++;
            slices_checked++;
        }
    }
    fprintf(out,
            "footprint-check: %lu split launches checked (%lu slices), %lu escape%s; %lu "
            "split launches not checked (cut by iterations, past the first %d, or on entries "
            "past the %dth)\n",
            launches_checked, slices_checked, escapes, escapes == 1 ? "" : "s",
            atomic_load(&skipped), FC_LAUNCHES - 1, FC_GPUS);
    for (size_t i = 0; i < nk; i++) {
        char unbounded[96] = "";
        if (kv[i].v.unbounded > 0)
            snprintf(unbounded, sizeof unbounded,
                     "; %lu through a struct's other pointers, not bounded", kv[i].v.unbounded);
        fprintf(out,
                "  %.60s: %lu launches, %lu escape%s; predicted %.0f bytes for %.0f touched "
                "(tightness %.2f)%s\n",
                kv[i].kernel, kv[i].launches, kv[i].v.escapes, kv[i].v.escapes == 1 ? "" : "s",
                kv[i].v.predicted_bytes, kv[i].v.touched_bytes,
                kv[i].v.touched_bytes > 0 ? kv[i].v.predicted_bytes / kv[i].v.touched_bytes : 0.0,
                unbounded);
    }
    free(kv);
}
