/* Footprints (issue 45): for each pointer a kernel reaches through its
 * parameters, the bytes a slice of its grid (a range of blocks along one
 * dimension) may read and may write, derived from the PTX once per kernel
 * and instantiated per launch with the launch's grid, block and parameter
 * values.
 *
 * Each register written once in the body has its value as an expression
 * (a small DAG) over %tid, %ntid, %ctaid, %nctaid, scalar parameters and
 * constants: add, sub, mul, mad, shl by a constant, the wide forms, min,
 * max, selp, division, remainder and shifts right by a positive constant,
 * and with a non-negative mask, and conversions between integer widths
 * (a 32-bit value is exact only while it fits its type: past that, its
 * whole range). A register written more than once has, where a statement
 * outside every loop reads it, the value of its only unguarded write
 * before that statement, if there is exactly one (nvcc reuses registers:
 * reduce_sum's thread index becomes a loop's counter). Everything else (a
 * value loaded from memory, a loop's counter read in the loop, floating
 * point) is unknown. A
 * global access's address is split into the pointer it adds to (a 64-bit
 * parameter, or 8 bytes of a struct passed by value: a slot) and an
 * offset; at a launch the offset's interval over the slice's threads gives
 * the bytes, from the lowest offset to past the highest plus the access's
 * size. An access whose offset is unknown but whose pointer the kernel
 * analysis traced to a parameter (through a loop's pointer, say) makes
 * that parameter's use the whole buffer; one it cannot attribute at all
 * (a pointer loaded from memory, a call, an instruction not followed)
 * makes the whole kernel unknown: every buffer whole. Sound by
 * construction, not tight: a slot's bytes are the hull of its accesses'.
 * No driver. */
#ifndef MGPU_PTX_FOOTPRINT_H
#define MGPU_PTX_FOOTPRINT_H

#include "ptx/ptx_module.h"

#include <stdbool.h>
#include <stddef.h>

enum mgpu_fp_op {
    MGPU_FP_TOP,     /* unknown */
    MGPU_FP_SYMBOL,  /* a variable's address (shared, local, a module global): not a parameter's */
    MGPU_FP_CONST,   /* value */
    MGPU_FP_SPECIAL, /* value: enum mgpu_fp_special */
    MGPU_FP_PARAM,   /* `bytes` at `offset` of parameter `value`, signed or not */
    MGPU_FP_ADD,     /* a + b */
    MGPU_FP_SUB,     /* a - b */
    MGPU_FP_MUL,     /* a * b */
    MGPU_FP_MIN,     /* min(a, b) */
    MGPU_FP_MAX,     /* max(a, b) */
    MGPU_FP_SELECT,  /* a or b */
    MGPU_FP_DIV,     /* a / value (value > 0; is_signed: floor when `floor`, else truncated) */
    MGPU_FP_REM,     /* a % value (value > 0) */
    MGPU_FP_AND,     /* a & value (value >= 0) */
    MGPU_FP_WRAP,    /* a as an integer of `bytes` bytes, signed or not */
};

enum mgpu_fp_special {
    MGPU_FP_TID_X,
    MGPU_FP_TID_Y,
    MGPU_FP_TID_Z,
    MGPU_FP_NTID_X,
    MGPU_FP_NTID_Y,
    MGPU_FP_NTID_Z,
    MGPU_FP_CTAID_X,
    MGPU_FP_CTAID_Y,
    MGPU_FP_CTAID_Z,
    MGPU_FP_NCTAID_X,
    MGPU_FP_NCTAID_Y,
    MGPU_FP_NCTAID_Z,
    MGPU_FP_SPECIAL_COUNT,
};

/* How an access uses memory: the same bits as ptx_analysis.h's
 * mgpu_param_use (which the analysis checks), kept here so that this
 * file needs nothing of the analysis. */
enum mgpu_fp_use { MGPU_FP_LOAD = 1, MGPU_FP_STORE = 2, MGPU_FP_ATOMIC = 4 };

struct mgpu_fp_node {
    unsigned char op;    /* enum mgpu_fp_op */
    unsigned char bytes; /* PARAM, WRAP */
    bool is_signed;      /* PARAM, WRAP, DIV */
    bool floor;          /* DIV: rounds down (a shift), not towards zero (a division) */
    int a, b;            /* operands, node indices */
    long long value;     /* CONST, SPECIAL, PARAM (the parameter's index), DIV, REM, AND */
    unsigned offset;     /* PARAM: bytes into the parameter */
};

/* A pointer the kernel's accesses add to: the 8 bytes at `offset` of
 * parameter `param` (offset 0 of a plain pointer parameter). */
struct mgpu_fp_slot {
    int param;
    unsigned offset;
    /* uses (enum mgpu_fp_use bits) of accesses whose offsets could not be
     * followed: the whole buffer for them */
    unsigned whole;
};

struct mgpu_fp_access {
    int slot;
    unsigned use;   /* enum mgpu_fp_use: load, store or atomic */
    int offset;     /* node: bytes past the slot's pointer */
    unsigned bytes; /* bytes accessed from there */
    size_t stmt;    /* the statement's index in the kernel's body */
};

struct mgpu_kernel_footprint {
    /* an access the analysis could not attribute to a parameter: every
     * buffer the launch can reach may be read and written anywhere */
    bool unknown;
    char reason[96]; /* why, in words, when unknown */
    struct mgpu_fp_slot *slots;
    size_t nslots;
    struct mgpu_fp_access *accesses;
    size_t naccesses;
    struct mgpu_fp_node *nodes;
    size_t nnodes;
};

/* The footprint of kernel f (a definition). `access_param` is the kernel
 * analysis's per statement (mgpu_kernel_info's, from
 * mgpu_ptx_analyze_accesses), or NULL. Returns 0, or -1 when memory runs
 * out (out then holds nothing). Linear in the body. */
int mgpu_ptx_footprint(const struct ptx_function *f, const int *access_param,
                       struct mgpu_kernel_footprint *out);
void mgpu_kernel_footprint_free(struct mgpu_kernel_footprint *fp);

/* Node n as text ("4*sext32(ctaid.x*ntid.x + tid.x) + 1024"), cut with
 * "..." to fit; returns buf. */
const char *mgpu_fp_node_text(const struct mgpu_kernel_footprint *fp, int n, char *buf,
                              size_t size);

/* A launch, for instantiating footprints. */
struct mgpu_fp_launch {
    unsigned grid[3], block[3];
    void *const *params;      /* the launch's parameter values, as cuLaunchKernel takes them */
    const size_t *param_size; /* their sizes */
    size_t nparams;
};

/* Bytes past a slot's pointer: [lo, hi), or the whole buffer. */
struct mgpu_fp_range {
    bool whole;
    bool any; /* some access of this kind; else lo == hi == 0 */
    long long lo, hi;
};

/* For the slice of blocks [begin, end) along grid dimension `dim` (0 x,
 * 1 y, 2 z), each slot's bytes read (loads and atomics) into reads[] and
 * written (stores and atomics) into writes[], fp->nslots of each. With
 * fp->unknown, every range is whole. */
void mgpu_fp_slice(const struct mgpu_kernel_footprint *fp, const struct mgpu_fp_launch *l, int dim,
                   unsigned begin, unsigned end, struct mgpu_fp_range *reads,
                   struct mgpu_fp_range *writes);

/* The interval of node n at a launch for that slice, into [*lo, *hi];
 * false when unbounded. For the tests and mgpu-ptx. */
bool mgpu_fp_node_bounds(const struct mgpu_kernel_footprint *fp, int n,
                         const struct mgpu_fp_launch *l, int dim, unsigned begin, unsigned end,
                         long long *lo, long long *hi);

#endif
