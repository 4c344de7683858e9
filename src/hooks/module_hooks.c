/* Owns the hooks of the calls that load, look into and unload the
 * program's GPU code (cuModule*, cuLibrary*, cuKernelGetFunction) and set
 * kernels' attributes. Each goes to the driver first; what it answered is
 * then recorded in program_modules.c. A call the driver refuses is
 * returned as it is and recorded nowhere, so a corrupt image is the
 * driver's error, never mgpu's crash. */
#include "src/hooks/hook_table.h"
#include "src/hooks/link_hooks.h"
#include "modules/program_modules.h"

#include <cuda.h>
#include <cudaTypedefs.h>

MGPU_DECLARE_HOOK(cuModuleLoad, PFN_cuModuleLoad_v2000);
MGPU_DECLARE_HOOK(cuModuleLoadData, PFN_cuModuleLoadData_v2000);
MGPU_DECLARE_HOOK(cuModuleLoadDataEx, PFN_cuModuleLoadDataEx_v2010);
MGPU_DECLARE_HOOK(cuModuleLoadFatBinary, PFN_cuModuleLoadFatBinary_v2000);
MGPU_DECLARE_HOOK(cuModuleUnload, PFN_cuModuleUnload_v2000);
MGPU_DECLARE_HOOK(cuModuleGetFunction, PFN_cuModuleGetFunction_v2000);
MGPU_DECLARE_HOOK(cuModuleGetGlobal_v2, PFN_cuModuleGetGlobal_v3020);
MGPU_DECLARE_HOOK(cuLibraryLoadData, PFN_cuLibraryLoadData_v12000);
MGPU_DECLARE_HOOK(cuLibraryLoadFromFile, PFN_cuLibraryLoadFromFile_v12000);
MGPU_DECLARE_HOOK(cuLibraryUnload, PFN_cuLibraryUnload_v12000);
MGPU_DECLARE_HOOK(cuLibraryGetKernel, PFN_cuLibraryGetKernel_v12000);
MGPU_DECLARE_HOOK(cuLibraryGetModule, PFN_cuLibraryGetModule_v12000);
MGPU_DECLARE_HOOK(cuLibraryGetGlobal, PFN_cuLibraryGetGlobal_v12000);
MGPU_DECLARE_HOOK(cuKernelGetFunction, PFN_cuKernelGetFunction_v12000);
MGPU_DECLARE_HOOK(cuFuncSetAttribute, PFN_cuFuncSetAttribute_v9000);
MGPU_DECLARE_HOOK(cuKernelSetAttribute, PFN_cuKernelSetAttribute_v12000);
MGPU_DECLARE_HOOK(cuFuncSetCacheConfig, PFN_cuFuncSetCacheConfig_v3000);
MGPU_DECLARE_HOOK(cuKernelSetCacheConfig, PFN_cuKernelSetCacheConfig_v12000);

/* After a successful load from memory: the image of a cuLink* output is
 * what went into the link, which program_modules.c gets instead. */
static void loaded_from_memory(void *handle, bool is_library, const void *image,
                               const char *loaded_by)
{
    if (!mgpu_program_modules_wanted())
        return;
    const void *input = NULL;
    const char *refused = NULL;
    if (mgpu_link_capture_lookup(image, &input, &refused))
        image = input;
    mgpu_program_module_loaded(handle, is_library, image, NULL, loaded_by, refused);
}

static CUresult CUDAAPI hook_cuModuleLoad(CUmodule *module, const char *path)
{
    MGPU_HOOK_ENTRY(cuModuleLoad);
    CUresult r = real_cuModuleLoad(module, path);
    if (r == CUDA_SUCCESS && mgpu_program_modules_wanted())
        mgpu_program_module_loaded(*module, false, NULL, path, "cuModuleLoad", NULL);
    return r;
}

static CUresult CUDAAPI hook_cuModuleLoadData(CUmodule *module, const void *image)
{
    MGPU_HOOK_ENTRY(cuModuleLoadData);
    CUresult r = real_cuModuleLoadData(module, image);
    if (r == CUDA_SUCCESS)
        loaded_from_memory(*module, false, image, "cuModuleLoadData");
    return r;
}

static CUresult CUDAAPI hook_cuModuleLoadDataEx(CUmodule *module, const void *image,
                                                unsigned noptions, CUjit_option *options,
                                                void **values)
{
    MGPU_HOOK_ENTRY(cuModuleLoadDataEx);
    CUresult r = real_cuModuleLoadDataEx(module, image, noptions, options, values);
    if (r == CUDA_SUCCESS)
        loaded_from_memory(*module, false, image, "cuModuleLoadDataEx");
    return r;
}

static CUresult CUDAAPI hook_cuModuleLoadFatBinary(CUmodule *module, const void *fatbin)
{
    MGPU_HOOK_ENTRY(cuModuleLoadFatBinary);
    CUresult r = real_cuModuleLoadFatBinary(module, fatbin);
    if (r == CUDA_SUCCESS)
        loaded_from_memory(*module, false, fatbin, "cuModuleLoadFatBinary");
    return r;
}

static CUresult CUDAAPI hook_cuModuleUnload(CUmodule module)
{
    MGPU_HOOK_ENTRY(cuModuleUnload);
    mgpu_program_module_unloading(module);
    return real_cuModuleUnload(module);
}

static CUresult CUDAAPI hook_cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name)
{
    MGPU_HOOK_ENTRY(cuModuleGetFunction);
    CUresult r = real_cuModuleGetFunction(fn, module, name);
    if (r == CUDA_SUCCESS)
        mgpu_program_kernel_found(*fn, module, name);
    return r;
}

static CUresult CUDAAPI hook_cuModuleGetGlobal_v2(CUdeviceptr *where, size_t *bytes,
                                                  CUmodule module, const char *name)
{
    MGPU_HOOK_ENTRY(cuModuleGetGlobal_v2);
    CUresult r = real_cuModuleGetGlobal_v2(where, bytes, module, name);
    if (r == CUDA_SUCCESS)
        mgpu_program_global_lookup(module, name, where, bytes);
    return r;
}

static CUresult CUDAAPI hook_cuLibraryLoadData(CUlibrary *library, const void *code,
                                               CUjit_option *jit_options, void **jit_values,
                                               unsigned njit, CUlibraryOption *options,
                                               void **values, unsigned noptions)
{
    MGPU_HOOK_ENTRY(cuLibraryLoadData);
    CUresult r = real_cuLibraryLoadData(library, code, jit_options, jit_values, njit, options,
                                        values, noptions);
    if (r == CUDA_SUCCESS)
        loaded_from_memory(*library, true, code, "cuLibraryLoadData");
    return r;
}

static CUresult CUDAAPI hook_cuLibraryLoadFromFile(CUlibrary *library, const char *path,
                                                   CUjit_option *jit_options, void **jit_values,
                                                   unsigned njit, CUlibraryOption *options,
                                                   void **values, unsigned noptions)
{
    MGPU_HOOK_ENTRY(cuLibraryLoadFromFile);
    CUresult r = real_cuLibraryLoadFromFile(library, path, jit_options, jit_values, njit, options,
                                            values, noptions);
    if (r == CUDA_SUCCESS && mgpu_program_modules_wanted())
        mgpu_program_module_loaded(*library, true, NULL, path, "cuLibraryLoadFromFile", NULL);
    return r;
}

static CUresult CUDAAPI hook_cuLibraryUnload(CUlibrary library)
{
    MGPU_HOOK_ENTRY(cuLibraryUnload);
    mgpu_program_module_unloading(library);
    return real_cuLibraryUnload(library);
}

static CUresult CUDAAPI hook_cuLibraryGetKernel(CUkernel *kernel, CUlibrary library,
                                                const char *name)
{
    MGPU_HOOK_ENTRY(cuLibraryGetKernel);
    CUresult r = real_cuLibraryGetKernel(kernel, library, name);
    if (r == CUDA_SUCCESS)
        mgpu_program_kernel_found(*kernel, library, name);
    return r;
}

static CUresult CUDAAPI hook_cuLibraryGetModule(CUmodule *module, CUlibrary library)
{
    MGPU_HOOK_ENTRY(cuLibraryGetModule);
    CUresult r = real_cuLibraryGetModule(module, library);
    if (r == CUDA_SUCCESS)
        mgpu_program_module_alias(*module, library);
    return r;
}

static CUresult CUDAAPI hook_cuLibraryGetGlobal(CUdeviceptr *where, size_t *bytes,
                                                CUlibrary library, const char *name)
{
    MGPU_HOOK_ENTRY(cuLibraryGetGlobal);
    CUresult r = real_cuLibraryGetGlobal(where, bytes, library, name);
    if (r == CUDA_SUCCESS)
        mgpu_program_global_lookup(library, name, where, bytes);
    return r;
}

static CUresult CUDAAPI hook_cuKernelGetFunction(CUfunction *fn, CUkernel kernel)
{
    MGPU_HOOK_ENTRY(cuKernelGetFunction);
    CUresult r = real_cuKernelGetFunction(fn, kernel);
    if (r == CUDA_SUCCESS)
        mgpu_program_kernel_alias(*fn, kernel);
    return r;
}

static CUresult CUDAAPI hook_cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attrib,
                                                int value)
{
    MGPU_HOOK_ENTRY(cuFuncSetAttribute);
    CUresult r = real_cuFuncSetAttribute(fn, attrib, value);
    if (r == CUDA_SUCCESS)
        mgpu_program_kernel_attribute(fn, attrib, value);
    return r;
}

static CUresult CUDAAPI hook_cuKernelSetAttribute(CUfunction_attribute attrib, int value,
                                                  CUkernel kernel, CUdevice device)
{
    MGPU_HOOK_ENTRY(cuKernelSetAttribute);
    CUresult r = real_cuKernelSetAttribute(attrib, value, kernel, device);
    if (r == CUDA_SUCCESS)
        mgpu_program_kernel_attribute(kernel, attrib, value);
    return r;
}

static CUresult CUDAAPI hook_cuFuncSetCacheConfig(CUfunction fn, CUfunc_cache config)
{
    MGPU_HOOK_ENTRY(cuFuncSetCacheConfig);
    CUresult r = real_cuFuncSetCacheConfig(fn, config);
    if (r == CUDA_SUCCESS)
        mgpu_program_kernel_cache_config(fn, config);
    return r;
}

static CUresult CUDAAPI hook_cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config,
                                                    CUdevice device)
{
    MGPU_HOOK_ENTRY(cuKernelSetCacheConfig);
    CUresult r = real_cuKernelSetCacheConfig(kernel, config, device);
    if (r == CUDA_SUCCESS)
        mgpu_program_kernel_cache_config(kernel, config);
    return r;
}

const struct mgpu_hook mgpu_module_hooks[] = {
    MGPU_HOOK(cuModuleLoad),
    MGPU_HOOK(cuModuleLoadData),
    MGPU_HOOK(cuModuleLoadDataEx),
    MGPU_HOOK(cuModuleLoadFatBinary),
    MGPU_HOOK(cuModuleUnload),
    MGPU_HOOK(cuModuleGetFunction),
    MGPU_HOOK(cuModuleGetGlobal_v2),
    MGPU_HOOK(cuLibraryLoadData),
    MGPU_HOOK(cuLibraryLoadFromFile),
    MGPU_HOOK(cuLibraryUnload),
    MGPU_HOOK(cuLibraryGetKernel),
    MGPU_HOOK(cuLibraryGetModule),
    MGPU_HOOK(cuLibraryGetGlobal),
    MGPU_HOOK(cuKernelGetFunction),
    MGPU_HOOK(cuFuncSetAttribute),
    MGPU_HOOK(cuKernelSetAttribute),
    MGPU_HOOK(cuFuncSetCacheConfig),
    MGPU_HOOK(cuKernelSetCacheConfig),
    MGPU_HOOK_END,
};
