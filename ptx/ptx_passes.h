/* The rewriting passes that make a module runnable as one slice of a grid
 * per GPU, and the names they add, which the runtime that loads the
 * rewritten modules relies on. Each pass returns 0, or -1 with a one-line
 * reason in err. */
#ifndef MGPU_PTX_PASSES_H
#define MGPU_PTX_PASSES_H

#include "ptx/ptx_module.h"

#include <stddef.h>

/* The parameter every rewritten kernel takes after its own (struct
 * mgpu_grid_param): the slice's first block (x, y, z) and the full grid
 * (x, y, z); then, for a kernel whose grid-stride loop was rewritten
 * (ptx_stride_loop.h), whether the loop runs a range of iterations and
 * which: [iteration_begin, iteration_end); between them, the launch's
 * sequence number, which injected probes read (ptx_probes.h); last, the
 * most a block's hash may be for block-sampled probes to run in it
 * (ptx_probes.h, block sampling): mgpu_grid_probe_block_threshold. */
#define MGPU_PTX_GRID_PARAM "__mgpu_grid"
#define MGPU_PTX_GRID_PARAM_SIZE 56
#define MGPU_PTX_GRID_SPLIT_OFFSET 24
#define MGPU_PTX_GRID_BEGIN_OFFSET 32
#define MGPU_PTX_GRID_END_OFFSET 40
#define MGPU_PTX_GRID_SEQUENCE_OFFSET 28
#define MGPU_PTX_GRID_BLOCK_THRESHOLD_OFFSET 48

struct mgpu_grid_param {
    unsigned first[3], grid[3];
    unsigned iteration_split, launch_sequence;
    unsigned long long iteration_begin, iteration_end;
    unsigned probe_block_threshold, unused;
};
_Static_assert(sizeof(struct mgpu_grid_param) == MGPU_PTX_GRID_PARAM_SIZE, "__mgpu_grid's layout");
_Static_assert(offsetof(struct mgpu_grid_param, launch_sequence) == MGPU_PTX_GRID_SEQUENCE_OFFSET,
               "__mgpu_grid's layout");
_Static_assert(offsetof(struct mgpu_grid_param, probe_block_threshold) ==
                   MGPU_PTX_GRID_BLOCK_THRESHOLD_OFFSET,
               "__mgpu_grid's layout");

/* Grids of at most this many blocks run block-sampled probes in every
 * block (ptx_probes.h): there the few blocks are all worth timing. */
#define MGPU_PTX_PROBE_EVERY_BLOCK_GRID 4096u

/* The probe_block_threshold of a launch of this whole grid of a kernel
 * whose block-sampled probes run in one block in `sample_blocks` (1: it
 * has none): all ones (every block) for a grid of at most
 * MGPU_PTX_PROBE_EVERY_BLOCK_GRID blocks or a kernel without them, else
 * the top of the lowest 1 / sample_blocks of the hash's range. Decided
 * here, once per launch, so that each block compares its hash with a
 * parameter: the 64-bit product of the grid's sizes in each block's test
 * cost vector_add 3 %, a flag tested besides the hash 0.6 % (one H200). */
static inline unsigned mgpu_grid_probe_block_threshold(const unsigned grid[3],
                                                       unsigned sample_blocks)
{
    unsigned long long blocks = (unsigned long long)grid[0] * grid[1] * grid[2];
    if (sample_blocks <= 1 || blocks <= MGPU_PTX_PROBE_EVERY_BLOCK_GRID)
        return ~0u;
    return (unsigned)(((1ull << 32) + sample_blocks - 1) / sample_blocks - 1);
}
/* A move of %ctaid or %nctaid into a register whose name starts with this
 * (after the %) is left as it is: mgpu's own glue reading the slice's
 * block, not the whole grid's. */
#define PTX_SLICE_REGISTER_PREFIX "__mgpu_slice_"
/* Where kernels leave __mgpu_grid's first 24 bytes for device functions. */
#define MGPU_PTX_GRID_SHARED "__mgpu_grid_shared"
/* A u32 the runtime sets to the GPU's ordinal when it loads the module. */
#define MGPU_PTX_DEVICE_ORDINAL "__mgpu_device_ordinal"
/* u64 addresses of the home module's globals, filled by the runtime. */
#define MGPU_PTX_GLOBALS_TABLE "__mgpu_globals"

struct ptx_stride_plan;
/* loops: the grid-stride loops to rewrite, found on the module as parsed
 * (ptx_stride_plan_build), before any pass. */
int ptx_pass_block_offset(struct ptx_module *m, const struct ptx_stride_plan *loops);
int ptx_pass_scope(struct ptx_module *m);
int ptx_pass_device_ordinal(struct ptx_module *m);

/* What the module-globals pass leaves for the runtime. */
struct ptx_globals_plan {
    char **redirected; /* __mgpu_globals[i] must hold the home address of redirected[i] */
    size_t nredirected;
    char **constants; /* .const variables kept per GPU: refresh from the home copy */
    size_t *constant_sizes;
    size_t nconstants;
};
int ptx_pass_module_globals(struct ptx_module *m, struct ptx_globals_plan *plan, char *err,
                            size_t errlen);
void ptx_globals_plan_free(struct ptx_globals_plan *plan);

#endif
