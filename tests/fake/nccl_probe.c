/* Stands for NCCL in the tests: a library whose name starts with "libnccl"
 * and that looks driver functions up through cuGetProcAddress_v2, as NCCL's
 * own copy of the CUDA runtime does. mgpu must hand it the driver's entry
 * points, not its hooks. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

__attribute__((visibility("default"))) void *nccl_probe_lookup(const char *symbol);

void *nccl_probe_lookup(const char *symbol)
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
