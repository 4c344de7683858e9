/* The registry of mgpu's hooks: which exported driver symbols mgpu replaces,
 * with what, and where each replacement finds the driver's own function.
 * Both ways into the driver use it: the shim's exported symbols and the
 * pointers cuGetProcAddress hands out. */
#ifndef MGPU_HOOK_TABLE_H
#define MGPU_HOOK_TABLE_H

#include "base/kernel_stats.h"
#include "base/process_state.h"

#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct mgpu_hook {
    const char *name;    /* exact exported symbol, e.g. cuLaunchKernel_ptsz */
    void *hook;          /* mgpu's replacement, same signature */
    void **real;         /* filled with the driver's entry point */
    atomic_ulong *calls; /* calls seen while statistics are on */
};

/* Each hooks file declares one hook with MGPU_DECLARE_HOOK(symbol, PFN type),
 * defines `static CUresult CUDAAPI hook_symbol(...)`, and lists MGPU_HOOK(symbol)
 * in its table, which ends with MGPU_HOOK_END. */
#define MGPU_DECLARE_HOOK(sym, pfn_type)                                                           \
    static pfn_type real_##sym;                                                                    \
    static atomic_ulong calls_##sym
#define MGPU_HOOK(sym)                                                                             \
    {                                                                                              \
#sym, (void *)hook_##sym, (void **)&real_##sym, &calls_##sym                               \
    }
#define MGPU_HOOK_END                                                                              \
    {                                                                                              \
        NULL, NULL, NULL, NULL                                                                     \
    }

/* The stream a _ptsz entry point means: those name the per-thread default
 * stream NULL. */
static inline CUstream mgpu_per_thread_stream(CUstream s)
{
    return s == NULL ? CU_STREAM_PER_THREAD : s;
}

/* The first statement of every hook. In the child of a fork() after the
 * driver was initialised, the hook returns CUDA_ERROR_NOT_INITIALIZED, as
 * the driver itself answers there, before anything of mgpu's (locks held
 * by the parent's threads, workers that do not exist) is touched
 * (process_state.h). Otherwise it counts the call, which costs an atomic
 * add and so happens only for the report. */
#define MGPU_HOOK_ENTRY(sym)                                                                       \
    do {                                                                                           \
        if (atomic_load_explicit(&mgpu_forked_child, memory_order_relaxed))                        \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        mgpu_process_thread_calls_driver();                                                        \
        if (mgpu_stats_enabled)                                                                    \
            atomic_fetch_add_explicit(&calls_##sym, 1, memory_order_relaxed);                      \
    } while (0)

/* The tables of the hooks files. */
extern const struct mgpu_hook mgpu_procaddress_hooks[];
extern const struct mgpu_hook mgpu_virtual_device_hooks[];
extern const struct mgpu_hook mgpu_launch_hooks[];
extern const struct mgpu_hook mgpu_memory_hooks[];
extern const struct mgpu_hook mgpu_context_hooks[];
extern const struct mgpu_hook mgpu_module_hooks[];
extern const struct mgpu_hook mgpu_link_hooks[];
extern const struct mgpu_hook mgpu_copy_hooks[];
extern const struct mgpu_hook mgpu_pointer_hooks[];
extern const struct mgpu_hook mgpu_sync_hooks[];
extern const struct mgpu_hook mgpu_host_function_hooks[];
extern const struct mgpu_hook mgpu_write_hooks[];
extern const struct mgpu_hook mgpu_ipc_hooks[];
extern const struct mgpu_hook mgpu_peer_hooks[];

/* Fills every hook's real pointer from the loaded driver. A hook whose
 * symbol the driver lacks stays unbound and is never handed out. */
void mgpu_hooks_bind(void);

/* The bound hook for an exported name, or NULL. */
const struct mgpu_hook *mgpu_hook_find(const char *name);

/* The bound hook whose driver entry point is `real`, or NULL. */
const struct mgpu_hook *mgpu_hook_find_by_real(const void *real);

/* For the report: calls fn for every hook that was called, with its count. */
void mgpu_hooks_for_each_called(void (*fn)(const char *name, unsigned long calls, void *ctx),
                                void *ctx);

#endif
