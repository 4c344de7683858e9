/* Injected probes inside the program: the probe files mgpu-run compiled
 * (MGPU_PROBES), each GPU's copy of their maps, the kernels they attach
 * to, the launches' sequence numbers and host times, and, at exit, the
 * maps read back and handed to the tables and the JSON Lines file.
 *
 * The module copies call in here: a module is rewritten with the probes
 * (mgpu_probes_inject) and each GPU's copy gets its map addresses and
 * clock offset (mgpu_probes_fill_module). */
#ifndef MGPU_PROBE_RUNTIME_H
#define MGPU_PROBE_RUNTIME_H

#include "base/config.h"
#include "ptx/ptx_probes.h"

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

/* Reads the probe files of MGPU_PROBES (comma-separated PTX paths, each
 * as NAME=PATH where mgpu-run names it); `out` is where the results go as
 * JSON Lines at exit (MGPU_PROBE_OUT), or empty; `started` is called once,
 * when the first GPU's maps are made (inside the program, after the CUDA
 * runtime started): the caller's exit work, registered then, runs before
 * the runtime's own exit handlers destroy the contexts that hold the maps.
 * Returns 0 (also for an empty list), or -1 with a one-line reason in err. */
int mgpu_probes_load(const char *list, const char *out, void (*started)(void), char *err,
                     size_t errlen);

/* Whether probes were loaded: module copies are then made with one GPU
 * too, and launches from them numbered. */
bool mgpu_probes_on(void);

/* What the rewrite needs to link the probes in; NULL when none. */
const struct ptx_probe_inject *mgpu_probes_inject(void);

/* For GPU `gpu`'s copy `module`, loaded in the current context: its maps
 * (made, and the clock measured, at the GPU's first copy) and clock
 * offset. Returns 0, or -1 with a reason in err. */
int mgpu_probes_fill_module(CUmodule module, int gpu, char *err, size_t errlen);

/* A module whose kernels cannot be probed (no PTX, a rewrite the JIT
 * refuses, ...): said in the tables. */
void mgpu_probes_module_unprobed(int module, const char *loaded_by, const char *why);

/* The next launch's sequence number (from 1), its host time and kernel
 * recorded, and its blocks' size (threads) among the kernel's; 0 when
 * probes are off. *sample_blocks: the kernel's block sampling
 * (ptx_probe_block_sampling), left as it is when probes are off or none
 * attach to the kernel. */
unsigned mgpu_probes_launch(const char *kernel, unsigned block_threads, unsigned *sample_blocks);

/* Just before a split launch's slices start, after mgpu made the replicas
 * they read and moved pages for them: the page map memory probes read
 * brought up to date (probe_page_map.h). */
void mgpu_probes_before_slices(void);

/* At exit: waits for the GPUs with maps, reads them back, prints each
 * tool's table and the maps on stderr and writes MGPU_PROBE_OUT. */
void mgpu_probes_finish(void);

/* Launches whose host time and kernel are kept for the tables. */
#define MGPU_PROBE_MAX_LAUNCHES (1u << 18)
/* Kernels probes may attach to. */
#define MGPU_PROBE_MAX_KERNELS 256

/* What the tables and the JSON Lines writer read (probe_tables.h). */
struct mgpu_probe_kernel {
    char *name;   /* mangled */
    char *pretty; /* demangled */
    uint64_t probes; /* bit i: the set's probe i is called in it (the first 64) */
    unsigned sample_blocks; /* its block-sampled probes run in one block in this; 1: none */
    /* the fewest and most threads of its launches' blocks; 0, 0: none launched */
    unsigned block_threads_min, block_threads_max;
};

struct mgpu_probe_results {
    const struct ptx_probe_set *set;
    int ngpus;
    const int *gpu_devices;           /* the device each GPU stands on */
    uint64_t *maps[MGPU_MAX_GPUS];    /* each GPU's maps back to back; NULL: never loaded */
    const uint64_t *map_offset;       /* per map, in 64-bit words */
    const struct mgpu_probe_kernel *kernels;
    unsigned nkernels;
    const uint64_t *launch_host_ns;   /* per sequence number */
    const int32_t *launch_kernel;     /* per sequence number; -1 for a kernel not probed */
    uint64_t launches;                /* sequence numbers given */
    uint64_t launches_kept;           /* of them, with host time and kernel */
    uint64_t run_start_ns;            /* mgpu_run_ns()'s zero on the host clock */
    const char (*unprobed)[200]; /* one line per module that runs unprobed */
    size_t nunprobed;
    int64_t clock_error_ns[MGPU_MAX_GPUS];
    double cycles_per_ns[MGPU_MAX_GPUS];
    uint64_t timer_step_ns[MGPU_MAX_GPUS];
};

/* Map `name` of GPU `gpu`: its words and their number (an array's
 * elements; a ring's header and records), or NULL. */
const uint64_t *mgpu_probe_results_map(const struct mgpu_probe_results *r, const char *name,
                                       int gpu, uint64_t *words);

#endif
