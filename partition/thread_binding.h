/* Binding a runtime thread (a per-GPU worker) to the CPUs near its GPU, so
 * that the host memory it touches and the interrupts it waits on stay on
 * the GPU's side of the machine. */
#ifndef MGPU_THREAD_BINDING_H
#define MGPU_THREAD_BINDING_H

#include <stdbool.h>
#include <stddef.h>

/* Binds the calling thread to the CPUs of the nearest CPU-side object
 * (NUMA node, socket, or the machine) above the GPU's PCI device, found by
 * its bus id ("0000:3b:00.0", as cuDeviceGetPCIBusId writes it). This
 * machine's hwloc topology is loaded once, by the first caller; any thread
 * may call. Returns 0, or -1 with a one-line reason in err (nothing is
 * changed then; the caller reports it and goes on). */
int mgpu_bind_thread_near_gpu(const char *pci_bus_id, char *err, size_t errlen);

/* Starts loading the topology on a thread of its own (once) and returns at
 * once: the load takes tens of milliseconds, which a GPU's first split
 * slice waited for when its worker bound itself before its first job (the
 * slice started 27 to 33 ms late on 4 x H200). Call it once the program's
 * main has started (it registers an exit handler that must run before the
 * libraries' destructors), not from a library constructor. */
void mgpu_thread_binding_prepare(void);
/* Whether the topology is loaded (or failed to), so that binding will not
 * wait for it. */
bool mgpu_thread_binding_ready(void);

#endif
