/* A module rewritten for split launches and loaded once per selected GPU:
 * compiled by the driver's JIT in each GPU's context (its disk cache serves
 * the GPUs after the first, and later runs), its device ordinal set, its
 * constants copied from the home module's (the program's own, in the home
 * GPU's context).
 *
 * Writable module variables (__device__) live in one allocation per
 * variable that every GPU can reach, made in the home context and filled
 * from the home module's variable at load; every rewritten module's table
 * of globals points there. The home module's own storage cannot be that
 * place: on 2 x H200 a kernel on GPU 1 that touches a module variable of
 * GPU 0's context faults (CUDA_ERROR_ILLEGAL_ADDRESS) even with peer
 * access enabled, which covers allocations, not module memory. So once a
 * module has rewritten modules, the program's view of its variables
 * (cuModuleGetGlobal, cuLibraryGetGlobal) must be this storage, and all
 * its kernels must run from the rewritten modules (unsplit ones from the
 * home GPU's). The caller enables peer access among the contexts first. */
#ifndef MGPU_GPU_MODULES_H
#define MGPU_GPU_MODULES_H

#include "base/config.h"
#include "ptx/ptx_rewrite.h"

#include <cuda.h>
#include <stdbool.h>

/* Injected probes (ptx_probes.h): linked into every rewritten module, whose words
 * `fill` sets with its module's context current. */
struct mgpu_gpu_module_probes {
    const struct ptx_probe_inject *inject;
    int (*fill)(CUmodule module, int gpu, char *err, size_t errlen);
};

struct mgpu_gpu_modules {
    int ngpus;
    int loaded; /* entries [0, loaded) have their module; the others wait for a split */
    CUcontext contexts[MGPU_MAX_GPUS];
    CUmodule modules[MGPU_MAX_GPUS];
    char *ptx; /* the rewritten PTX, kept while some entry waits for its module */
    struct mgpu_gpu_module_probes probes;
    bool probed;
    CUmodule home;
    struct ptx_globals_plan globals;
    struct mgpu_ptx_analysis analysis; /* of the module's kernels, as the program wrote them */
    CUdeviceptr *storage;              /* per redirected variable */
    size_t *storage_size;
};

/* Rewrites `ptx` (the home module's PTX) and loads it on each of the
 * `ngpus` contexts. Returns 0, or -1 with a one-line reason in err (nothing
 * stays loaded then). */
int mgpu_gpu_modules_load(struct mgpu_gpu_modules *mc, const char *ptx, size_t size, CUmodule home,
                          int ngpus, const CUcontext *contexts, char *err, size_t errlen);

/* The same with probes when `probes` is not NULL, loading only the first
 * `load_now` entries' modules (contexts[] of the others may be NULL): the
 * rest wait for mgpu_gpu_modules_load_rest, so that a program whose
 * kernels never split never makes the other GPUs' contexts or compiles
 * for them (issue 46: on an H200 each other context costs about 0.1 s
 * to make and 0.04 s to tear down at exit). */
int mgpu_gpu_modules_load_probed(struct mgpu_gpu_modules *mc, const char *ptx, size_t size,
                                 CUmodule home, int ngpus, const CUcontext *contexts, int load_now,
                                 const struct mgpu_gpu_module_probes *probes, char *err,
                                 size_t errlen);

/* Loads the modules of the entries still without one (from mc->loaded
 * on) in `contexts` (every entry's, [0] the home context) into modules[],
 * leaving mc as it is: made on a thread of mgpu's own while the program
 * launches from mc. Their constants are not copied: once they are added,
 * mgpu_gpu_modules_refresh_constants_async does that in the program's
 * stream. Returns 0, or -1 with a reason in err (nothing stays loaded). */
int mgpu_gpu_modules_load_others(const struct mgpu_gpu_modules *mc, const CUcontext *contexts,
                                 CUmodule modules[MGPU_MAX_GPUS], char *err, size_t errlen);

/* Adds what mgpu_gpu_modules_load_others loaded to mc (under the caller's
 * lock): every entry then has its module. */
void mgpu_gpu_modules_add_others(struct mgpu_gpu_modules *mc, const CUcontext *contexts,
                                 const CUmodule modules[MGPU_MAX_GPUS]);

/* The rewritten kernel on GPU `gpu`, where its __mgpu_grid parameter goes
 * in the parameter buffer, and how many parameters the program's kernel
 * has (__mgpu_grid comes after them). Returns 0, or -1 with a reason in
 * err. */
int mgpu_gpu_modules_function(const struct mgpu_gpu_modules *mc, int gpu, const char *name,
                              CUfunction *fn, size_t *grid_param_offset, unsigned *program_params,
                              char *err, size_t errlen);

/* The shared storage of `name` when it is a redirected (__device__)
 * variable; false for any other name. */
bool mgpu_gpu_modules_storage(const struct mgpu_gpu_modules *mc, const char *name,
                              CUdeviceptr *where, size_t *bytes);

/* Where a module variable lives for the program: the shared storage of a
 * redirected variable, else the home module's. Returns 0, or -1 with a
 * reason in err. */
int mgpu_gpu_modules_global(const struct mgpu_gpu_modules *mc, const char *name, CUdeviceptr *where,
                            size_t *bytes, char *err, size_t errlen);

/* Copies the home module's __constant__ variables to every loaded rewritten module, after the
 * program has written them. Returns 0, or -1 with a reason in err. */
int mgpu_gpu_modules_refresh_constants(const struct mgpu_gpu_modules *mc, char *err, size_t errlen);

/* The same for GPU `gpu`'s rewritten module only, ordered in `stream` (a stream of the
 * home context), so that it lands after the program's writes and before
 * its next kernel in that stream; nothing where that module is not loaded yet. */
CUresult mgpu_gpu_modules_refresh_constants_async(const struct mgpu_gpu_modules *mc, int gpu,
                                                  CUstream stream);

/* Waits until nothing runs in the rewritten modules' contexts: slices of the module's
 * kernels may still run on any GPU, unsplit launches in the home context,
 * and the driver would unload a module, and mgpu free the storage of its
 * variables, under them. */
void mgpu_gpu_modules_wait_idle(const struct mgpu_gpu_modules *mc);

/* Unloads every rewritten module and frees the shared storage; the caller has waited
 * for the kernels that may use them (mgpu_gpu_modules_wait_idle). */
void mgpu_gpu_modules_unload(struct mgpu_gpu_modules *mc);

#endif
