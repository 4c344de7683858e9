/* Between the topology loaders: what hwloc adds to GPUs that the CUDA
 * driver (topology_driver.c) or NVML (topology_nvml.c) listed. Not for use
 * outside partition/. */
#ifndef MGPU_TOPOLOGY_HWLOC_H
#define MGPU_TOPOLOGY_HWLOC_H

#include "partition/topology.h"

/* Loads this machine's hwloc topology and fills, for the GPUs of t that have
 * a bus id, their NUMA node, socket and CPUs, and with `pci_paths` the PCIe
 * path class of each pair and any NVLink bandwidth hwloc knows (reading
 * the PCI devices, and NVML through hwloc, cost most of the load: without
 * them each GPU's place comes from the CPUs the kernel lists as near its
 * PCI device); also the NUMA nodes and where the process runs. Returns 0,
 * or -1 with a one-line reason in `why` (the model is then left with
 * places unknown). */
int mgpu_topology_read_machine_places(struct mgpu_topology *t, bool pci_paths, char *why,
                                      size_t whylen);

/* The places as above (a failure said in t->note; without PCIe paths and
 * where the kernel lists the same CPUs near every GPU, those lists alone,
 * t->places_alike, hwloc not loaded), then the loader's last
 * word on each pair: no peer access either way (peer 0; -1 is unknown)
 * makes it `none` whatever hwloc says, and NVLink evidence both ways
 * (nvlink) makes it NVLink where hwloc knows none. */
void mgpu_topology_place_and_link(struct mgpu_topology *t,
                                  const int (*peer)[MGPU_TOPOLOGY_MAX_GPUS],
                                  const bool (*nvlink)[MGPU_TOPOLOGY_MAX_GPUS], bool pci_paths);

#endif
