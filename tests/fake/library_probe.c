/* Stands for a library in the tests: built as libnccl_probe.so (NCCL, whose
 * lookups must get the driver's entry points, not mgpu's hooks) and as
 * libcublas_probe.so (a math library with machine-code kernels, whose
 * device attribute queries must get one GPU's figures). Either looks driver
 * functions up through cuGetProcAddress_v2, as a library's own copy of the
 * CUDA runtime does. PROBE_LOOKUP names the lookup function it exports.
 * Built as NCCL (-DFAKE_NCCL), it also exports ncclGetVersion and
 * ncclCommInitAll, which makes a communicator of nothing: the program's
 * call of the latter is what mgpu-run's audit module watches for. */
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

#ifdef FAKE_NCCL
__attribute__((visibility("default"))) int ncclGetVersion(int *version);
__attribute__((visibility("default"))) int ncclCommInitAll(void **comms, int ndev,
                                                           const int *devlist);

int ncclGetVersion(int *version)
{
    *version = 22800;
    return 0;
}

int ncclCommInitAll(void **comms, int ndev, const int *devlist)
{
    static int communicator;
    (void)devlist;
    for (int i = 0; i < ndev; i++)
        comms[i] = &communicator;
    return 0;
}
#endif
