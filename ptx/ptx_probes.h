/* Injected probes on the PTX side: what a probe file declares (read off
 * the PTX nvcc makes of a probe written with mgpu/probe.h), and the pass
 * that links the probe files into a module and calls their probes at the
 * entry and exit of the kernels they attach to.
 *
 * A probe file declares itself through variables that mgpu/probe.h emits:
 *   __mgpu_probe_attach_F = "PLACE:GLOB": device function F (taking one
 *     .b32, the block-edge flag) is a probe, called at PLACE: entry or exit
 *     by every thread, block-entry or block-exit by one thread per block,
 *     warp-exit by one thread of each warp's threads leaving together;
 *     PLACE load, store or access (all), optionally "/N" (load/16: in
 *     one access in 16 of each thread), makes F a memory probe, taking the
 *     flag, the .b64 address and a .b32 word saying what the access is
 *     (PTX_PROBE_ACCESS_WORD), called by each thread before each of the
 *     kernel's global (or generic, when the address is global) accesses;
 *     any PLACE may end in "@B" (block-exit@32:, access/16@8:): F runs in
 *     one block in B of each GPU's slice only (block sampling, below);
 *   __mgpu_probe_map_M = {kind, length, record bytes, initial value}: a map
 *     the runtime allocates per GPU, whose address the probe reads from the
 *     .const u64 __mgpu_map_M that the pass declares.
 * These variables are metadata: the pass leaves them out of the module. */
#ifndef MGPU_PTX_PROBES_H
#define MGPU_PTX_PROBES_H

#include "ptx/ptx_module.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ptx_probe_place {
    PTX_PROBE_ENTRY,       /* every thread, at the kernel's entry */
    PTX_PROBE_EXIT,        /* every thread, before each ret/exit */
    PTX_PROBE_BLOCK_ENTRY, /* thread (0,0,0) at entry */
    PTX_PROBE_BLOCK_EXIT,  /* the block's last thread to leave */
    PTX_PROBE_WARP_EXIT,   /* the lowest of the threads of a warp leaving together */
    PTX_PROBE_LOAD,        /* every thread, before each ld, ldu or atom of global memory */
    PTX_PROBE_STORE,       /* every thread, before each st, atom or red of global memory */
    PTX_PROBE_ACCESS,      /* both */
};
#define PTX_PROBE_PLACES 8
/* "entry", "exit", "block-entry", "block-exit", "warp-exit", "load",
 * "store", "access". */
const char *ptx_probe_place_name(enum ptx_probe_place place);
static inline bool ptx_probe_at_exit(enum ptx_probe_place place)
{
    return place == PTX_PROBE_EXIT || place == PTX_PROBE_BLOCK_EXIT || place == PTX_PROBE_WARP_EXIT;
}
static inline bool ptx_probe_at_access(enum ptx_probe_place place)
{
    return place == PTX_PROBE_LOAD || place == PTX_PROBE_STORE || place == PTX_PROBE_ACCESS;
}
/* What a memory probe's third argument says: the access's bytes, its kind,
 * and the kernel parameter whose memory the analysis (ptx_analysis.h) found
 * it reaches, plus one (0: none it could name). */
enum ptx_probe_access_kind { PTX_ACCESS_LOAD = 0, PTX_ACCESS_STORE = 1, PTX_ACCESS_ATOMIC = 2 };
#define PTX_PROBE_ACCESS_WORD(bytes, kind, param_plus_one)                                         \
    ((unsigned)(bytes) | (unsigned)(kind) << 8 | (unsigned)(param_plus_one) << 16)
/* The most accesses a sampled memory probe may skip per one it takes, and
 * the most blocks a block-sampled probe may skip per one it runs in. */
#define PTX_PROBE_MAX_EVERY (1u << 20)
/* Block sampling: a kernel whose probes include block-sampled ones has its
 * body twice. Its sampled blocks run a copy with every probe; the others
 * run the kernel's own code with only the probes that run in every block
 * (none: the code as it was), so a tool sampled in one block in 32 costs
 * a kernel of short blocks a thirty-second of what it costs in all. A
 * block (x, y, z) of the slice, counted from the slice's first block, is
 * sampled when x * PTX_PROBE_SAMPLE_X + y * PTX_PROBE_SAMPLE_Y +
 * z * PTX_PROBE_SAMPLE_Z, mod 2^32, falls in the lowest 1/B of the range:
 * one block in B, spread over the grid (in one dimension, Fibonacci
 * hashing of the index), and always the slice's first. Where a kernel's
 * probes ask for different B, the smallest holds for all of them. Grids
 * of at most MGPU_PTX_PROBE_EVERY_BLOCK_GRID blocks (ptx_passes.h) run
 * probes in every block: there the last block to end may be any block of
 * the grid. */
#define PTX_PROBE_SAMPLE_X 0x9E3779B1u
#define PTX_PROBE_SAMPLE_Y 0x85EBCA77u
#define PTX_PROBE_SAMPLE_Z 0xC2B2AE3Du

enum ptx_probe_map_kind { PTX_PROBE_ARRAY = 1, PTX_PROBE_RING = 2 };

struct ptx_probe {
    char *function;
    char *glob;
    enum ptx_probe_place place;
    unsigned every;  /* a memory probe runs at one in `every` of a thread's accesses; else 1 */
    unsigned blocks; /* runs in one block in `blocks` of a slice (sampled); 1: in every block */
    size_t file;    /* index in the set's files */
};

struct ptx_probe_map {
    char *name;
    enum ptx_probe_map_kind kind;
    uint64_t length;       /* elements of an array, records of a ring */
    uint64_t record_bytes; /* 8 for an array */
    uint64_t initial;      /* every element of an array at start */
    size_t file;
};

struct ptx_probe_file {
    char *name; /* for messages: the file the user named */
    char *ptx;  /* NUL-terminated */
    size_t size;
};

struct ptx_probe_set {
    struct ptx_probe_file *files;
    size_t nfiles;
    struct ptx_probe *probes;
    size_t nprobes;
    struct ptx_probe_map *maps;
    size_t nmaps;
};

/* Where a ring's records start, in 64-bit words: after the count of pushes
 * and the count dropped. */
#define PTX_PROBE_RING_HEADER_WORDS 2
/* Bytes of one GPU's copy of a map, and a ring record's 64-bit words. */
uint64_t ptx_probe_map_bytes(const struct ptx_probe_map *map);
static inline uint64_t ptx_probe_record_words(const struct ptx_probe_map *map)
{
    return (map->record_bytes + 7) / 8;
}

/* Adds a probe file: its PTX (copied) and what it declares. Returns 0, or
 * -1 with a one-line reason naming the file in err: text that is not PTX,
 * no probe in it, a malformed declaration, a map or probe name another
 * file already uses, or a kernel (.entry) in it. */
int ptx_probe_set_add(struct ptx_probe_set *set, const char *name, const char *ptx, size_t size,
                      char *err, size_t errlen);
/* The same for the PTX file at `path` (at most PTX_PROBE_MAX_FILE_BYTES),
 * which mgpu-run checks and the runtime loads; errors name `name`. */
#define PTX_PROBE_MAX_FILE_BYTES (16u << 20)
int ptx_probe_set_add_file(struct ptx_probe_set *set, const char *name, const char *path,
                           char *err, size_t errlen);
void ptx_probe_set_free(struct ptx_probe_set *set);

/* Whether a kernel name matches a probe's glob: its mangled name, or
 * `demangled` when not NULL. */
bool ptx_probe_matches(const struct ptx_probe *probe, const char *mangled, const char *demangled);
/* The block sampling of a kernel these probes (indices into the set)
 * attach to: the smallest `blocks` among them, which holds for all of
 * them; 1 when every one runs in every block. The pass builds the
 * kernel's test from it, the runtime each launch's threshold. */
unsigned ptx_probe_block_sampling(const struct ptx_probe_set *set, const size_t *probes, size_t n);

/* What the pass asks of its caller. */
struct ptx_probe_inject {
    const struct ptx_probe_set *set;
    /* The kernel's name for people, malloc'd, or NULL (then only the
     * mangled name is matched). */
    char *(*demangle)(const char *mangled);
    /* Called once per kernel that probes attach to, with the indexes of
     * those probes in the set; returns the kernel's id (mgpu_kernel_id()). */
    unsigned (*attach)(void *ctx, const char *kernel, const size_t *probes, size_t nprobes);
    void *ctx;
};

/* The symbols the pass declares and the runtime fills per GPU copy. */
#define PTX_PROBE_CLOCK_OFFSET "__mgpu_probe_clock_offset"
#define PTX_PROBE_RUN_START "__mgpu_probe_run_start"
#define PTX_PROBE_MAP_PREFIX "__mgpu_map_"
/* Per block: the launch's sequence number (__mgpu_grid's launch_sequence),
 * the count of threads gone, the kernel id. */
#define PTX_PROBE_BLOCK "__mgpu_probe_block"
/* Per block, declared when a probe file names it: the generic address of
 * each of the kernel's first PTX_PROBE_PARAMS parameters (0 past the last),
 * stored at entry (mgpu_kernel_param()). */
#define PTX_PROBE_PARAMS_SHARED "__mgpu_probe_params"
#define PTX_PROBE_PARAMS 16
/* Declared when a probe file names it: a .const .u64, the device address
 * of the GPU's page map for mgpu_address_owner() (probes/probe_page_map.h),
 * filled by the runtime per GPU copy. */
#define PTX_PROBE_POOL_MAP "__mgpu_pool_map"

/* Links the set's files into m (each parsed into parsed[i], which must
 * outlive m's printing: ptx_module_free them after) and inserts the calls
 * in every kernel a probe attaches to. Runs before the block-offset pass,
 * which then gives the probes the whole grid's block index. Returns 0, or
 * -1 with a one-line reason in err ("out of memory", or a probe symbol
 * that the module defines too). `loops` (may be NULL) names the kernels
 * whose grid-stride loop the block-offset pass rewrites: their bodies are
 * not copied for block sampling, so their block-sampled probes run in
 * every block. */
struct ptx_stride_plan;
int ptx_pass_probes(struct ptx_module *m, const struct ptx_probe_inject *inject,
                    const struct ptx_stride_plan *loops, struct ptx_module *parsed, char *err,
                    size_t errlen);

#endif
