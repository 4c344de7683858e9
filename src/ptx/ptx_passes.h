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
 * sequence number, which injected probes read (ptx_probes.h). */
#define MGPU_PTX_GRID_PARAM "__mgpu_grid"
#define MGPU_PTX_GRID_PARAM_SIZE 48
#define MGPU_PTX_GRID_SPLIT_OFFSET 24
#define MGPU_PTX_GRID_BEGIN_OFFSET 32
#define MGPU_PTX_GRID_END_OFFSET 40
#define MGPU_PTX_GRID_SEQUENCE_OFFSET 28

struct mgpu_grid_param {
    unsigned first[3], grid[3];
    unsigned iteration_split, launch_sequence;
    unsigned long long iteration_begin, iteration_end;
};
_Static_assert(sizeof(struct mgpu_grid_param) == MGPU_PTX_GRID_PARAM_SIZE, "__mgpu_grid's layout");
_Static_assert(offsetof(struct mgpu_grid_param, launch_sequence) == MGPU_PTX_GRID_SEQUENCE_OFFSET,
               "__mgpu_grid's layout");
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
