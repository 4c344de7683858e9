/* Owns loading a rewritten module on every selected GPU (see
 * gpu_modules.h): compiling the rewritten PTX with the driver's JIT in
 * each GPU's context, and setting each one's per-module data. All driver
 * calls go to the real driver. */
#include "modules/gpu_modules.h"

#include "base/real_driver.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Compiles `ptx` (NUL-terminated) for the current context's GPU and loads
 * it: cuModuleLoadDataEx, whole-program code, as the CUDA runtime gets for
 * PTX. Not through cuLink*, which compiles its inputs as relocatable code
 * (-rdc): ptxas then does not know where shared arrays start and splits
 * 16-byte shared-memory loads into 4-byte ones, which made a split SGEMM
 * 21 % slower on 2 x H200. The driver keeps what it compiled in its JIT
 * cache on disk (CUDA_CACHE_PATH), so the other GPUs of the same
 * architecture, and the next run, load it without compiling again. */
static int load_ptx(CUmodule *module, const char *ptx, int gpu, char *err, size_t errlen)
{
    char log[4096] = "";
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, (void *)(uintptr_t)sizeof log};
    CUresult r = mgpu_drv.cuModuleLoadDataEx(module, ptx, 2, options, values);
    if (r == CUDA_SUCCESS)
        return 0;
    *module = NULL;
    char *nl = strchr(log, '\n');
    if (nl)
        *nl = '\0';
    snprintf(err, errlen, "the JIT compiler refuses the rewritten PTX on GPU %d: %s%s%s", gpu,
             mgpu_cu_error_name(r), log[0] ? ": " : "", log);
    return -1;
}

static bool driver_has_module_calls(void)
{
    return mgpu_drv.cuCtxPushCurrent && mgpu_drv.cuCtxPopCurrent && mgpu_drv.cuModuleLoadDataEx &&
           mgpu_drv.cuModuleUnload && mgpu_drv.cuModuleGetFunction && mgpu_drv.cuModuleGetGlobal &&
           mgpu_drv.cuFuncGetParamInfo && mgpu_drv.cuMemcpyHtoD && mgpu_drv.cuMemcpyDtoD &&
           mgpu_drv.cuMemAlloc && mgpu_drv.cuMemFree && mgpu_drv.cuMemcpyDtoDAsync;
}

/* Fills entry gpu's rewritten module m's per-module data; its context is current. */
static int set_module_data(const struct mgpu_gpu_modules *mc, CUmodule m, int gpu, char *err,
                           size_t errlen)
{
    CUdeviceptr where;
    size_t bytes;
    unsigned ordinal = (unsigned)gpu;
    CUresult r = mgpu_drv.cuModuleGetGlobal(&where, &bytes, m, MGPU_PTX_DEVICE_ORDINAL);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemcpyHtoD(where, &ordinal, sizeof ordinal);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "setting %s: %s", MGPU_PTX_DEVICE_ORDINAL, mgpu_cu_error_name(r));
        return -1;
    }
    size_t n = mc->globals.nredirected;
    if (n == 0)
        return 0;
    r = mgpu_drv.cuModuleGetGlobal(&where, &bytes, m, MGPU_PTX_GLOBALS_TABLE);
    if (r == CUDA_SUCCESS && bytes != n * sizeof *mc->storage)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemcpyHtoD(where, mc->storage, n * sizeof *mc->storage);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "filling %s: %s", MGPU_PTX_GLOBALS_TABLE, mgpu_cu_error_name(r));
        return -1;
    }
    return 0;
}

/* One allocation per redirected variable, in the home context, holding
 * what the home module's variable holds now. */
static int make_storage(struct mgpu_gpu_modules *mc, char *err, size_t errlen)
{
    size_t n = mc->globals.nredirected;
    if (n == 0)
        return 0;
    mc->storage = calloc(n, sizeof *mc->storage);
    mc->storage_size = calloc(n, sizeof *mc->storage_size);
    if (mc->storage == NULL || mc->storage_size == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    CUresult r = mgpu_drv.cuCtxPushCurrent(mc->contexts[0]);
    for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++) {
        CUdeviceptr home;
        const char *name = mc->globals.redirected[i];
        r = mgpu_drv.cuModuleGetGlobal(&home, &mc->storage_size[i], mc->home, name);
        if (r != CUDA_SUCCESS) {
            snprintf(err, errlen, "the home module has no variable %s: %s", name,
                     mgpu_cu_error_name(r));
            break;
        }
        r = mgpu_drv.cuMemAlloc(&mc->storage[i], mc->storage_size[i]);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuMemcpyDtoD(mc->storage[i], home, mc->storage_size[i]);
        if (r != CUDA_SUCCESS)
            snprintf(err, errlen, "storage for the variable %s: %s", name, mgpu_cu_error_name(r));
    }
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return r == CUDA_SUCCESS ? 0 : -1;
}

bool mgpu_gpu_modules_storage(const struct mgpu_gpu_modules *mc, const char *name,
                              CUdeviceptr *where, size_t *bytes)
{
    for (size_t i = 0; i < mc->globals.nredirected; i++)
        if (strcmp(mc->globals.redirected[i], name) == 0) {
            *where = mc->storage[i];
            *bytes = mc->storage_size[i];
            return true;
        }
    return false;
}

int mgpu_gpu_modules_global(const struct mgpu_gpu_modules *mc, const char *name, CUdeviceptr *where,
                            size_t *bytes, char *err, size_t errlen)
{
    if (mgpu_gpu_modules_storage(mc, name, where, bytes))
        return 0;
    CUresult r = mgpu_drv.cuModuleGetGlobal(where, bytes, mc->home, name);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "no module variable %s: %s", name, mgpu_cu_error_name(r));
        return -1;
    }
    return 0;
}

int mgpu_gpu_modules_load(struct mgpu_gpu_modules *mc, const char *ptx, size_t size, CUmodule home,
                          int ngpus, const CUcontext *contexts, char *err, size_t errlen)
{
    return mgpu_gpu_modules_load_probed(mc, ptx, size, home, ngpus, contexts, ngpus, NULL, err,
                                        errlen);
}

/* Loads entry g's module in ctx into *module and sets its per-module data
 * and probes; nothing stays loaded on failure. */
static int load_entry(const struct mgpu_gpu_modules *mc, int g, CUcontext ctx, CUmodule *module,
                      char *err, size_t errlen)
{
    *module = NULL;
    CUresult r = mgpu_drv.cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "GPU %d's context: %s", g, mgpu_cu_error_name(r));
        return -1;
    }
    int rc = load_ptx(module, mc->ptx, g, err, errlen);
    if (rc == 0)
        rc = set_module_data(mc, *module, g, err, errlen);
    if (rc == 0 && mc->probed)
        rc = mc->probes.fill(*module, g, err, errlen);
    if (rc != 0 && *module != NULL) {
        mgpu_drv.cuModuleUnload(*module);
        *module = NULL;
    }
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return rc;
}

int mgpu_gpu_modules_load_probed(struct mgpu_gpu_modules *mc, const char *ptx, size_t size,
                                 CUmodule home, int ngpus, const CUcontext *contexts, int load_now,
                                 const struct mgpu_gpu_module_probes *probes, char *err,
                                 size_t errlen)
{
    memset(mc, 0, sizeof *mc);
    if (!driver_has_module_calls()) {
        snprintf(err, errlen, "the CUDA driver lacks the module calls mgpu needs (driver 550+)");
        return -1;
    }
    if (ngpus < 1 || ngpus > MGPU_MAX_GPUS) {
        snprintf(err, errlen, "%d GPUs: mgpu handles 1 to %d", ngpus, MGPU_MAX_GPUS);
        return -1;
    }
    if (load_now < 1 || load_now > ngpus)
        load_now = ngpus;
    struct mgpu_ptx_rewrite rw;
    if (mgpu_ptx_rewrite_probed(ptx, size, MGPU_PASS_ALL | MGPU_PASS_ANALYZE,
                                probes ? probes->inject : NULL, &rw, err, errlen) != 0)
        return -1;
    mc->globals = rw.globals;
    memset(&rw.globals, 0, sizeof rw.globals);
    mc->analysis = rw.analysis;
    memset(&rw.analysis, 0, sizeof rw.analysis);
    mc->ptx = rw.ptx;
    rw.ptx = NULL;
    mgpu_ptx_rewrite_free(&rw);
    mc->home = home;
    mc->ngpus = ngpus;
    if (probes != NULL) {
        mc->probes = *probes;
        mc->probed = true;
    }
    for (int g = 0; g < load_now; g++)
        mc->contexts[g] = contexts[g];
    int rc = make_storage(mc, err, errlen);
    for (int g = 0; g < load_now && rc == 0; g++)
        rc = load_entry(mc, g, mc->contexts[g], &mc->modules[g], err, errlen);
    mc->loaded = rc == 0 ? load_now : 0;
    if (rc == 0)
        rc = mgpu_gpu_modules_refresh_constants(mc, err, errlen);
    if (rc != 0) {
        mgpu_gpu_modules_unload(mc);
        return rc;
    }
    if (mc->loaded == mc->ngpus) {
        free(mc->ptx);
        mc->ptx = NULL;
    }
    return 0;
}

int mgpu_gpu_modules_load_others(const struct mgpu_gpu_modules *mc, const CUcontext *contexts,
                                 CUmodule modules[MGPU_MAX_GPUS], char *err, size_t errlen)
{
    if (mc->ptx == NULL) {
        snprintf(err, errlen, "the rewritten PTX is gone");
        return -1;
    }
    for (int g = mc->loaded; g < mc->ngpus; g++) {
        if (load_entry(mc, g, contexts[g], &modules[g], err, errlen) == 0)
            continue;
        for (int k = mc->loaded; k < g; k++) {
            bool pushed = mgpu_drv.cuCtxPushCurrent(contexts[k]) == CUDA_SUCCESS;
            mgpu_drv.cuModuleUnload(modules[k]);
            CUcontext popped;
            if (pushed)
                mgpu_drv.cuCtxPopCurrent(&popped);
            modules[k] = NULL;
        }
        return -1;
    }
    return 0;
}

void mgpu_gpu_modules_add_others(struct mgpu_gpu_modules *mc, const CUcontext *contexts,
                                 const CUmodule modules[MGPU_MAX_GPUS])
{
    for (int g = mc->loaded; g < mc->ngpus; g++) {
        mc->contexts[g] = contexts[g];
        mc->modules[g] = modules[g];
    }
    mc->loaded = mc->ngpus;
    free(mc->ptx);
    mc->ptx = NULL;
}

int mgpu_gpu_modules_function(const struct mgpu_gpu_modules *mc, int gpu, const char *name,
                              CUfunction *fn, size_t *grid_param_offset, unsigned *program_params,
                              char *err, size_t errlen)
{
    if (gpu < 0 || gpu >= mc->loaded || mc->modules[gpu] == NULL) {
        snprintf(err, errlen, "no rewritten module on GPU %d", gpu);
        return -1;
    }
    CUresult r = mgpu_drv.cuModuleGetFunction(fn, mc->modules[gpu], name);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "kernel %s on GPU %d: %s", name, gpu, mgpu_cu_error_name(r));
        return -1;
    }
    /* __mgpu_grid is the last parameter: find it by walking the list. */
    size_t offset = 0, bytes = 0, index = 0, last_offset = 0, last_size = 0;
    while (mgpu_drv.cuFuncGetParamInfo(*fn, index, &offset, &bytes) == CUDA_SUCCESS) {
        last_offset = offset;
        last_size = bytes;
        index++;
    }
    if (index == 0 || last_size != MGPU_PTX_GRID_PARAM_SIZE) {
        snprintf(err, errlen, "kernel %s on GPU %d has no %s parameter", name, gpu,
                 MGPU_PTX_GRID_PARAM);
        return -1;
    }
    *grid_param_offset = last_offset;
    *program_params = (unsigned)index - 1;
    return 0;
}

int mgpu_gpu_modules_refresh_constants(const struct mgpu_gpu_modules *mc, char *err, size_t errlen)
{
    for (size_t i = 0; i < mc->globals.nconstants; i++) {
        const char *name = mc->globals.constants[i];
        CUdeviceptr from, to;
        size_t bytes, copy_bytes;
        CUresult r = mgpu_drv.cuModuleGetGlobal(&from, &bytes, mc->home, name);
        for (int g = 0; g < mc->loaded && r == CUDA_SUCCESS; g++) {
            r = mgpu_drv.cuCtxPushCurrent(mc->contexts[g]);
            if (r != CUDA_SUCCESS)
                break;
            r = mgpu_drv.cuModuleGetGlobal(&to, &copy_bytes, mc->modules[g], name);
            if (r == CUDA_SUCCESS && copy_bytes != bytes)
                r = CUDA_ERROR_INVALID_VALUE;
            if (r == CUDA_SUCCESS)
                r = mgpu_drv.cuMemcpyDtoD(to, from, bytes);
            CUcontext popped;
            mgpu_drv.cuCtxPopCurrent(&popped);
        }
        if (r != CUDA_SUCCESS) {
            snprintf(err, errlen, "copying __constant__ %s to the GPUs: %s", name,
                     mgpu_cu_error_name(r));
            return -1;
        }
    }
    return 0;
}

CUresult mgpu_gpu_modules_refresh_constants_async(const struct mgpu_gpu_modules *mc, int gpu,
                                                  CUstream stream)
{
    CUresult r = CUDA_SUCCESS;
    if (gpu < 0 || gpu >= mc->loaded)
        return CUDA_SUCCESS; /* loaded later, with the constants of then */
    for (size_t i = 0; i < mc->globals.nconstants && r == CUDA_SUCCESS; i++) {
        const char *name = mc->globals.constants[i];
        CUdeviceptr from, to;
        size_t bytes, copy_bytes;
        r = mgpu_drv.cuModuleGetGlobal(&from, &bytes, mc->home, name);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuModuleGetGlobal(&to, &copy_bytes, mc->modules[gpu], name);
        if (r == CUDA_SUCCESS && copy_bytes != bytes)
            r = CUDA_ERROR_INVALID_VALUE;
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuMemcpyDtoDAsync(to, from, bytes, stream);
    }
    return r;
}

void mgpu_gpu_modules_wait_idle(const struct mgpu_gpu_modules *mc)
{
    for (int g = 0; g < mc->loaded; g++) {
        bool seen = false;
        for (int e = 0; e < g && !seen; e++)
            seen = mc->contexts[e] == mc->contexts[g];
        /* A context with a faulted kernel answers at once with the fault,
         * which the program's own synchronisation reports. */
        if (!seen)
            mgpu_drv_synchronize_context(mc->contexts[g]);
    }
}

/* Unloads and frees even when a rewritten module's context cannot be made current:
 * a module and an allocation name their context, and skipping them left a
 * rewritten module loaded for the rest of the run. */
void mgpu_gpu_modules_unload(struct mgpu_gpu_modules *mc)
{
    CUcontext popped;
    for (int g = 0; g < mc->ngpus; g++) {
        if (mc->modules[g] == NULL || mc->contexts[g] == NULL)
            continue;
        bool pushed = mgpu_drv.cuCtxPushCurrent(mc->contexts[g]) == CUDA_SUCCESS;
        mgpu_drv.cuModuleUnload(mc->modules[g]);
        if (pushed)
            mgpu_drv.cuCtxPopCurrent(&popped);
    }
    if (mc->storage != NULL) {
        bool pushed = mgpu_drv.cuCtxPushCurrent(mc->contexts[0]) == CUDA_SUCCESS;
        for (size_t i = 0; i < mc->globals.nredirected; i++)
            if (mc->storage[i])
                mgpu_drv.cuMemFree(mc->storage[i]);
        if (pushed)
            mgpu_drv.cuCtxPopCurrent(&popped);
    }
    free(mc->storage);
    free(mc->storage_size);
    free(mc->ptx);
    ptx_globals_plan_free(&mc->globals);
    mgpu_ptx_analysis_free(&mc->analysis);
    memset(mc, 0, sizeof *mc);
}
