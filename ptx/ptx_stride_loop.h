/* Grid-stride loops: finding the one a kernel is built around, and
 * rewriting it so that a GPU running a slice of the grid runs a range of
 * the loop's iterations instead.
 *
 * A grid-stride loop (i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
 * i += gridDim.x * blockDim.x) hands every block elements spread over the
 * whole array, so a slice of blocks touches every GPU's memory. Rewritten,
 * it starts at the slice's first iteration plus the thread's index within
 * the slice, steps by the slice's threads, and stops at the slice's last
 * iteration, so each GPU runs a contiguous part of [0, n) next to its data.
 * That is only the same computation when iterations are independent of one
 * another and of which thread runs them, so the loop is taken only in the
 * exact shape nvcc emits for such loops: one basic block, no register
 * carried from one iteration to the next or out of the loop but i, no
 * barrier, warp-level operation, call or special register inside, bound
 * by a kernel parameter. Anything else is left alone and split by blocks.
 *
 * The rewritten kernel reads __mgpu_grid's iteration words
 * (struct mgpu_grid_param): with iteration_split 0 it computes what the
 * original did, so a launch that sets nothing runs as before. */
#ifndef MGPU_PTX_STRIDE_LOOP_H
#define MGPU_PTX_STRIDE_LOOP_H

#include "ptx/ptx_module.h"

#include <stdbool.h>
#include <stdint.h>

struct ptx_stride_loop {
    struct ptx_str index;        /* i */
    struct ptx_str step;         /* gridDim.x * blockDim.x */
    struct ptx_str bound;        /* n, as the comparisons name it */
    unsigned width;              /* of i: 32 or 64 */
    bool is_signed;              /* the comparisons' type */
    struct ptx_str compare_type; /* "s64", "u32", ... */
    int bound_param;             /* which kernel parameter n was loaded from */
};

/* The most steps (instructions and operand readers visited, values
 * derived) the search spends on one function: about 0.2 s. The search is
 * linear, so only a function of millions of statements, or one built to
 * defeat it, gets near; the largest kernel of CUB's spends about 1% of it. */
#define PTX_STRIDE_LOOP_BUDGET ((uint64_t)1 << 24)

enum ptx_stride_search {
    PTX_STRIDE_NONE,        /* no loop of the shape above */
    PTX_STRIDE_FOUND,
    PTX_STRIDE_TOO_COMPLEX, /* over the budget: unknown, so the kernel is not split */
    PTX_STRIDE_NO_MEMORY,
};

/* Whether kernel f, as parsed (before the block-offset pass), is built
 * around one grid-stride loop of the shape above; fills *loop if so. Time
 * and memory are linear in f; the steps are bounded by the budget. */
enum ptx_stride_search ptx_search_stride_loop(const struct ptx_function *f,
                                              struct ptx_stride_loop *loop);

/* The loops of a module's kernels, searched for once on the module as
 * parsed: the analysis (ptx_analysis.c) reports its loops from the module
 * as parsed, and the runtime cuts a kernel by iterations on its word, but
 * the block-offset pass runs after the module-globals pass has wrapped
 * instructions in blocks, which can change what a new search finds. So
 * the pass rewrites exactly the loops found here, one decision with the
 * analysis's: a kernel over the search's budget (PTX_STRIDE_TOO_COMPLEX,
 * which the analysis reports as too complex to split) has no entry and its
 * loop is left alone. */
struct ptx_stride_plan {
    struct ptx_stride_plan_entry {
        const struct ptx_function *f;
        struct ptx_stride_loop loop;
    } *found; /* in the module's order */
    size_t nfound;
};
/* Returns 0, or -1 when memory runs out (a search's PTX_STRIDE_NO_MEMORY
 * included). */
int ptx_stride_plan_build(const struct ptx_module *m, struct ptx_stride_plan *plan);
void ptx_stride_plan_free(struct ptx_stride_plan *plan);

/* For tests: the allocator the search's index uses (calloc), so that a
 * test can make it fail. */
extern void *(*ptx_stride_loop_calloc)(size_t count, size_t size);

/* After the block-offset pass (which added __mgpu_grid to f): makes the
 * loop found before it run the iterations __mgpu_grid names when its
 * iteration_split word is set. Returns 0, or -1 when memory runs out. */
int ptx_rewrite_stride_loop(struct ptx_module *m, struct ptx_function *f,
                            const struct ptx_stride_loop *loop);

#endif
