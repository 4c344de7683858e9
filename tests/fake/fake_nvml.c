/* A stand-in NVML (libnvidia-ml.so.1) for the launcher's tests: it counts
 * FAKE_NVML_GPUS GPUs (default 1), none in MIG mode, or FAKE_NVML_MIG=1
 * puts them all in it. Just the calls mgpu-run makes. */
#include <stdlib.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

static unsigned fake_count(void)
{
    const char *n = getenv("FAKE_NVML_GPUS");
    return n != NULL ? (unsigned)atoi(n) : 1;
}

FAKE_EXPORT int nvmlInit_v2(void)
{
    return 0;
}

FAKE_EXPORT int nvmlShutdown(void)
{
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned *count)
{
    *count = fake_count();
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device)
{
    if (index >= fake_count())
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *device = (void *)(size_t)(index + 1);
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetMigMode(void *device, unsigned *current, unsigned *pending)
{
    (void)device;
    const char *mig = getenv("FAKE_NVML_MIG");
    *current = *pending = mig != NULL && mig[0] == '1';
    return 0;
}
