/* Owns binding runtime threads near their GPU, and the one hwloc topology of
 * this machine that the runtime loads for it. */
#include "thread_binding.h"

#include "hwloc_open.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t machine; /* read-only once loaded: safe from any thread */
static char load_error[256];

static void load_machine(void)
{
    /* No NVML: only the PCI tree is needed, and NVML's start-up is slow. */
    if (mgpu_hwloc_open(&machine, NULL, false, load_error, sizeof load_error) != 0)
        machine = NULL;
}

int mgpu_bind_thread_near_gpu(const char *pci_bus_id, char *err, size_t errlen)
{
    pthread_once(&load_once, load_machine);
    if (machine == NULL) {
        snprintf(err, errlen, "%s", load_error);
        return -1;
    }
    hwloc_obj_t pci =
        pci_bus_id != NULL ? hwloc_get_pcidev_by_busidstring(machine, pci_bus_id) : NULL;
    if (pci == NULL) {
        snprintf(err, errlen,
                 "hwloc does not see the PCI device %s (a VM or container may hide it)",
                 pci_bus_id != NULL ? pci_bus_id : "(none)");
        return -1;
    }
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(machine, pci);
    if (near == NULL || near->cpuset == NULL || hwloc_bitmap_iszero(near->cpuset)) {
        snprintf(err, errlen, "hwloc knows no CPUs near the PCI device %s", pci_bus_id);
        return -1;
    }
    if (hwloc_set_cpubind(machine, near->cpuset, HWLOC_CPUBIND_THREAD) != 0) {
        char cpus[128];
        if (hwloc_bitmap_list_snprintf(cpus, sizeof cpus, near->cpuset) < 0)
            cpus[0] = '\0';
        snprintf(err, errlen, "cannot bind the thread to CPUs %s near %s: %s", cpus, pci_bus_id,
                 strerror(errno));
        return -1;
    }
    return 0;
}
