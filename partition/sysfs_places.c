/* Owns reading the CPUs the kernel lists as near each GPU's PCI device
 * (sysfs's local_cpulist) and telling whether they are all alike, so that
 * mgpu-run can skip loading hwloc where every GPU sits equally near every
 * CPU (sysfs_places.h). */
#include "partition/sysfs_places.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The list in SYSFS/bus/pci/devices/BUS_ID/local_cpulist, its newline
 * dropped; false where it cannot be read or does not fit. */
static bool read_cpu_list(const char *bus_id, char *out, size_t outlen)
{
    const char *sysfs = getenv("MGPU_SYSFS");
    char path[512];
    snprintf(path, sizeof path, "%s/bus/pci/devices/%s/local_cpulist",
             sysfs != NULL ? sysfs : "/sys", bus_id);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    bool ok = fgets(out, (int)outlen, f) != NULL;
    fclose(f);
    if (!ok)
        return false;
    size_t len = strcspn(out, "\n");
    if (out[len] != '\n' && len + 1 >= outlen)
        return false; /* longer than the buffer */
    out[len] = '\0';
    /* Only a CPU list: digits, commas and ranges. */
    return len > 0 && strspn(out, "0123456789,-") == len;
}

bool mgpu_sysfs_places_alike(struct mgpu_topology *t)
{
    char first[sizeof t->gpus[0].cpus], list[sizeof t->gpus[0].cpus];
    if (t->gpu_count < 1)
        return false;
    for (int i = 0; i < t->gpu_count; i++) {
        if (!t->gpus[i].bus_id[0] || !read_cpu_list(t->gpus[i].bus_id, list, sizeof list))
            return false;
        if (i == 0)
            memcpy(first, list, sizeof first);
        else if (strcmp(first, list) != 0)
            return false;
    }
    for (int i = 0; i < t->gpu_count; i++)
        memcpy(t->gpus[i].cpus, first, sizeof t->gpus[i].cpus);
    return true;
}
