/* Binding a runtime thread (a per-GPU worker) to the CPUs near its GPU, so
 * that the host memory it touches and the interrupts it waits on stay on
 * the GPU's side of the machine. */
#ifndef MGPU_THREAD_BINDING_H
#define MGPU_THREAD_BINDING_H

#include <stddef.h>

/* Binds the calling thread to the CPUs of the nearest CPU-side object
 * (NUMA node, socket, or the machine) above the GPU's PCI device, found by
 * its bus id ("0000:3b:00.0", as cuDeviceGetPCIBusId writes it). This
 * machine's hwloc topology is loaded once, by the first caller; any thread
 * may call. Returns 0, or -1 with a one-line reason in err (nothing is
 * changed then; the caller reports it and goes on). */
int mgpu_bind_thread_near_gpu(const char *pci_bus_id, char *err, size_t errlen);

#endif
