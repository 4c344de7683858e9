/* Injected probes inside the program: the probe files mgpu-run compiled
 * (MGPU_PROBES), each GPU's copy of their maps, the kernels they attach
 * to, the launches' sequence numbers and host times, and, at exit, the
 * maps read back and handed to the tables and the JSON Lines file.
 *
 * The rewritten modules call in here: a module is rewritten with the probes
 * (mgpu_probes_inject) and each GPU's rewritten module gets its map addresses and
 * clock offset (mgpu_probes_fill_module). */
#ifndef MGPU_PROBE_RUNTIME_H
#define MGPU_PROBE_RUNTIME_H

#include "base/config.h"
#include "ptx/ptx_probes.h"

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Reads the probe files of MGPU_PROBES (comma-separated PTX paths, each
 * as NAME=PATH where mgpu-run names it); `out` is where the results go as
 * JSON Lines at exit (MGPU_PROBE_OUT), or empty; `started` is called once,
 * when the first GPU's maps are made (inside the program, after the CUDA
 * runtime started): the caller's exit work, registered then, runs before
 * the runtime's own exit handlers destroy the contexts that hold the maps.
 * Returns 0 (also for an empty list), or -1 with a one-line reason in err. */
int mgpu_probes_load(const char *list, const char *out, void (*started)(void), char *err,
                     size_t errlen);

/* Whether probes were loaded: rewritten modules are then made with one GPU
 * too, and launches from them numbered. */
bool mgpu_probes_on(void);

/* What the rewrite needs to link the probes in; NULL when none. */
const struct ptx_probe_inject *mgpu_probes_inject(void);

/* For GPU `gpu`'s rewritten module `module`, loaded in the current context: its maps
 * (made, and the clock measured, at the GPU's first rewritten module) and clock
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
 * tool's table and the maps on stderr, hands them to the reader set
 * (below) and writes MGPU_PROBE_OUT. */
void mgpu_probes_finish(void);

/* Whether a loaded probe file declares a map named `name` (a tool's
 * mark: "fc_lowest" for footprint-check). */
bool mgpu_probes_declare_map(const char *name);

struct mgpu_probe_results;
/* A reader of the maps at exit, from a layer above this one (the
 * footprint check: sched/footprint_record.c), called after the tables
 * with the results and stderr. One; a second replaces the first. */
void mgpu_probes_set_reader(void (*reader)(const struct mgpu_probe_results *r, FILE *out));

/* Launches whose host time and kernel are kept for the tables. */
#define MGPU_PROBE_MAX_LAUNCHES (1u << 18)
/* Kernels probes may attach to. */
#define MGPU_PROBE_MAX_KERNELS 256

#endif
