/* Pool memory shared with other processes through the CUDA IPC calls
 * (issue 22, item 4). The driver's legacy IPC handles cover only
 * cuMemAlloc memory, and the pool's is the VMM's, so for a pool pointer
 * mgpu makes its own handle: the exporter's pid and the allocation's pool
 * id. The importing process (under mgpu too: every rank of an MPI job
 * runs under mgpu-run) connects to the exporter over a Unix socket,
 * receives the allocation's physical memory as file descriptors
 * (cuMemExportToShareableHandle), and maps them at an address of its own,
 * laid out as in the exporter; the exporter keeps the allocation where it
 * is from then on (mgpu_pool_share). A process not under mgpu cannot open
 * such a handle: the driver refuses it. */
#ifndef MGPU_POOL_IPC_H
#define MGPU_POOL_IPC_H

#include <cuda.h>
#include <stdbool.h>

/* cuIpcGetMemHandle for a pointer into the pool. */
CUresult mgpu_pool_ipc_export(CUipcMemHandle *handle, CUdeviceptr pointer);

/* Whether `handle` is one of mgpu's (made by mgpu_pool_ipc_export in
 * some process). */
bool mgpu_pool_ipc_is_ours(const CUipcMemHandle *handle);

/* cuIpcOpenMemHandle of one of mgpu's handles: the allocation mapped in
 * this process, accessible from every device of the run (or the current
 * context's), at *pointer. */
CUresult mgpu_pool_ipc_import(CUdeviceptr *pointer, const CUipcMemHandle *handle);

/* cuIpcCloseMemHandle: true with *result when `pointer` is a mapping
 * mgpu_pool_ipc_import made (now unmapped), false otherwise. */
bool mgpu_pool_ipc_close(CUdeviceptr pointer, CUresult *result);

#endif
