/* Stands for a library in the tests: built as libnccl_probe.so (NCCL, whose
 * lookups must get the driver's entry points, not mgpu's hooks) and as
 * libcublas_probe.so (a math library with machine-code kernels, whose
 * device attribute queries must get one GPU's figures). Either looks driver
 * functions up through cuGetProcAddress_v2, as a library's own copy of the
 * CUDA runtime does. PROBE_LOOKUP names the one function it exports. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#ifndef PROBE_LOOKUP
#error define PROBE_LOOKUP, the name of the exported lookup function
#endif

__attribute__((visibility("default"))) void *PROBE_LOOKUP(const char *symbol);

void *PROBE_LOOKUP(const char *symbol)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (driver == NULL)
        return NULL;
    PFN_cuGetProcAddress_v12000 get =
        (PFN_cuGetProcAddress_v12000)dlsym(driver, "cuGetProcAddress_v2");
    void *p = NULL;
    if (get == NULL || get(symbol, &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL) != CUDA_SUCCESS)
        return NULL;
    return p;
}
