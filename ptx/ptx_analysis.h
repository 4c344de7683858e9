/* The kernel analysis: for each kernel of a PTX module, what it does with
 * the memory its pointer parameters lead to, and whether mgpu can split its
 * grid across GPUs (and, if not, why, in words). */
#ifndef MGPU_PTX_ANALYSIS_H
#define MGPU_PTX_ANALYSIS_H

#include "ptx/ptx_footprint.h"
#include "ptx/ptx_module.h"

/* How a kernel uses the memory derived from a parameter. */
enum mgpu_param_use {
    MGPU_PARAM_LOAD = 1,
    MGPU_PARAM_STORE = 2,
    MGPU_PARAM_ATOMIC = 4,
};

/* Why a kernel cannot be split. */
enum mgpu_unsplittable {
    MGPU_WHY_GRID_SYNC = 1u << 0,
    MGPU_WHY_CLUSTER = 1u << 1,
    MGPU_WHY_TEXTURE = 1u << 2,
    MGPU_WHY_DEVICE_LAUNCH = 1u << 3,
    MGPU_WHY_DEVICE_MALLOC = 1u << 4,
    MGPU_WHY_EXTERNAL_CALL = 1u << 5,
    MGPU_WHY_UNPARSED = 1u << 6,
    MGPU_WHY_GRID_VECTOR = 1u << 7,
    MGPU_WHY_DEPENDENT_LAUNCH = 1u << 8,
    MGPU_WHY_REWRITE = 1u << 9, /* set by callers when the rewrite of the module fails */
    /* Over the analysis's budget (ptx_stride_loop.h, the module's fixpoint):
     * what it does is unknown, so it is kept whole. */
    MGPU_WHY_TOO_COMPLEX = 1u << 10,
    MGPU_WHY_COUNT = 11,
};

/* What is worth knowing about a kernel that can be split. */
enum mgpu_kernel_note {
    MGPU_NOTE_UNKNOWN_STORE = 1u << 0, /* stores through a pointer of unknown origin */
    MGPU_NOTE_UNKNOWN_LOAD = 1u << 1,
    MGPU_NOTE_GLOBALS = 1u << 2, /* uses module (__device__) variables */
    MGPU_NOTE_PRINTF = 1u << 3,
    MGPU_NOTE_SYNC_SCOPE = 1u << 4, /* GPU-scope fences or atomics (made system scope) */
    MGPU_NOTE_READS_GRID = 1u << 5, /* reads %ctaid or %nctaid */
    MGPU_NOTE_CONSTANTS = 1u << 6,  /* reads __constant__ variables */
    /* waits in a loop for memory other blocks write (ptx_block_waits.h) */
    MGPU_NOTE_BLOCK_WAITS = 1u << 7,
    MGPU_NOTE_COUNT = 8,
};

/* A reduction through a parameter that can be privatised (issue 18): the
 * kernel reaches the memory behind it only with atomics whose results it
 * never reads (red.*, or atom.* with a dead destination), all of one
 * operation and one type, so each GPU may update a copy of its own and the
 * copies be combined after the launch. A code is MGPU_REDUCTION(op, type);
 * 0 is none. */
enum mgpu_reduction_op { MGPU_REDUCE_ADD = 1, MGPU_REDUCE_MIN, MGPU_REDUCE_MAX };
enum mgpu_reduction_type {
    MGPU_REDUCE_U32 = 1,
    MGPU_REDUCE_S32,
    MGPU_REDUCE_U64,
    MGPU_REDUCE_S64,
    MGPU_REDUCE_F32,
    MGPU_REDUCE_F64,
};
#define MGPU_REDUCTION(op, type) ((unsigned)(op) << 4 | (unsigned)(type))
#define MGPU_REDUCTION_OP(code) ((code) >> 4)
#define MGPU_REDUCTION_TYPE(code) ((code)&15u)

struct mgpu_kernel_param {
    char *name;
    size_t size;        /* bytes; 0 when unknown */
    bool aggregate;     /* a struct passed by value: uses cover every pointer in it */
    bool floating;      /* a floating-point value, never a pointer */
    unsigned use;       /* enum mgpu_param_use */
    unsigned reduction; /* MGPU_REDUCTION(op, type) when use is atomic only and privatisable */
    /* bytes a link carries per byte used, at most, among the accesses
     * through it: 1 when a warp's accesses fill their sectors, up to 8 for
     * 4-byte accesses a sector per thread (ptx_thread_stride.h) */
    unsigned char scatter;
};

struct mgpu_kernel_info {
    char *name;
    unsigned why;   /* enum mgpu_unsplittable; 0 when it can be split */
    unsigned notes; /* enum mgpu_kernel_note */
    char *detail;   /* the external function, unparsed statement, ... the reason names */
    struct mgpu_kernel_param *params;
    size_t nparams;
    /* The parameter that bounds the kernel's grid-stride loop, which a split
     * launch cuts by iterations (ptx_stride_loop.h); -1 when it has none. */
    int stride_bound_param;
    /* Filled by mgpu_ptx_analyze_accesses only, else NULL: per statement of
     * the kernel's body (nbody of them), the parameter whose memory its
     * global or generic access (ld, ldu, st, atom, red, cp's destination)
     * reaches, or -1: not such an access, several parameters, a pointer of
     * unknown origin, or an access in a function it calls. */
    int *access_param;
    size_t nbody;
    /* What a slice of its grid reads and writes (ptx_footprint.h), for a
     * kernel that can be split; NULL otherwise. */
    struct mgpu_kernel_footprint *footprint;
};

struct mgpu_ptx_analysis {
    struct mgpu_kernel_info *kernels;
    size_t nkernels;
};

/* Analyses every kernel of a parsed module, in time and memory linear in
 * the module (a kernel over the budget is MGPU_WHY_TOO_COMPLEX). Returns 0,
 * or -1 when memory runs out. */
int mgpu_ptx_analyze(const struct ptx_module *module, struct mgpu_ptx_analysis *out);
/* The same, with each kernel's access_param (issue 20's memory probes). */
int mgpu_ptx_analyze_accesses(const struct ptx_module *m, struct mgpu_ptx_analysis *out);
void mgpu_ptx_analysis_free(struct mgpu_ptx_analysis *a);

/* The words for one reason or note bit. */
const char *mgpu_unsplittable_text(unsigned bit);
const char *mgpu_kernel_note_text(unsigned bit);
/* "load, store" for a use mask; "unused" for 0. */
const char *mgpu_param_use_text(unsigned use);
/* "add.u32" for a reduction code; "none" for 0 or a code that is none. */
const char *mgpu_reduction_text(unsigned code);
/* The bytes of one element of the code's type; 0 for no type. */
size_t mgpu_reduction_element_size(unsigned code);

#endif
