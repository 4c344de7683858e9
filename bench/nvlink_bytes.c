/* nvlink_bytes: prints on stdout the bytes that the GPUs of this machine have
 * sent over NVLink since the driver loaded: NVML's NVLink data counters
 * (field NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, in KiB, payload only) summed
 * over every active link of every GPU; or "n/a" where there is no NVML, no
 * NVLink, or no such counter (some VMs). bench/run-scaling.sh reads it
 * before and after each run; the difference is what the run moved between
 * GPUs (each byte is sent once, by the GPU that holds it or writes it).
 *
 * NVML documents scopeId as the link for these counters. Some drivers are
 * reported to give every link the GPU's total instead; where all of a GPU's
 * active links read exactly the same, the value is counted once.
 * `--per-link` also writes every GPU's and link's reading on stderr, to see
 * which a driver does.
 *
 * NVML is opened with dlopen, so that building this needs neither nvml.h
 * nor libnvidia-ml (neither comes with every CUDA toolkit); the few
 * declarations below follow NVML's published interface. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define NVML_SUCCESS 0
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG 4
#define MAX_LINKS 18 /* NVLink links per GPU on Hopper, the most so far */

typedef struct nvml_device *nvml_device;

/* NVML's nvmlFieldValue_t. */
struct nvml_field_value {
    unsigned int field_id;
    unsigned int scope_id;
    long long timestamp;
    long long latency_us;
    int value_type;
    int nvml_return;
    union {
        double d;
        unsigned int ui;
        unsigned long ul;
        unsigned long long ull;
        long long sll;
    } value;
};

struct nvml {
    int (*init)(void);
    int (*shutdown)(void);
    int (*device_count)(unsigned int *count);
    int (*device_by_index)(unsigned int index, nvml_device *device);
    int (*link_state)(nvml_device device, unsigned int link, int *active);
    int (*field_values)(nvml_device device, int count, struct nvml_field_value *values);
};

static int load_nvml(struct nvml *nvml)
{
    void *library = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (library == NULL)
        return 0;
    *(void **)&nvml->init = dlsym(library, "nvmlInit_v2");
    *(void **)&nvml->shutdown = dlsym(library, "nvmlShutdown");
    *(void **)&nvml->device_count = dlsym(library, "nvmlDeviceGetCount_v2");
    *(void **)&nvml->device_by_index = dlsym(library, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&nvml->link_state = dlsym(library, "nvmlDeviceGetNvLinkState");
    *(void **)&nvml->field_values = dlsym(library, "nvmlDeviceGetFieldValues");
    return nvml->init && nvml->shutdown && nvml->device_count && nvml->device_by_index &&
           nvml->link_state && nvml->field_values;
}

/* The counter's value in KiB, or -1 when it cannot be read. */
static long long counter_kib(const struct nvml_field_value *v)
{
    if (v->nvml_return != NVML_SUCCESS)
        return -1;
    switch (v->value_type) {
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        return (long long)v->value.ul;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        return (long long)v->value.ull;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        return v->value.sll;
    default:
        return -1;
    }
}

/* Adds GPU `device`'s sent KiB to *total; returns 0 when it has no readable
 * counter on any active link. */
static int add_gpu_kib(const struct nvml *nvml, unsigned int index, nvml_device device,
                       int per_link, unsigned long long *total)
{
    struct nvml_field_value values[MAX_LINKS];
    int links = 0;
    for (unsigned int link = 0; link < MAX_LINKS; link++) {
        int active = 0;
        if (nvml->link_state(device, link, &active) != NVML_SUCCESS || !active)
            continue;
        memset(&values[links], 0, sizeof values[links]);
        values[links].field_id = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
        values[links].scope_id = link;
        links++;
    }
    if (links == 0 || nvml->field_values(device, links, values) != NVML_SUCCESS)
        return 0;
    unsigned long long sum = 0;
    int all_equal = 1;
    for (int k = 0; k < links; k++) {
        long long kib = counter_kib(&values[k]);
        if (kib < 0)
            return 0;
        if (per_link)
            fprintf(stderr, "GPU %u link %u: %lld KiB sent\n", index, values[k].scope_id, kib);
        all_equal = all_equal && kib == counter_kib(&values[0]);
        sum += (unsigned long long)kib;
    }
    *total += links > 1 && all_equal ? (unsigned long long)counter_kib(&values[0]) : sum;
    return 1;
}

int main(int argc, char **argv)
{
    int per_link = argc > 1 && strcmp(argv[1], "--per-link") == 0;
    if (argc > 2 || (argc == 2 && !per_link)) {
        fprintf(stderr, "usage: nvlink_bytes [--per-link]\n");
        return 2;
    }
    struct nvml nvml;
    unsigned int gpus = 0;
    if (!load_nvml(&nvml) || nvml.init() != NVML_SUCCESS) {
        puts("n/a");
        return 0;
    }
    unsigned long long total_kib = 0;
    int readable = nvml.device_count(&gpus) == NVML_SUCCESS && gpus > 0;
    for (unsigned int g = 0; readable && g < gpus; g++) {
        nvml_device device;
        readable = nvml.device_by_index(g, &device) == NVML_SUCCESS &&
                   add_gpu_kib(&nvml, g, device, per_link, &total_kib);
    }
    nvml.shutdown();
    if (readable)
        printf("%llu\n", total_kib * 1024);
    else
        puts("n/a");
    return 0;
}
