/* Owns binding runtime threads near their GPU, and the one hwloc topology of
 * this machine that the runtime loads for it. */
#include "partition/thread_binding.h"

#include "partition/hwloc_open.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t machine; /* read-only once loaded: safe from any thread */
static char load_error[256];
static atomic_bool loaded, preparing;

static void load_machine(void)
{
    /* No NVML: only the PCI tree is needed, and NVML's start-up is slow. */
    if (mgpu_hwloc_open(&machine, NULL, MGPU_HWLOC_PCI, load_error, sizeof load_error) != 0)
        machine = NULL;
    atomic_store_explicit(&loaded, true, memory_order_release);
}

static void *load_in_background(void *arg)
{
    (void)arg;
    pthread_once(&load_once, load_machine);
    return NULL;
}

static pthread_t loader;
static pid_t loader_pid;

/* At exit, the loader is waited for: its hwloc start (which initialises
 * Xlib's threads: Debian's libhwloc calls XInitThreads) then happens
 * before the libraries' destructors run on the exiting thread (libX11's
 * calls XFreeThreads), which ThreadSanitizer otherwise reported as a race.
 * An exit handler registered before main runs after the destructors, so
 * the loader must be started once the program runs. Not in a forked
 * child, which has no such thread. */
static void join_loader(void)
{
    if (getpid() == loader_pid)
        pthread_join(loader, NULL);
}

void mgpu_thread_binding_prepare(void)
{
    if (atomic_exchange(&preparing, true))
        return;
    loader_pid = getpid();
    if (pthread_create(&loader, NULL, load_in_background, NULL) != 0) {
        atomic_store(&preparing, false); /* the first binding loads it then */
        return;
    }
    atexit(join_loader);
}

bool mgpu_thread_binding_ready(void)
{
    return atomic_load_explicit(&loaded, memory_order_acquire);
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
