/* Opening an hwloc topology the way mgpu reads it: PCI devices and bridges
 * that matter (KEEP_IMPORTANT), from this machine or an XML file. */
#ifndef MGPU_HWLOC_OPEN_H
#define MGPU_HWLOC_OPEN_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

/* Loads the topology of `xml_path`, or of this machine when it is NULL.
 * hwloc's components that would start a GPU runtime (CUDA, OpenCL, ...)
 * are kept out; NVML, which reports NVLink, only when `with_nvml`. Returns
 * 0, or -1 with a one-line message naming the fix. */
int mgpu_hwloc_open(hwloc_topology_t *out, const char *xml_path, bool with_nvml, char *err,
                    size_t errlen);

#endif
