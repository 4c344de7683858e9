/* The GPUs' places from the kernel's lists of the CPUs near each PCI
 * device (sysfs), without hwloc. */
#ifndef MGPU_PARTITION_SYSFS_PLACES_H
#define MGPU_PARTITION_SYSFS_PLACES_H

#include "partition/topology.h"

#include <stdbool.h>

/* Whether the kernel lists the same CPUs as near every GPU of t (by bus
 * id, SYSFS/bus/pci/devices/ID/local_cpulist, SYSFS being /sys or
 * MGPU_SYSFS for the tests): then each GPU's cpus is set to that list and
 * no GPU is nearer the process than another, so the GPUs' NUMA nodes and
 * sockets decide nothing and hwloc need not be loaded. False, with t
 * unchanged, where a list is missing, unreadable or differs. */
bool mgpu_sysfs_places_alike(struct mgpu_topology *t);

#endif
