/* The fake GPU's private header: what its files (tests/fake/fake_*.c,
 * README.md there) share. Device pointers are host addresses; work queued
 * in a stream runs when it is queued, on the queueing thread. */
#ifndef FAKE_GPU_H
#define FAKE_GPU_H

/* The driver's own names, without cuda.h's version macros. */
#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_SMS 100
#define FAKE_DEVICE_MEMORY (1ULL << 30)
#define FAKE_GRANULARITY ((size_t)2 << 20)
#define FAKE_MAX_DEVICES 64

/* --- devices (fake_devices.c) --------------------------------------------- */
extern int fake_visible[FAKE_MAX_DEVICES], fake_visible_count;
extern atomic_bool fake_initialised;
void fake_find_visible(void);
bool fake_device_valid(CUdevice dev);
/* Whether the pair of physical GPUs behind devices a and b is listed in the
 * environment variable `var` ("0-1,2-3"). */
bool fake_devices_listed(const char *var, CUdevice a, CUdevice b);
/* Bytes of device memory in use on `dev`; fake_device_take fails (false)
 * when `bytes` more would not fit. */
bool fake_device_take(CUdevice dev, size_t bytes);
void fake_device_give(CUdevice dev, size_t bytes);
size_t fake_device_used(CUdevice dev);

/* --- calls and injected failures (fake_faults.c) --------------------------- */
/* Counts a call of `name` (after the first cuInit) and says whether it is
 * the one FAKE_CUDA_FAIL_CALL names, which must then fail. */
bool fake_call_fails(const char *name);
void fake_calls_start(void);
unsigned long fake_calls_total(void);

/* An entry point that fails before doing anything. */
#define FAKE_ENTER(name, error)                                                                    \
    do {                                                                                           \
        if (fake_call_fails(name))                                                                 \
            return (error);                                                                        \
    } while (0)
/* An entry point that must be initialised and then may fail. */
#define FAKE_ENTER_INIT(name, error)                                                               \
    do {                                                                                           \
        if (!atomic_load(&fake_initialised))                                                       \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        FAKE_ENTER(name, error);                                                                   \
    } while (0)

/* --- live objects (fake_objects.c) ----------------------------------------- */
enum fake_kind {
    FAKE_PHYSICAL,       /* cuMemCreate handles not released */
    FAKE_PHYSICAL_BYTES, /* their bytes */
    FAKE_MAPPING,        /* cuMemMap ranges not unmapped */
    FAKE_RESERVATION,    /* cuMemAddressReserve ranges not freed */
    FAKE_DEVICE_ALLOCATION,
    FAKE_HOST_ALLOCATION,
    FAKE_STREAM,
    FAKE_EVENT,
    FAKE_MODULE,
    FAKE_PRIMARY_RETAIN, /* cuDevicePrimaryCtxRetain not released */
    FAKE_CONTEXT,        /* cuCtxCreate contexts not destroyed */
    FAKE_KINDS
};
void fake_live(enum fake_kind kind, long delta);

/* A set of live handles of one kind, to tell a live handle from a destroyed
 * or made-up one. */
struct fake_handles {
    pthread_mutex_t lock;
    void **items;
    size_t count, capacity;
};
#define FAKE_HANDLES_INIT                                                                          \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0                                                      \
    }
bool fake_handles_add(struct fake_handles *set, void *handle);
bool fake_handles_remove(struct fake_handles *set, void *handle);
bool fake_handles_has(struct fake_handles *set, void *handle);

/* --- contexts (fake_contexts.c) -------------------------------------------- */
struct fake_stream;
struct fake_context {
    CUdevice device;
    bool primary;
    int retains;                     /* primary: cuDevicePrimaryCtxRetain not released */
    bool made_once;                  /* primary: retained at least once (FAKE_CUDA_CONTEXT_MS) */
    _Atomic uint64_t peers;          /* devices whose memory its kernels may reach */
    struct fake_stream *null_stream; /* the legacy and per-thread default stream */
    _Atomic CUresult sticky;         /* a kernel's fault: every later call returns it */
};
/* The calling thread's current context; with none set, device 0's primary
 * context, as the tests written for the old stand-in driver expect. */
struct fake_context *fake_context_current(void);
/* The context `ctx` names, or NULL. */
struct fake_context *fake_context_of(CUcontext ctx);

/* --- streams and events (fake_streams.c) ----------------------------------- */
/* The stream `s` names (NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD:
 * the current context's default stream), or NULL with *err set. */
struct fake_stream *fake_stream_of(CUstream s, CUresult *err);
struct fake_context *fake_stream_context(const struct fake_stream *s);
/* Runs one operation in stream order: the stream is busy meanwhile. */
void fake_stream_begin(struct fake_stream *s);
void fake_stream_end(struct fake_stream *s);
struct fake_stream *fake_stream_make_default(struct fake_context *ctx);
/* The GPU clock that events read, in microseconds: a kernel takes 2 ms. */
void fake_clock_advance(uint64_t microseconds);
/* FAKE_CUDA_HOST_FUNCS_ASYNC=1: host functions run on threads of their
 * own, and until one returns its stream is held. A call that waits for
 * the whole device (`call` names it: cuCtxSynchronize, cuMemFree, a
 * module load) waits here for every held stream, as the driver does; past
 * FAKE_CUDA_WAIT_SECONDS it prints one line and aborts. */
void fake_wait_for_held_streams(const char *call);

/* --- memory (fake_memory.c, fake_vmm.c) ------------------------------------ */
/* Whether [address, address + bytes) is device memory the fake gave out
 * (allocations, module variables, mapped pinned host memory, mappings). */
bool fake_memory_valid(uint64_t address, size_t bytes);
/* Module variables: zeroed device memory that pointer queries know. */
void *fake_memory_module_variable(size_t bytes, struct fake_context *ctx);
void fake_memory_module_variable_free(void *p);
/* What the VMM layer knows of an address: its mapping's range and device. */
bool fake_vmm_find(uint64_t address, uint64_t *base, size_t *bytes, CUdevice *device,
                   uint64_t *block_id);
bool fake_vmm_valid(uint64_t address, size_t bytes, uint64_t *covered_to);

/* --- modules and kernels (fake_modules.c, fake_kernels.c) ------------------ */
enum fake_kernel_code { FAKE_KERNEL_NONE, FAKE_KERNEL_AXPY, FAKE_KERNEL_FILL };
#define FAKE_MAX_PARAMS 64
struct fake_module;
struct fake_function {
    struct fake_module *module;
    char *name;
    unsigned nparams;
    size_t offsets[FAKE_MAX_PARAMS], sizes[FAKE_MAX_PARAMS];
    bool grid_param; /* the last parameter is mgpu's __mgpu_grid */
    enum fake_kernel_code code;
};
/* The function `f` names (NULL for the magic handles and made-up ones). */
struct fake_function *fake_function_of(CUfunction f);
struct fake_context *fake_function_context(const struct fake_function *f);
/* Whether `f` is one of the magic handles fake_kernel_a/b. */
bool fake_function_is_magic(CUfunction f);

/* mgpu's __mgpu_grid parameter (struct mgpu_grid_param in
 * ptx/ptx_passes.h), kept in step by hand: the fake stays free of
 * mgpu's headers, so that it checks mgpu rather than sharing its mistakes. */
struct fake_grid_param {
    unsigned first[3], grid[3];
    unsigned iteration_split, reserved;
    unsigned long long iteration_begin, iteration_end;
    unsigned reserved2[2];
};
_Static_assert(sizeof(struct fake_grid_param) == 56, "__mgpu_grid's layout");

#endif
