/* Opening an hwloc topology the way mgpu reads it: PCI devices and bridges
 * that matter (KEEP_IMPORTANT), from this machine or an XML file. */
#ifndef MGPU_HWLOC_OPEN_H
#define MGPU_HWLOC_OPEN_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

/* What of a machine hwloc reads: its CPUs, caches and NUMA nodes always;
 * the PCI devices and bridges that matter; and, through NVML, NVLink. */
enum mgpu_hwloc_parts { MGPU_HWLOC_CPUS, MGPU_HWLOC_PCI, MGPU_HWLOC_PCI_NVML };

/* Loads the topology of `xml_path`, or of this machine when it is NULL,
 * with `parts`. hwloc's components that would start a GPU runtime (CUDA,
 * OpenCL, ...) are kept out. Returns 0, or -1 with a one-line message
 * naming the fix. */
int mgpu_hwloc_open(hwloc_topology_t *out, const char *xml_path, enum mgpu_hwloc_parts parts,
                    char *err, size_t errlen);

#endif
