/* Owns the records of the program's modules, libraries and kernel handles,
 * building their per-GPU rewritten modules when the program loads them, and turning a launch of the
 * program's kernel into a launch from its rewritten module (see program_modules.h).
 * All driver calls here go to the real driver. */
#include "modules/program_modules.h"

#include "base/startup_times.h"
#include "base/detached_thread.h"

#include "partition/gpu_contexts.h"
#include "base/log.h"
#include "modules/gpu_modules.h"
#include "base/monotonic_clock.h"
#include "base/pointer_hash.h"
#include "base/callback_thread.h"
#include "mirror/private_reductions.h"
#include "probes/probe_runtime.h"
#include "modules/program_image.h"
#include "base/real_driver.h"
#include "mirror/replicas.h"
#include "base/config.h"
#include "partition/thread_binding.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RECORDED_ATTRIBUTES 8

struct kernel_entry {
    struct kernel_entry *next; /* in its module's list */
    char *name;
    atomic_bool resolved; /* fns[0], grid_offset and nparams are set */
    int resolved_gpus;    /* fns[0 .. resolved_gpus) are set; under the module's lock */
    atomic_bool all_gpus; /* resolved_gpus covers every GPU */
    atomic_bool warned;   /* about a launch that could not go to the rewritten module */
    bool unresolvable;
    CUfunction fns[MGPU_MAX_GPUS]; /* in each GPU's rewritten module; [0] the home GPU's */
    size_t grid_offset;
    unsigned nparams;
    size_t *param_offsets, *param_sizes; /* nparams each */
    unsigned *param_use;                 /* enum mgpu_param_use each; NULL when not analysed */
    unsigned *param_reduction;           /* privatisable reduction codes; with param_use */
    unsigned char *param_scatter;        /* bytes over a link per byte used; with param_use */
    unsigned unsplittable;               /* enum mgpu_unsplittable */
    unsigned notes;                      /* enum mgpu_kernel_note */
    int stride_bound_param;              /* of the grid-stride loop; -1: none */
    const struct mgpu_kernel_footprint *footprint; /* the analysis's, or NULL */
    struct {
        CUfunction_attribute attrib;
        int value;
    } attrs[MAX_RECORDED_ATTRIBUTES];
    int nattrs;
    bool has_cache_config;
    CUfunc_cache cache_config;
};

enum rewritten_state { REWRITTEN_UNTRIED, REWRITTEN_READY, REWRITTEN_NONE };

/* The state of a module's copies on the GPUs other than the home one. */
enum { OTHERS_NONE, OTHERS_LOADING, OTHERS_READY, OTHERS_FAILED };

struct program_module {
    int id; /* from 1, in load order */
    const char *loaded_by;
    bool is_library;
    bool unloaded;
    void *handle;
    CUcontext load_context; /* where a CUmodule lives; NULL for a library */
    void *image; /* the program's image, copied; freed once the rewritten modules are built */
    size_t image_size;
    pthread_mutex_t lock; /* building, resolving kernels, refreshing constants */
    _Atomic int state;    /* enum rewritten_state */
    char why_none[200];
    CUcontext home_context;
    struct mgpu_gpu_modules rewritten;
    struct kernel_entry *kernels;
    _Atomic int others;          /* the copies on the other GPUs: OTHERS_NONE ... OTHERS_FAILED */
    char why_no_others[200];     /* when they failed */
    atomic_bool constants_stale; /* the home GPU's rewritten module lags the program's constants */
    double build_seconds;
    int rewritten_gpus; /* kept for the report after an unload */
    atomic_ulong launches;
};

/* The handle map: CUmodule, CUlibrary, CUfunction and CUkernel values to
 * what they are. Open addressing; a removed slot keeps its key with no
 * target, so that probing goes on past it. */
struct handle_slot {
    const void *handle;
    struct program_module *module;
    struct kernel_entry *kernel; /* NULL for a module or library handle */
};

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct handle_slot *slots;
static size_t slot_capacity, slot_used;
static struct program_module **modules; /* the loaded ones, in load order */
static size_t module_count, module_capacity;
static int modules_loaded; /* ids: from 1, never reused */

/* The report's lines of unloaded modules, kept in place of their records,
 * which go with the module: a program that loads and unloads modules in a
 * loop (JIT-compiled kernels) must not grow mgpu. The first
 * REPORTED_UNLOADED, then a count. Under table_lock. */
#define REPORTED_UNLOADED 63 /* and a line for the rest: the report shows 64 */
struct unloaded_line {
    int id;
    char line[160];
};
static struct unloaded_line unloaded_lines[REPORTED_UNLOADED];
static size_t unloaded_line_count;
static unsigned long unloaded_more, unloaded_more_launches;

/* Home-context address ranges of the __constant__ variables of modules
 * with rewritten modules: writes into them make the rewritten modules stale. */
struct constant_range {
    CUdeviceptr lo, hi;
    struct program_module *module;
};
static struct constant_range *constant_ranges;
static size_t constant_range_count;
static atomic_size_t constant_ranges_live;

static struct handle_slot *find_slot(const void *handle)
{
    if (slot_capacity == 0)
        return NULL;
    for (size_t i = mgpu_pointer_hash(handle) & (slot_capacity - 1);;
         i = (i + 1) & (slot_capacity - 1)) {
        if (slots[i].handle == handle)
            return &slots[i];
        if (slots[i].handle == NULL)
            return NULL;
    }
}

/* Under the write lock. */
static int put_slot(const void *handle, struct program_module *m, struct kernel_entry *k)
{
    struct handle_slot *s = find_slot(handle);
    if (s != NULL) {
        s->module = m;
        s->kernel = k;
        return 0;
    }
    if ((slot_used + 1) * 2 > slot_capacity) {
        /* Sized for the live handles: the removed ones (unloaded modules'
         * keys) are dropped here, so that loading and unloading in a loop
         * does not grow the table. */
        size_t live = 0;
        for (size_t i = 0; i < slot_capacity; i++)
            live += slots[i].handle != NULL && slots[i].module != NULL;
        size_t cap = 256;
        while (cap < (live + 1) * 4)
            cap *= 2;
        struct handle_slot *bigger = calloc(cap, sizeof *bigger);
        if (bigger == NULL)
            return -1;
        struct handle_slot *old = slots;
        size_t old_cap = slot_capacity;
        slots = bigger;
        slot_capacity = cap;
        slot_used = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].handle != NULL && old[i].module != NULL) {
                size_t j = mgpu_pointer_hash(old[i].handle) & (cap - 1);
                while (slots[j].handle != NULL)
                    j = (j + 1) & (cap - 1);
                slots[j] = old[i];
                slot_used++;
            }
        free(old);
    }
    size_t i = mgpu_pointer_hash(handle) & (slot_capacity - 1);
    while (slots[i].handle != NULL)
        i = (i + 1) & (slot_capacity - 1);
    slots[i] = (struct handle_slot){handle, m, k};
    slot_used++;
    return 0;
}

static bool lookup(const void *handle, struct program_module **m, struct kernel_entry **k)
{
    pthread_rwlock_rdlock(&table_lock);
    struct handle_slot *s = find_slot(handle);
    bool found = s != NULL && s->module != NULL;
    if (found) {
        *m = s->module;
        *k = s->kernel;
    }
    pthread_rwlock_unlock(&table_lock);
    return found;
}

bool mgpu_program_modules_wanted(void)
{
    static _Atomic int wanted = -1;
    int w = atomic_load_explicit(&wanted, memory_order_relaxed);
    if (w >= 0)
        return w;
    const struct mgpu_gpu_entries *e = NULL;
    if ((mgpu_cfg.split != MGPU_SPLIT_NEVER || mgpu_probes_on()) && (e = mgpu_run_gpus()) == NULL)
        return false; /* not initialised yet: ask again later */
    /* Probes run from the rewritten modules, so one GPU has them too. */
    w = e != NULL && (e->count > 1 || mgpu_probes_on());
    atomic_store(&wanted, w);
    return w;
}

static bool rewritten_for(struct program_module *m, CUcontext ctx);
static void others_settled(struct program_module *m);
static CUcontext current_context(void);

void mgpu_program_module_loaded(void *handle, bool is_library, const void *image, const char *path,
                                const char *loaded_by, const char *refused)
{
    if (handle == NULL || !mgpu_program_modules_wanted())
        return;
    struct program_module *m = calloc(1, sizeof *m);
    if (m == NULL)
        return;
    m->handle = handle;
    m->is_library = is_library;
    m->loaded_by = loaded_by;
    pthread_mutex_init(&m->lock, NULL);
    if (!is_library)
        mgpu_drv.cuCtxGetCurrent(&m->load_context);
    char err[200];
    int rc = -1;
    if (refused != NULL)
        snprintf(err, sizeof err, "%s", refused);
    else if (image != NULL)
        rc = mgpu_program_image_copy(image, &m->image, &m->image_size, err, sizeof err);
    else
        rc = mgpu_program_image_read_file(path, &m->image, &m->image_size, err, sizeof err);
    if (rc != 0) {
        snprintf(m->why_none, sizeof m->why_none, "%s", err);
        m->state = REWRITTEN_NONE;
    }
    pthread_rwlock_wrlock(&table_lock);
    if (module_count == module_capacity) {
        size_t cap = module_capacity ? module_capacity * 2 : 16;
        struct program_module **bigger = realloc(modules, cap * sizeof *bigger);
        if (bigger != NULL) {
            modules = bigger;
            module_capacity = cap;
        }
    }
    bool kept = module_count < module_capacity && put_slot(handle, m, NULL) == 0;
    if (kept) {
        modules[module_count++] = m;
        m->id = ++modules_loaded;
    }
    pthread_rwlock_unlock(&table_lock);
    if (!kept) {
        free(m->image);
        free(m);
        return;
    }
    mgpu_debug("module %d: %s, %zu-byte image%s%s", m->id, loaded_by, m->image_size,
               m->state == REWRITTEN_NONE ? ": " : "",
               m->state == REWRITTEN_NONE ? m->why_none : "");
    /* Built now, inside the program's own load, not at the module's first
     * launch: the driver's cuModuleLoadData waits until every stream of the
     * context is empty (on an H100, a non-blocking stream held in a host
     * function kept it waiting, lazy or eager loading alike), as the
     * program's load has just done. At a launch that wait is new to the
     * program, and a stream whose host function waits for the launching
     * thread never empties. A library loaded with no context current (none
     * to load its module into) is built at its first use. */
    CUcontext ctx = is_library ? current_context() : m->load_context;
    if (ctx != NULL)
        rewritten_for(m, ctx);
}

void mgpu_program_module_alias(void *module, void *library)
{
    struct program_module *m;
    struct kernel_entry *k;
    if (module == NULL || !lookup(library, &m, &k) || k != NULL)
        return;
    pthread_rwlock_wrlock(&table_lock);
    put_slot(module, m, NULL);
    pthread_rwlock_unlock(&table_lock);
}

static void drop_constant_ranges(struct program_module *m)
{
    size_t kept = 0;
    for (size_t i = 0; i < constant_range_count; i++)
        if (constant_ranges[i].module != m)
            constant_ranges[kept++] = constant_ranges[i];
    constant_range_count = kept;
    atomic_store(&constant_ranges_live, kept);
}

/* Module m's line in the report. */
static void describe_module(struct program_module *m, char line[160])
{
    int state = atomic_load(&m->state);
    unsigned long launches = atomic_load(&m->launches);
    if (state == REWRITTEN_READY)
        snprintf(line, 160,
                 "module %d (%s): rewritten for %d GPUs, built in %.2f s; %lu launch%s from them",
                 m->id, m->loaded_by, m->rewritten_gpus, m->build_seconds, launches,
                 launches == 1 ? "" : "es");
    else if (state == REWRITTEN_NONE)
        snprintf(line, 160, "module %d (%s): runs as loaded: %.100s", m->id, m->loaded_by,
                 m->why_none);
    else
        snprintf(line, 160, "module %d (%s): not used", m->id, m->loaded_by);
}

/* An unloaded module's record goes, its report line kept (unloaded_lines);
 * no handle maps to it any more. */
static void forget_module(struct program_module *m)
{
    pthread_rwlock_wrlock(&table_lock);
    for (size_t i = 0; i < module_count; i++)
        if (modules[i] == m) {
            memmove(&modules[i], &modules[i + 1], (module_count - i - 1) * sizeof *modules);
            module_count--;
            break;
        }
    if (unloaded_line_count < REPORTED_UNLOADED) {
        struct unloaded_line *u = &unloaded_lines[unloaded_line_count++];
        u->id = m->id;
        describe_module(m, u->line);
        /* kept in id order for the report */
        for (size_t i = unloaded_line_count - 1; i > 0 && unloaded_lines[i - 1].id > u->id; i--) {
            struct unloaded_line t = unloaded_lines[i];
            unloaded_lines[i] = unloaded_lines[i - 1];
            unloaded_lines[i - 1] = t;
            u = &unloaded_lines[i - 1];
        }
    } else {
        unloaded_more++;
        unloaded_more_launches += atomic_load(&m->launches);
    }
    pthread_rwlock_unlock(&table_lock);
    while (m->kernels != NULL) {
        struct kernel_entry *k = m->kernels;
        m->kernels = k->next;
        free(k->name);
        free(k->param_offsets);
        free(k->param_sizes);
        free(k->param_use);
        free(k->param_reduction);
        free(k->param_scatter);
        free(k);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void mgpu_program_module_unloading(void *handle)
{
    struct program_module *m;
    struct kernel_entry *k;
    if (!lookup(handle, &m, &k) || k != NULL)
        return;
    pthread_rwlock_wrlock(&table_lock);
    for (size_t i = 0; i < slot_capacity; i++)
        if (slots[i].module == m)
            slots[i].module = NULL, slots[i].kernel = NULL;
    drop_constant_ranges(m);
    pthread_rwlock_unlock(&table_lock);
    /* Its copies on the other GPUs may be loading: their thread is done
     * before the module goes (not in a host callback, where it may wait
     * for this very callback; the module stays loaded then, below). */
    if (!mgpu_on_callback_thread())
        others_settled(m);
    pthread_mutex_lock(&m->lock);
    /* Unloaded in a host callback (the CUDA runtime's exit handlers do
     * that when the program exits in one): a wait there would wait for
     * the callback itself, so the rewritten modules stay loaded until their contexts
     * go, at the latest with the process. */
    if (m->state == REWRITTEN_READY && !mgpu_on_callback_thread() &&
        atomic_load(&m->others) != OTHERS_LOADING) {
        mgpu_gpu_modules_wait_idle(&m->rewritten);
        mgpu_gpu_modules_unload(&m->rewritten);
    }
    free(m->image);
    m->image = NULL;
    m->unloaded = true;
    if (m->state == REWRITTEN_UNTRIED) {
        m->state = REWRITTEN_NONE;
        snprintf(m->why_none, sizeof m->why_none, "unloaded before any use");
    }
    pthread_mutex_unlock(&m->lock);
    forget_module(m);
}

/* The module's entry for kernel `name`, made on first sight. */
static struct kernel_entry *kernel_entry(struct program_module *m, const char *name)
{
    pthread_mutex_lock(&m->lock);
    struct kernel_entry *k = m->kernels;
    while (k != NULL && strcmp(k->name, name) != 0)
        k = k->next;
    if (k == NULL && (k = calloc(1, sizeof *k)) != NULL) {
        k->name = strdup(name);
        if (k->name == NULL) {
            free(k);
            k = NULL;
        } else {
            k->next = m->kernels;
            m->kernels = k;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return k;
}

void mgpu_program_kernel_found(const void *handle, const void *owner, const char *name)
{
    struct program_module *m;
    struct kernel_entry *k;
    if (handle == NULL || name == NULL || !lookup(owner, &m, &k) || k != NULL)
        return;
    if ((k = kernel_entry(m, name)) == NULL)
        return;
    pthread_rwlock_wrlock(&table_lock);
    put_slot(handle, m, k);
    pthread_rwlock_unlock(&table_lock);
}

void mgpu_program_kernel_alias(const void *handle, const void *other_handle)
{
    struct program_module *m;
    struct kernel_entry *k;
    if (handle == NULL || !lookup(other_handle, &m, &k) || k == NULL)
        return;
    pthread_rwlock_wrlock(&table_lock);
    put_slot(handle, m, k);
    pthread_rwlock_unlock(&table_lock);
}

/* A handle mgpu has not seen made (cuModuleEnumerateFunctions, or a
 * library's module asked for functions before mgpu knew it): found
 * through the driver, remembered either way. */
static bool lookup_or_discover(const void *handle, struct program_module **m,
                               struct kernel_entry **k)
{
    if (lookup(handle, m, k))
        return *k != NULL;
    void *owner = NULL;
    const char *name = NULL;
    CUmodule module;
    CUlibrary library;
    if (mgpu_drv.cuFuncGetModule != NULL &&
        mgpu_drv.cuFuncGetModule(&module, (CUfunction)handle) == CUDA_SUCCESS &&
        mgpu_drv.cuFuncGetName(&name, (CUfunction)handle) == CUDA_SUCCESS)
        owner = module;
    else if (mgpu_drv.cuKernelGetLibrary != NULL &&
             mgpu_drv.cuKernelGetLibrary(&library, (CUkernel)handle) == CUDA_SUCCESS &&
             mgpu_drv.cuKernelGetName(&name, (CUkernel)handle) == CUDA_SUCCESS)
        owner = library;
    if (owner != NULL && name != NULL)
        mgpu_program_kernel_found(handle, owner, name);
    if (lookup(handle, m, k))
        return *k != NULL;
    /* Not the program's module we know of: remember that, to ask once. */
    pthread_rwlock_wrlock(&table_lock);
    if (find_slot(handle) == NULL)
        put_slot(handle, NULL, NULL);
    pthread_rwlock_unlock(&table_lock);
    return false;
}

static CUresult with_context(CUcontext ctx, CUresult (*fn)(struct program_module *, void *),
                             struct program_module *m, void *arg)
{
    CUresult r = mgpu_drv.cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = fn(m, arg);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return r;
}

static CUresult home_module_of_library(struct program_module *m, void *out)
{
    return mgpu_drv.cuLibraryGetModule(out, m->handle);
}

static unsigned device_arch(void)
{
    CUdevice dev;
    return mgpu_drv.cuDeviceGet(&dev, 0) == CUDA_SUCCESS ? mgpu_device_arch(dev) : 0;
}

static void add_constant_ranges(struct program_module *m)
{
    const struct ptx_globals_plan *plan = &m->rewritten.globals;
    pthread_rwlock_wrlock(&table_lock);
    struct constant_range *bigger =
        realloc(constant_ranges, (constant_range_count + plan->nconstants + 1) * sizeof *bigger);
    if (bigger != NULL) {
        constant_ranges = bigger;
        for (size_t i = 0; i < plan->nconstants; i++) {
            CUdeviceptr at;
            size_t bytes;
            if (mgpu_drv.cuModuleGetGlobal(&at, &bytes, m->rewritten.home, plan->constants[i]) ==
                CUDA_SUCCESS)
                constant_ranges[constant_range_count++] =
                    (struct constant_range){at, at + bytes, m};
        }
    }
    atomic_store(&constant_ranges_live, constant_range_count);
    pthread_rwlock_unlock(&table_lock);
}

/* With mirrors on, a module with a privatisable reduction has mgpu's
 * combine kernels loaded in its home context now, inside the program's
 * own module load, rather than in a launch (private_reductions.h). */
static void prepare_reductions(const struct program_module *m, CUcontext ctx)
{
    if (!mgpu_replicas_configured())
        return;
    const struct mgpu_ptx_analysis *a = &m->rewritten.analysis;
    for (size_t i = 0; i < a->nkernels; i++)
        for (size_t p = 0; p < a->kernels[i].nparams; p++)
            if (a->kernels[i].params[p].reduction != 0) {
                mgpu_private_reductions_prepare(ctx);
                return;
            }
}

/* Under m->lock, once: the rewritten modules for the home context `ctx`. */
static void build_rewritten(struct program_module *m, CUcontext ctx)
{
    char why[200] = "";
    CUcontext contexts[MGPU_MAX_GPUS];
    int ngpus = 0;
    char *ptx = NULL;
    size_t ptx_size = 0;
    CUmodule home = m->is_library ? NULL : m->handle;
    double start = (double)mgpu_monotonic_ns() * 1e-9;
    if (mgpu_gpu_home_check(ctx, &ngpus, why, sizeof why) != 0)
        goto none;
    contexts[0] = ctx;
    if (m->is_library) {
        CUresult r = with_context(ctx, home_module_of_library, m, &home);
        if (r != CUDA_SUCCESS) {
            snprintf(why, sizeof why, "cuLibraryGetModule: %s", mgpu_cu_error_name(r));
            goto none;
        }
    }
    unsigned arch = device_arch();
    if (mgpu_program_image_ptx(m->image, m->image_size, arch, &ptx, &ptx_size, why, sizeof why) !=
        0)
        goto none;
    mgpu_info("module %d (%s): rewriting %zu bytes of PTX for %d GPUs", m->id, m->loaded_by,
              ptx_size, ngpus);
    /* The GPU workers of the split launches to come bind near their GPUs
     * once the machine's topology is in: it loads meanwhile, off the
     * program's way (here, after main has started: see thread_binding.h). */
    if (ngpus > 1)
        mgpu_thread_binding_prepare();
    /* Where another entry stands on the home device, every copy is loaded
     * now, in the program's own load call: a copy loaded later in the
     * program's context waits for all of its streams, and the program's
     * thread may be what they wait for (a host function that waits for
     * it: tests/gpu/exit_paths held the driver so under --gpus 0x4). */
    int load_now = 1;
    const struct mgpu_gpu_entries *entries = mgpu_run_gpus();
    for (int g = 1; entries != NULL && g < entries->count && load_now == 1; g++)
        if (entries->device[g] == 0)
            load_now = ngpus;
    if (load_now > 1 && mgpu_gpu_contexts(ctx, contexts, &ngpus, why, sizeof why) != 0)
        goto none;
    struct mgpu_gpu_module_probes probes = {mgpu_probes_inject(), mgpu_probes_fill_module};
    if (mgpu_gpu_modules_load_probed(&m->rewritten, ptx, ptx_size, home, ngpus, contexts, load_now,
                                     probes.inject ? &probes : NULL, why, sizeof why) != 0)
        goto none;
    if (load_now == ngpus)
        atomic_store_explicit(&m->others, OTHERS_READY, memory_order_release);
    free(ptx);
    free(m->image);
    m->image = NULL;
    m->home_context = ctx;
    m->build_seconds = (double)mgpu_monotonic_ns() * 1e-9 - start;
    mgpu_startup_add(MGPU_STARTUP_MODULES, (long long)(m->build_seconds * 1e9));
    m->rewritten_gpus = ngpus;
    add_constant_ranges(m);
    prepare_reductions(m, ctx);
    mgpu_info("module %d (%s): rewritten for %d GPUs, built in %.2f s", m->id, m->loaded_by, ngpus,
              m->build_seconds);
    /* The other GPUs' contexts, made meanwhile off the program's way, for
     * this module's copies there when a launch first leaves the home GPU. */
    if (load_now < ngpus)
        mgpu_gpu_contexts_warm(ctx);
    atomic_store(&m->state, REWRITTEN_READY);
    return;
none:
    free(ptx);
    free(m->image);
    m->image = NULL;
    snprintf(m->why_none, sizeof m->why_none, "%s", why);
    mgpu_info("module %d (%s): runs as the program loaded it: %s", m->id, m->loaded_by, why);
    mgpu_probes_module_unprobed(m->id, m->loaded_by, why);
    atomic_store(&m->state, REWRITTEN_NONE);
}

/* The rewritten modules for a use in context `ctx`: true when they exist and are for
 * that context. */
static bool rewritten_for(struct program_module *m, CUcontext ctx)
{
    if (atomic_load_explicit(&m->state, memory_order_acquire) == REWRITTEN_UNTRIED) {
        pthread_mutex_lock(&m->lock);
        if (m->state == REWRITTEN_UNTRIED && !m->unloaded)
            build_rewritten(m, m->is_library ? ctx : m->load_context);
        pthread_mutex_unlock(&m->lock);
    }
    return atomic_load_explicit(&m->state, memory_order_acquire) == REWRITTEN_READY &&
           m->home_context == ctx;
}

/* Under m->lock: the attributes the program set, on every GPU's rewritten module. */
static void apply_attributes(const struct program_module *m, const struct kernel_entry *k)
{
    for (int g = 0; g < k->resolved_gpus; g++) {
        bool pushed = g > 0 && mgpu_drv.cuCtxPushCurrent(m->rewritten.contexts[g]) == CUDA_SUCCESS;
        for (int i = 0; i < k->nattrs; i++)
            if (mgpu_drv.cuFuncSetAttribute(k->fns[g], k->attrs[i].attrib, k->attrs[i].value) !=
                CUDA_SUCCESS)
                mgpu_warn("kernel %s: its rewritten module on GPU %d refuses attribute %d = %d",
                          k->name, g, (int)k->attrs[i].attrib, k->attrs[i].value);
        if (k->has_cache_config)
            mgpu_drv.cuFuncSetCacheConfig(k->fns[g], k->cache_config);
        if (pushed) {
            CUcontext popped;
            mgpu_drv.cuCtxPopCurrent(&popped);
        }
    }
}

/* Under m->lock: where each of the program's parameters goes in the
 * parameter buffer, and what the analysis says of the kernel. */
static bool describe_parameters(struct program_module *m, struct kernel_entry *k)
{
    unsigned n = k->nparams;
    k->param_offsets = calloc(n + 1, sizeof *k->param_offsets);
    k->param_sizes = calloc(n + 1, sizeof *k->param_sizes);
    if (k->param_offsets == NULL || k->param_sizes == NULL)
        return false;
    for (unsigned i = 0; i < n; i++)
        if (mgpu_drv.cuFuncGetParamInfo(k->fns[0], i, &k->param_offsets[i], &k->param_sizes[i]) !=
            CUDA_SUCCESS)
            return false;
    k->unsplittable = MGPU_WHY_UNPARSED;
    k->stride_bound_param = -1;
    const struct mgpu_ptx_analysis *a = &m->rewritten.analysis;
    for (size_t i = 0; i < a->nkernels; i++) {
        const struct mgpu_kernel_info *info = &a->kernels[i];
        if (strcmp(info->name, k->name) != 0)
            continue;
        k->unsplittable = info->why;
        k->notes = info->notes;
        k->footprint = info->nparams == n ? info->footprint : NULL;
        if (info->stride_bound_param >= 0 && (unsigned)info->stride_bound_param < n)
            k->stride_bound_param = info->stride_bound_param;
        if (info->nparams != n)
            break;
        unsigned *use = calloc(n + 1, sizeof *use), *reduction = calloc(n + 1, sizeof *reduction);
        unsigned char *scatter = calloc(n + 1, 1);
        if (use == NULL || reduction == NULL || scatter == NULL) {
            free(use);
            free(reduction);
            free(scatter);
            break;
        }
        for (unsigned p = 0; p < n; p++) {
            use[p] = info->params[p].use;
            reduction[p] = info->params[p].reduction;
            scatter[p] = info->params[p].scatter;
        }
        k->param_use = use;
        k->param_reduction = reduction;
        k->param_scatter = scatter;
        break;
    }
    return true;
}

/* The kernel in every GPU's rewritten module, found once. */
static bool resolve_kernel(struct program_module *m, struct kernel_entry *k)
{
    if (atomic_load_explicit(&k->resolved, memory_order_acquire))
        return true;
    pthread_mutex_lock(&m->lock);
    if (!k->resolved && !k->unresolvable) {
        char err[200] = "";
        bool ok = true;
        for (int g = 0; g < m->rewritten.loaded && ok; g++) {
            size_t grid_offset;
            unsigned nparams;
            ok = mgpu_gpu_modules_function(&m->rewritten, g, k->name, &k->fns[g], &grid_offset,
                                           &nparams, err, sizeof err) == 0;
            if (ok && g == 0) {
                k->grid_offset = grid_offset;
                k->nparams = nparams;
            }
            if (ok)
                k->resolved_gpus = g + 1;
        }
        if (ok && !describe_parameters(m, k)) {
            ok = false;
            snprintf(err, sizeof err, "kernel %s: its parameters cannot be described", k->name);
        }
        if (!ok) {
            k->unresolvable = true;
            mgpu_error("module %d: %s; the kernel runs from the program's module, which does not "
                       "see the rewritten modules' __device__ variables",
                       m->id, err);
        } else {
            apply_attributes(m, k);
            atomic_store_explicit(&k->resolved, true, memory_order_release);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return k->resolved;
}

static struct kernel_entry *entry_of(const void *handle, struct program_module **m)
{
    struct kernel_entry *k;
    return lookup(handle, m, &k) ? k : NULL;
}

void mgpu_program_kernel_attribute(const void *handle, CUfunction_attribute attrib, int value)
{
    struct program_module *m;
    struct kernel_entry *k = entry_of(handle, &m);
    if (k == NULL)
        return;
    pthread_mutex_lock(&m->lock);
    int i = 0;
    while (i < k->nattrs && k->attrs[i].attrib != attrib)
        i++;
    if (i == MAX_RECORDED_ATTRIBUTES) {
        mgpu_warn("kernel %s: more than %d attributes set; the rewritten modules miss attribute %d",
                  k->name, MAX_RECORDED_ATTRIBUTES, (int)attrib);
    } else {
        k->attrs[i].attrib = attrib;
        k->attrs[i].value = value;
        if (i == k->nattrs)
            k->nattrs++;
        if (k->resolved)
            apply_attributes(m, k);
    }
    pthread_mutex_unlock(&m->lock);
}

void mgpu_program_kernel_cache_config(const void *handle, CUfunc_cache config)
{
    struct program_module *m;
    struct kernel_entry *k = entry_of(handle, &m);
    if (k == NULL)
        return;
    pthread_mutex_lock(&m->lock);
    k->has_cache_config = true;
    k->cache_config = config;
    if (k->resolved)
        apply_attributes(m, k);
    pthread_mutex_unlock(&m->lock);
}

static CUcontext current_context(void)
{
    CUcontext ctx = NULL;
    mgpu_drv.cuCtxGetCurrent(&ctx);
    return ctx;
}

void mgpu_program_global_lookup(const void *owner, const char *name, CUdeviceptr *where,
                                size_t *bytes)
{
    struct program_module *m;
    struct kernel_entry *k;
    if (name == NULL || !lookup(owner, &m, &k) || k != NULL)
        return;
    if (!rewritten_for(m, m->is_library ? current_context() : m->load_context))
        return;
    CUdeviceptr storage;
    size_t storage_bytes;
    if (mgpu_gpu_modules_storage(&m->rewritten, name, &storage, &storage_bytes)) {
        if (where != NULL)
            *where = storage;
        if (bytes != NULL)
            *bytes = storage_bytes;
        return;
    }
    const struct ptx_globals_plan *plan = &m->rewritten.globals;
    /* The program looks a __constant__ up to write it, as cudaMemcpyToSymbol
     * does each time. */
    for (size_t i = 0; i < plan->nconstants; i++)
        if (strcmp(plan->constants[i], name) == 0)
            atomic_store(&m->constants_stale, true);
}

void mgpu_program_memory_written(CUdeviceptr dst, size_t bytes)
{
    if (atomic_load_explicit(&constant_ranges_live, memory_order_relaxed) == 0)
        return;
    pthread_rwlock_rdlock(&table_lock);
    for (size_t i = 0; i < constant_range_count; i++) {
        const struct constant_range *c = &constant_ranges[i];
        if (dst < c->hi && dst + bytes > c->lo)
            atomic_store(&c->module->constants_stale, true);
    }
    pthread_rwlock_unlock(&table_lock);
}

static CUcontext stream_context(CUstream stream)
{
    CUcontext ctx = NULL;
    if (stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD ||
        mgpu_drv.cuStreamGetCtx(stream, &ctx) != CUDA_SUCCESS)
        ctx = current_context();
    return ctx;
}

/* The parameters of an `extra` launch, with __mgpu_grid placed in a copy
 * of the program's buffer. */
static bool copy_extra(struct mgpu_module_launch *l, const struct kernel_entry *k, void **extra)
{
    void *buffer = NULL;
    size_t *size = NULL;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = extra[i + 1];
        else
            return false;
    }
    if (buffer == NULL || size == NULL || *size > k->grid_offset)
        return false;
    l->buffer_size = k->grid_offset + sizeof l->grid;
    if ((l->buffer = calloc(1, l->buffer_size)) == NULL)
        return false;
    memcpy(l->buffer, buffer, *size);
    memcpy((char *)l->buffer + k->grid_offset, &l->grid, sizeof l->grid);
    l->extra_words[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    l->extra_words[1] = l->buffer;
    l->extra_words[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    l->extra_words[3] = &l->buffer_size;
    l->extra_words[4] = CU_LAUNCH_PARAM_END;
    l->extra = l->extra_words;
    l->params = NULL;
    return true;
}

static bool copy_params(struct mgpu_module_launch *l, const struct kernel_entry *k, void **params)
{
    size_t n = k->nparams;
    void **p = l->params_inline;
    if (n + 1 > sizeof l->params_inline / sizeof l->params_inline[0]) {
        if ((l->params_heap = malloc((n + 1) * sizeof *p)) == NULL)
            return false;
        p = l->params_heap;
    }
    if (n > 0 && params == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        p[i] = params[i];
    p[n] = &l->grid;
    l->params = p;
    l->extra = NULL;
    return true;
}

bool mgpu_module_launch_prepare(const void *handle, CUstream stream, const unsigned grid[3],
                                const unsigned block[3], void **params, void **extra,
                                struct mgpu_module_launch *l, enum mgpu_unsplit_reason *why)
{
    l->buffer = NULL;
    l->params_heap = NULL;
    if (!mgpu_program_modules_wanted()) {
        *why = mgpu_cfg.split == MGPU_SPLIT_NEVER ? MGPU_UNSPLIT_SPLIT_OFF : MGPU_UNSPLIT_ONE_GPU;
        return false;
    }
    *why = MGPU_UNSPLIT_NO_COPY;
    struct program_module *m;
    struct kernel_entry *k;
    if (!lookup_or_discover(handle, &m, &k) || !rewritten_for(m, stream_context(stream)) ||
        !resolve_kernel(m, k))
        return false;
    if (params != NULL && extra != NULL)
        return false; /* the driver refuses both; let it say so */
    memset(&l->grid, 0, sizeof l->grid);
    for (int d = 0; d < 3; d++)
        l->grid.grid[d] = grid[d];
    unsigned sample_blocks = 1;
    l->grid.launch_sequence =
        mgpu_probes_launch(k->name, block[0] * block[1] * block[2], &sample_blocks);
    l->grid.probe_block_threshold = mgpu_grid_probe_block_threshold(grid, sample_blocks);
    l->fn = k->fns[0];
    l->module = m;
    l->entry = k;
    l->kernel = (struct mgpu_gpu_kernels){
        .name = k->name,
        .ngpus = m->rewritten.ngpus,
        .contexts = m->rewritten.contexts,
        .fns = k->fns,
        .grid_offset = k->grid_offset,
        .nparams = k->nparams,
        .param_offsets = k->param_offsets,
        .param_sizes = k->param_sizes,
        .param_use = k->param_use,
        .param_reduction = k->param_reduction,
        .param_scatter = k->param_scatter,
        .unsplittable = k->unsplittable,
        .notes = k->notes,
        .stride_bound_param = k->stride_bound_param,
        .footprint = k->footprint,
    };
    if (!(extra != NULL ? copy_extra(l, k, extra) : copy_params(l, k, params))) {
        if (m->rewritten.globals.nredirected > 0 && !atomic_exchange(&k->warned, true))
            mgpu_error("kernel %s: mgpu cannot pass its grid parameter in this launch (an `extra` "
                       "other than a buffer pointer and size, or no parameters); it runs from the "
                       "program's module, which does not see the rewritten modules' __device__ "
                       "variables; run "
                       "with MGPU_SPLIT=never",
                       k->name);
        mgpu_module_launch_done(l, CUDA_SUCCESS);
        return false;
    }
    if (atomic_exchange(&m->constants_stale, false)) {
        /* Every GPU's rewritten module, in the program's stream: a later launch may be
         * split even when this one is not. */
        pthread_mutex_lock(&m->lock);
        CUresult r = CUDA_SUCCESS;
        for (int g = 0; g < m->rewritten.ngpus && r == CUDA_SUCCESS; g++)
            r = mgpu_gpu_modules_refresh_constants_async(&m->rewritten, g, stream);
        pthread_mutex_unlock(&m->lock);
        if (r != CUDA_SUCCESS)
            mgpu_error("module %d: copying its __constant__ variables to the rewritten modules: %s",
                       m->id, mgpu_cu_error_name(r));
    }
    atomic_fetch_add_explicit(&m->launches, 1, memory_order_relaxed);
    *why = MGPU_UNSPLIT_NONE;
    return true;
}

void mgpu_module_launch_done(struct mgpu_module_launch *l, CUresult launch_result)
{
    (void)launch_result;
    free(l->buffer);
    free(l->params_heap);
    l->buffer = NULL;
    l->params_heap = NULL;
}

size_t mgpu_program_modules_loaded(void)
{
    pthread_rwlock_rdlock(&table_lock);
    size_t n = (size_t)modules_loaded;
    pthread_rwlock_unlock(&table_lock);
    return n;
}

size_t mgpu_program_modules_describe(char (*lines)[160], size_t max)
{
    pthread_rwlock_rdlock(&table_lock);
    /* Loaded and unloaded ones in the order of their ids. */
    size_t n = 0, live = 0, gone = 0;
    while (n < max && (live < module_count || gone < unloaded_line_count)) {
        bool take_live = gone == unloaded_line_count ||
                         (live < module_count && modules[live]->id < unloaded_lines[gone].id);
        if (take_live)
            describe_module(modules[live++], lines[n++]);
        else
            memcpy(lines[n++], unloaded_lines[gone++].line, 160);
    }
    if (unloaded_more > 0 && n < max)
        snprintf(lines[n++], 160,
                 "%lu more modules unloaded, %lu launches from their rewritten modules",
                 unloaded_more, unloaded_more_launches);
    pthread_rwlock_unlock(&table_lock);
    return n;
}

/* The copies of a module on the GPUs other than the home one are loaded
 * on a thread of mgpu's own (struct program_module's `others`): the
 * driver's context and module calls may wait for the program's queued
 * work, which may itself wait for the launching thread (a host function
 * the program releases later: tests/gpu/exit_paths). The launch that asks
 * first waits at most OTHERS_WAIT_MS for them when it may wait, and runs
 * whole past it, as do later launches until they are loaded. */
#define OTHERS_WAIT_MS 1000

static pthread_mutex_t others_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t others_changed = PTHREAD_COND_INITIALIZER;
static int loaders_running; /* under others_lock */

static void *load_others(void *arg)
{
    struct program_module *m = arg;
    struct mgpu_gpu_modules *mc = &m->rewritten;
    char why[200] = "";
    mgpu_drv_relax_capture_mode(); /* a graph the program captures meanwhile */
    CUcontext contexts[MGPU_MAX_GPUS];
    CUmodule copies[MGPU_MAX_GPUS] = {NULL};
    int n = 0;
    long long begin = mgpu_monotonic_ns();
    int rc = mgpu_gpu_contexts(m->home_context, contexts, &n, why, sizeof why);
    if (rc == 0 && n != mc->ngpus) {
        snprintf(why, sizeof why, "the run has %d GPUs, the module was rewritten for %d", n,
                 mc->ngpus);
        rc = -1;
    }
    long long loading = mgpu_monotonic_ns();
    /* mc's fields read here (the PTX, the storage, the globals, loaded)
     * change only below, under m->lock, or when the module is unloaded,
     * which waits for this thread first. */
    if (rc == 0)
        rc = mgpu_gpu_modules_load_others(mc, contexts, copies, why, sizeof why);
    long long end = mgpu_monotonic_ns();
    mgpu_startup_add(MGPU_STARTUP_MODULES, end - loading);
    pthread_mutex_lock(&m->lock);
    if (rc == 0) {
        mgpu_gpu_modules_add_others(mc, contexts, copies);
        m->build_seconds += (double)(end - loading) * 1e-9;
    } else {
        snprintf(m->why_no_others, sizeof m->why_no_others, "%s", why);
    }
    pthread_mutex_unlock(&m->lock);
    if (rc == 0)
        mgpu_info("module %d (%s): loaded on the other GPUs for its first launch there in %.2f s "
                  "(their contexts %.2f s)",
                  m->id, m->loaded_by, (double)(end - begin) * 1e-9,
                  (double)(loading - begin) * 1e-9);
    else
        mgpu_warn("module %d (%s): its kernels run whole: loading it on the other GPUs: %s", m->id,
                  m->loaded_by, why);
    pthread_mutex_lock(&others_lock);
    atomic_store_explicit(&m->others, rc == 0 ? OTHERS_READY : OTHERS_FAILED, memory_order_release);
    loaders_running--;
    pthread_cond_broadcast(&others_changed);
    pthread_mutex_unlock(&others_lock);
    return NULL;
}

/* Starts m's loader once; waits at most wait_ms for it to finish. Returns
 * its state then. */
static int others_within(struct program_module *m, unsigned wait_ms)
{
    int state = atomic_load_explicit(&m->others, memory_order_acquire);
    if (state == OTHERS_READY || state == OTHERS_FAILED)
        return state;
    pthread_mutex_lock(&others_lock);
    if (atomic_load_explicit(&m->others, memory_order_relaxed) == OTHERS_NONE) {
        atomic_store_explicit(&m->others, OTHERS_LOADING, memory_order_relaxed);
        loaders_running++;
        if (!mgpu_thread_start_detached(load_others, m)) {
            loaders_running--;
            snprintf(m->why_no_others, sizeof m->why_no_others, "no thread to load it on");
            atomic_store_explicit(&m->others, OTHERS_FAILED, memory_order_release);
        }
    }
    struct timespec deadline = mgpu_deadline_in_ms(wait_ms);
    int rc = 0;
    while (atomic_load_explicit(&m->others, memory_order_acquire) == OTHERS_LOADING && rc == 0)
        rc = pthread_cond_timedwait(&others_changed, &others_lock, &deadline);
    state = atomic_load_explicit(&m->others, memory_order_acquire);
    pthread_mutex_unlock(&others_lock);
    return state;
}

/* Waits, without a bound, until m's loader is not running. */
static void others_settled(struct program_module *m)
{
    pthread_mutex_lock(&others_lock);
    while (atomic_load_explicit(&m->others, memory_order_acquire) == OTHERS_LOADING)
        pthread_cond_wait(&others_changed, &others_lock);
    pthread_mutex_unlock(&others_lock);
}

void mgpu_program_modules_wait_loaders(unsigned wait_ms)
{
    struct timespec deadline = mgpu_deadline_in_ms(wait_ms);
    pthread_mutex_lock(&others_lock);
    int rc = 0;
    while (loaders_running > 0 && rc == 0)
        rc = pthread_cond_timedwait(&others_changed, &others_lock, &deadline);
    pthread_mutex_unlock(&others_lock);
}

bool mgpu_module_launch_all_gpus_ready(const struct mgpu_module_launch *l)
{
    const struct program_module *m = l->module;
    const struct kernel_entry *k = l->entry;
    return m != NULL && k != NULL &&
           (atomic_load_explicit(&k->all_gpus, memory_order_acquire) ||
            atomic_load_explicit(&m->others, memory_order_acquire) == OTHERS_READY);
}

int mgpu_module_launch_all_gpus(const struct mgpu_module_launch *l, CUstream stream, bool wait,
                                char *err, size_t errlen)
{
    struct program_module *m = l->module;
    struct kernel_entry *k = l->entry;
    if (m == NULL || k == NULL) {
        snprintf(err, errlen, "the launch has no rewritten module");
        return -1;
    }
    if (atomic_load_explicit(&k->all_gpus, memory_order_acquire))
        return 0;
    bool first = atomic_load_explicit(&m->others, memory_order_acquire) == OTHERS_NONE;
    int state = others_within(m, first && wait ? OTHERS_WAIT_MS : 0);
    if (state == OTHERS_LOADING) {
        snprintf(err, errlen, "still being loaded");
        if (first && wait)
            mgpu_info("module %d (%s): its copies on the other GPUs not loaded within %d ms (the "
                      "driver may wait for the program's queued work); its launches run whole "
                      "until they are",
                      m->id, m->loaded_by, OTHERS_WAIT_MS);
        return 1;
    }
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    if (state == OTHERS_FAILED) {
        snprintf(err, errlen, "%s", m->why_no_others);
        rc = -1;
    }
    struct mgpu_gpu_modules *mc = &m->rewritten;
    int before = k->resolved_gpus;
    for (int g = before; rc == 0 && g < mc->loaded; g++) {
        size_t grid_offset;
        unsigned nparams;
        rc = mgpu_gpu_modules_function(mc, g, k->name, &k->fns[g], &grid_offset, &nparams, err,
                                       errlen);
        if (rc == 0 && (grid_offset != k->grid_offset || nparams != k->nparams)) {
            snprintf(err, errlen, "kernel %s on GPU %d has another parameter layout", k->name, g);
            rc = -1;
        }
        if (rc == 0)
            k->resolved_gpus = g + 1;
    }
    /* The new GPUs' constants, in the program's stream: after its writes,
     * before this launch's slices. */
    for (int g = before; rc == 0 && g < k->resolved_gpus; g++)
        if (mgpu_gpu_modules_refresh_constants_async(mc, g, stream) != CUDA_SUCCESS) {
            snprintf(err, errlen, "copying the __constant__ variables to GPU %d", g);
            rc = -1;
        }
    if (rc == 0 && k->resolved_gpus == mc->ngpus) {
        apply_attributes(m, k);
        atomic_store_explicit(&k->all_gpus, true, memory_order_release);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}
