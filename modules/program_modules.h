/* What mgpu knows of the program's GPU code: each module and library the
 * program loads (with a copy of its image), each kernel handle it gets
 * (mapped to its module and name), and, built the first time a kernel of
 * the module is launched or one of its variables is looked up, its
 * rewritten modules, one on every selected GPU (gpu_modules.h).
 *
 * Once a module has rewritten modules, every launch of its kernels in the
 * home context runs from them (split over the GPUs, or whole on the home
 * GPU's rewritten module), its __device__ variables live in mgpu's shared
 * storage (which is what the program's symbol lookups then return), and
 * its __constant__ variables are copied from the program's module to the
 * rewritten modules after the program writes them. A module without
 * rewritten modules (no PTX, a corrupt image, a rewrite or compile error,
 * only one GPU or MGPU_SPLIT=never without probes) runs as the program
 * loaded it. With probes (probes/probe_runtime.h) the rewritten modules
 * have them linked in and each launch from them is numbered. */
#ifndef MGPU_PROGRAM_MODULES_H
#define MGPU_PROGRAM_MODULES_H

#include "base/kernel_stats.h"
#include "ptx/ptx_passes.h"

struct mgpu_kernel_footprint;

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether loads are recorded at all: more than one GPU and MGPU_SPLIT is
 * not never, or probes. Decided at the first load. */
bool mgpu_program_modules_wanted(void);

/* After the driver loaded an image: `handle` is the CUmodule or
 * CUlibrary, `image` what the program passed (NULL with `path` for the
 * file forms), `loaded_by` the call's name. With `refused` (a reason) the
 * module gets no rewritten modules. */
void mgpu_program_module_loaded(void *handle, bool is_library, const void *image, const char *path,
                                const char *loaded_by, const char *refused);
/* A CUmodule the program got for a library (cuLibraryGetModule). */
void mgpu_program_module_alias(void *module, void *library);
/* Before the driver unloads it: the rewritten modules go first. */
void mgpu_program_module_unloading(void *handle);

/* A kernel handle (CUfunction or CUkernel) the program got from the module
 * or library `owner`, or from another kernel handle `owner`. */
void mgpu_program_kernel_found(const void *handle, const void *owner, const char *name);
void mgpu_program_kernel_alias(const void *handle, const void *other_handle);

/* The program set a function attribute or cache preference on a kernel:
 * recorded so that the rewritten modules get it too. */
void mgpu_program_kernel_attribute(const void *handle, CUfunction_attribute attrib, int value);
void mgpu_program_kernel_cache_config(const void *handle, CUfunc_cache config);

/* A symbol lookup (cuModuleGetGlobal, cuLibraryGetGlobal) that the driver
 * answered with *where and *bytes: replaced by mgpu's storage for a
 * redirected variable. */
void mgpu_program_global_lookup(const void *owner, const char *name, CUdeviceptr *where,
                                size_t *bytes);

/* The program is about to write [dst, dst + bytes) of device memory: a
 * __constant__ variable of a module with rewritten modules is then refreshed before
 * the module's next launch. Costs one relaxed load when no module has
 * rewritten modules. */
void mgpu_program_memory_written(CUdeviceptr dst, size_t bytes);

/* What a split launch needs of a kernel that runs from its module's rewritten modules.
 * Valid while the module stays loaded. */
struct mgpu_gpu_kernels {
    const char *name; /* as the module has it (mangled); for messages */
    int ngpus;
    const CUcontext *contexts; /* [0] the home context, then the other GPUs' */
    const CUfunction *fns;     /* the kernel in each GPU's rewritten module */
    size_t grid_offset;        /* of __mgpu_grid in the parameter buffer */
    unsigned nparams;          /* the program's parameters, before __mgpu_grid */
    const size_t *param_offsets, *param_sizes;
    const unsigned *param_use; /* enum mgpu_param_use per parameter; NULL when unknown */
    /* per parameter, the privatisable reduction through it (ptx_analysis.h,
     * MGPU_REDUCTION) or 0; set with param_use */
    const unsigned *param_reduction;
    /* per parameter, the bytes a link carries per byte used by its accesses
     * (ptx_analysis.h's scatter, 1 to 8); set with param_use */
    const unsigned char *param_scatter;
    unsigned unsplittable;  /* enum mgpu_unsplittable; 0 when it can be split */
    unsigned notes;         /* enum mgpu_kernel_note */
    int stride_bound_param; /* bounds its grid-stride loop (ptx_stride_loop.h); -1: none */
    /* what a slice of its grid reads and writes (ptx_footprint.h); NULL
     * when not analysed or it cannot be split */
    const struct mgpu_kernel_footprint *footprint;
};

/* A launch redirected to a rewritten module: the function and the parameters to
 * give the driver instead of the program's. */
struct mgpu_module_launch {
    struct mgpu_gpu_kernels kernel;
    CUfunction fn; /* the home GPU's rewritten module */
    void **params;
    void **extra;
    struct mgpu_grid_param grid; /* __mgpu_grid: first block 0, the full grid, no iterations */
    void *extra_words[5];
    size_t buffer_size;
    void *buffer; /* the parameter buffer of an `extra` launch */
    void *params_inline[32];
    void **params_heap;
    void *module, *entry; /* the program module and kernel, for mgpu_module_launch_all_gpus */
};

/* Prepares the launch of `handle` on `stream` with `grid` blocks of
 * `block` threads. Returns true when it is to run from the rewritten module
 * (launch l->fn with l->params, l->extra, then call
 * mgpu_module_launch_done); false to launch as given, with *why. */
bool mgpu_module_launch_prepare(const void *handle, CUstream stream, const unsigned grid[3],
                                const unsigned block[3], void **params, void **extra,
                                struct mgpu_module_launch *l, enum mgpu_unsplit_reason *why);
void mgpu_module_launch_done(struct mgpu_module_launch *l, CUresult launch_result);

/* Before the first launch of l's kernel that runs on a GPU other than the
 * home one (a split, a move): the other GPUs' contexts (retained, peer
 * access enabled), the module's rewritten copies on them (compiled and
 * loaded then, not when the program loaded it: a program whose kernels
 * all run whole never pays for them) and the kernel in each, with the
 * module's constants copied to them in `stream`; l->kernel's contexts and
 * functions then cover every GPU. The copies are loaded on a thread of
 * mgpu's own, which the first asker waits for at most a second when
 * `wait`. Returns 0; 1 while they are still being loaded (the launch runs
 * whole, a later one asks again, without waiting); -1 with a one-line
 * reason in err when they cannot be had (the launch runs whole). */
int mgpu_module_launch_all_gpus(const struct mgpu_module_launch *l, CUstream stream, bool wait,
                                char *err, size_t errlen);

/* Whether the launch's kernel has its module's copies on every GPU already
 * (never waits, starts nothing). */
bool mgpu_module_launch_all_gpus_ready(const struct mgpu_module_launch *l);

/* At exit, before anything is torn down: the threads loading modules'
 * copies on the other GPUs waited for at most wait_ms. */
void mgpu_program_modules_wait_loaders(unsigned wait_ms);

/* How many modules the program loaded over the run, unloaded ones too. */
size_t mgpu_program_modules_loaded(void);

/* For the report: one line per module loaded, at most `max`. */
size_t mgpu_program_modules_describe(char (*lines)[160], size_t max);

#endif
