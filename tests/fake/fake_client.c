/* Drives every way a program reaches the driver, against the fake driver
 * under mgpu-run, and checks each answer. Expects FAKE_EXPECT_GPUS (how many
 * GPUs mgpu-run selected) and MGPU_DRIVER (the fake) in its environment;
 * MGPU_DEVICE_COUNT=one makes it expect one device.
 * Prints one line per check; the exit status is the number of failures. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define EXPECT(cond, what)                                                                         \
    do {                                                                                           \
        if (cond)                                                                                  \
            printf("ok: %s\n", what);                                                              \
        else {                                                                                     \
            printf("FAIL: %s (%s:%d)\n", what, __FILE__, __LINE__);                                \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void *must_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (p == NULL) {
        printf("FAIL: no symbol %s: %s\n", name, dlerror());
        exit(100);
    }
    return p;
}

int main(void)
{
    int gpus = atoi(getenv("FAKE_EXPECT_GPUS") ? getenv("FAKE_EXPECT_GPUS") : "0");
    const char *sm_mode = getenv("MGPU_SM_COUNT");
    const char *count_mode = getenv("MGPU_DEVICE_COUNT");
    int devices = count_mode && strcmp(count_mode, "one") == 0 ? 1 : gpus;
    void *driver = dlopen("libcuda.so.1", RTLD_NOW);
    void *fake = dlopen(getenv("MGPU_DRIVER"), RTLD_NOW | RTLD_NOLOAD);
    if (driver == NULL || fake == NULL) {
        printf("FAIL: cannot open libcuda.so.1 (%p) or the fake (%p): %s\n", driver, fake,
               dlerror());
        return 100;
    }
    EXPECT(driver != fake, "dlopen(\"libcuda.so.1\") gives mgpu's shim, not the driver");
    Dl_info info;
    EXPECT(dladdr(must_sym(driver, "cuInit"), &info) && strstr(info.dli_fname, "libcuda.so"),
           "cuInit comes from a file named libcuda.so*");

    /* Direct dlsym of driver names, as PyTorch and cuBLASLt do. */
    PFN_cuInit_v2000 init = must_sym(driver, "cuInit");
    PFN_cuDeviceGetCount_v2000 count_fn = must_sym(driver, "cuDeviceGetCount");
    PFN_cuDeviceGet_v2000 get_fn = must_sym(driver, "cuDeviceGet");
    PFN_cuDeviceGetAttribute_v2000 attr_fn = must_sym(driver, "cuDeviceGetAttribute");
    PFN_cuDeviceTotalMem_v3020 mem_fn = must_sym(driver, "cuDeviceTotalMem_v2");
    EXPECT(init(0) == CUDA_SUCCESS, "cuInit succeeds");
    int count = -1;
    EXPECT(count_fn(&count) == CUDA_SUCCESS && count == devices,
           "the program sees the devices MGPU_DEVICE_COUNT says");
    CUdevice dev = -1;
    EXPECT(get_fn(&dev, 0) == CUDA_SUCCESS && dev == 0, "cuDeviceGet(0) is the home GPU");
    EXPECT(get_fn(&dev, devices) == CUDA_ERROR_INVALID_DEVICE,
           "cuDeviceGet past the last device is CUDA_ERROR_INVALID_DEVICE");
    if (devices > 1)
        EXPECT(get_fn(&dev, devices - 1) == CUDA_SUCCESS && dev == devices - 1,
               "cuDeviceGet of the last device works");
    int sms = 0;
    int expect_sms = sm_mode && strcmp(sm_mode, "home") == 0 ? 100 : 100 * gpus;
    EXPECT(attr_fn(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) == CUDA_SUCCESS &&
               sms == expect_sms,
           "multiprocessor count follows MGPU_SM_COUNT");
    int other = 0;
    EXPECT(attr_fn(&other, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0) == CUDA_SUCCESS && other == 7,
           "other attributes are the home GPU's");
    size_t mem = 0;
    EXPECT(mem_fn(&mem, 0) == CUDA_SUCCESS && mem == (size_t)gpus << 30,
           "total memory is the sum of the selected GPUs'");
    PFN_cuDeviceGetByPCIBusId_v4010 bus_fn = must_sym(driver, "cuDeviceGetByPCIBusId");
    EXPECT(bus_fn(&dev, "0") == CUDA_SUCCESS && dev == 0, "the home GPU's bus id finds it");
    if (gpus > 1 && devices == 1)
        EXPECT(bus_fn(&dev, "1") == CUDA_ERROR_INVALID_DEVICE,
               "another selected GPU's bus id is not a device of the program's");
    if (gpus > 1 && devices > 1)
        EXPECT(bus_fn(&dev, "1") == CUDA_SUCCESS && dev == 1,
               "another selected GPU's bus id finds that device");
    int other_sms = 0;
    if (devices > 1)
        EXPECT(attr_fn(&other_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1) == 0 &&
                   other_sms == 100,
               "the other devices show their own multiprocessors");

    /* cuGetProcAddress, the CUDA runtime's way in. */
    PFN_cuGetProcAddress_v12000 gpa2 = must_sym(driver, "cuGetProcAddress_v2");
    PFN_cuGetProcAddress_v11030 gpa1 = must_sym(driver, "cuGetProcAddress");
    void *p = NULL;
    CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
    EXPECT(gpa2("cuGetProcAddress", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == 0 &&
               status == CU_GET_PROC_ADDRESS_SUCCESS && p != NULL &&
               p != dlsym(fake, "cuGetProcAddress_v2"),
           "the self-lookup of cuGetProcAddress gives mgpu's hook");
    PFN_cuGetProcAddress_v12000 self = (PFN_cuGetProcAddress_v12000)p;
    EXPECT(self("cuDeviceGetCount", &p, 13000, 0, NULL) == 0 && p != NULL &&
               p != dlsym(fake, "cuDeviceGetCount") &&
               ((PFN_cuDeviceGetCount_v2000)p)(&count) == 0 && count == devices,
           "lookups through the looked-up cuGetProcAddress are hooked, NULL status allowed");
    EXPECT(gpa1("cuDeviceGetCount", &p, 13000, 0) == 0 && p != dlsym(fake, "cuDeviceGetCount") &&
               ((PFN_cuDeviceGetCount_v2000)p)(&count) == 0 && count == devices,
           "the v1 cuGetProcAddress is hooked too");
    EXPECT(gpa2("cuCtxGetCurrent", &p, 13000, 0, &status) == 0 &&
               p == dlsym(driver, "cuCtxGetCurrent") && p != dlsym(fake, "cuCtxGetCurrent"),
           "a function mgpu does not hook is answered with what dlsym on libcuda.so.1 gives");
    EXPECT(gpa2("cuNoSuchFunction", &p, 13000, 0, &status) == CUDA_ERROR_NOT_FOUND &&
               status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
           "an unknown name fails as the driver says");

    unsigned long *launches = must_sym(fake, "fake_launches");
    unsigned long *launches_ptsz = must_sym(fake, "fake_launches_ptsz");
    CUfunction kernel_a = (CUfunction)must_sym(fake, "fake_kernel_a");
    CUfunction kernel_b = (CUfunction)must_sym(fake, "fake_kernel_b");
    void *ptsz = NULL, *legacy = NULL;
    EXPECT(gpa2("cuLaunchKernel", &ptsz, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                NULL) == 0 &&
               ptsz == dlsym(driver, "cuLaunchKernel_ptsz"),
           "the per-thread-stream variant is the shim's cuLaunchKernel_ptsz");
    EXPECT(gpa2("cuLaunchKernel", &legacy, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL) == 0 &&
               legacy == dlsym(driver, "cuLaunchKernel"),
           "the legacy-stream variant is the shim's cuLaunchKernel");
    for (int i = 0; i < 3; i++)
        ((PFN_cuLaunchKernel_v7000_ptsz)ptsz)(kernel_a, 64, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL);
    for (int i = 0; i < 4; i++)
        ((PFN_cuLaunchKernel_v4000)legacy)(kernel_b, 32, 32, 1, 16, 16, 1, 0, NULL, NULL, NULL);
    PFN_cuLaunchKernel_v4000 launch_export = must_sym(driver, "cuLaunchKernel");
    launch_export(kernel_b, 32, 32, 1, 16, 16, 1, 0, NULL, NULL, NULL);
    EXPECT(*launches_ptsz == 3 && *launches == 5,
           "launches reach the driver through hooks, each variant to its own entry point");
    EXPECT(launch_export(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_ERROR_INVALID_HANDLE,
           "a bad launch returns the driver's error");

    PFN_cuMemAlloc_v3020 alloc = must_sym(driver, "cuMemAlloc_v2");
    PFN_cuMemFree_v3020 release = must_sym(driver, "cuMemFree_v2");
    CUdeviceptr a = 0, b = 0;
    EXPECT(alloc(&a, 3 << 20) == 0 && alloc(&b, 1 << 20) == 0 && release(a) == 0,
           "allocations pass through");

    /* Untouched pass-through, and a function this driver does not have. */
    PFN_cuGetExportTable_v3000 table_fn = must_sym(driver, "cuGetExportTable");
    const void *table = NULL;
    CUuuid id = {{0}};
    EXPECT(table_fn(&table, &id) == 0 && table == dlsym(fake, "fake_export_table"),
           "cuGetExportTable passes through untouched");
    PFN_cuGraphCreate_v10000 graph_create = must_sym(driver, "cuGraphCreate");
    CUgraph graph;
    EXPECT(graph_create(&graph, 0) == CUDA_ERROR_NOT_SUPPORTED,
           "a driver function the driver lacks returns CUDA_ERROR_NOT_SUPPORTED");

    /* A library named like NCCL gets the driver's own entry points; with
     * mirrors on, those that may write device memory wrapped, so that its
     * writes reach the replicas' bookkeeping. */
    /* Under mgpu-run, its audit module marks in MGPU_NCCL_SEEN that the
     * program made a communicator with a libnccl* (mirror/nccl_watch.h);
     * binding and calling NCCL's other functions is not marked. */
    const char *seen = getenv("MGPU_NCCL_SEEN");
    char seen_before = seen != NULL ? seen[0] : '\0';
    void *probe = dlopen(getenv("FAKE_NCCL_PROBE"), RTLD_NOW);
    void *(*probe_lookup)(const char *) =
        probe ? (void *(*)(const char *))dlsym(probe, "nccl_probe_lookup") : NULL;
    int (*nccl_version)(int *) = probe ? (int (*)(int *))dlsym(probe, "ncclGetVersion") : NULL;
    int (*comm_init_all)(void **, int, const int *) =
        probe ? (int (*)(void **, int, const int *))dlsym(probe, "ncclCommInitAll") : NULL;
    int nccl_v = 0;
    void *nccl_comm = NULL;
    EXPECT(nccl_version && nccl_version(&nccl_v) == 0 && nccl_v == 22800,
           "NCCL's version call reaches NCCL");
    char seen_bound = seen != NULL ? seen[0] : '\0';
    EXPECT(comm_init_all && comm_init_all(&nccl_comm, 1, NULL) == 0 && nccl_comm != NULL,
           "NCCL's communicator call reaches NCCL");
    if (seen != NULL)
        EXPECT(seen_before == 'w' && seen_bound == 'w' && seen[0] == '1',
               "the audit module marks the program's communicator, not its binding of NCCL");
    const char *mirror = getenv("MGPU_MIRROR"); /* auto when unset */
    if (mirror == NULL || strcmp(mirror, "never") != 0)
        EXPECT(probe_lookup && probe_lookup("cuLaunchKernel") != NULL &&
                   probe_lookup("cuLaunchKernel") != dlsym(fake, "cuLaunchKernel") &&
                   probe_lookup("cuDeviceGetCount") == dlsym(fake, "cuDeviceGetCount"),
               "with mirrors, libnccl* gets a wrapped cuLaunchKernel and the driver's own rest");
    else
        EXPECT(probe_lookup && probe_lookup("cuLaunchKernel") == dlsym(fake, "cuLaunchKernel") &&
                   probe_lookup("cuDeviceGetCount") == dlsym(fake, "cuDeviceGetCount"),
               "lookups from libnccl* pass through to the driver");

    /* A library named like cuBLAS gets mgpu's hooks, but the driver's own
     * device attributes: its kernels run whole on one GPU. */
    void *math = getenv("FAKE_CUBLAS_PROBE") ? dlopen(getenv("FAKE_CUBLAS_PROBE"), RTLD_NOW) : NULL;
    void *(*math_lookup)(const char *) =
        math ? (void *(*)(const char *))dlsym(math, "cublas_probe_lookup") : NULL;
    if (math_lookup != NULL) {
        PFN_cuDeviceGetAttribute_v2000 math_attr =
            (PFN_cuDeviceGetAttribute_v2000)math_lookup("cuDeviceGetAttribute");
        int math_sms = 0;
        EXPECT(math_attr == dlsym(fake, "cuDeviceGetAttribute") &&
                   math_attr(&math_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) ==
                       CUDA_SUCCESS &&
                   math_sms == 100,
               "libcublas* sees one GPU's multiprocessors");
        EXPECT(math_lookup("cuDeviceTotalMem") == dlsym(fake, "cuDeviceTotalMem_v2"),
               "libcublas* sees one GPU's memory");
        EXPECT(math_lookup("cuLaunchKernel") != NULL &&
                   math_lookup("cuLaunchKernel") != dlsym(fake, "cuLaunchKernel"),
               "libcublas*'s other lookups are hooked");
        sms = 0;
        EXPECT(attr_fn(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) == CUDA_SUCCESS &&
                   sms == expect_sms,
               "the program still sees the multiprocessors MGPU_SM_COUNT says");
    }
    printf("%d failure(s)\n", failures);
    return failures;
}
