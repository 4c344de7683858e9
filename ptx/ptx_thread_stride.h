/* How far apart neighbouring threads' global accesses lie (issue 19's
 * split estimate): per parameter of a kernel, whether a warp's accesses
 * through it fill the 32-byte sectors they touch (y[i] with i the thread's
 * index: one sector for eight floats) or take a sector per thread (a
 * column of a row-major matrix, out[x * height + y], as a naive transpose
 * stores). A sector per thread costs little more than whole sectors on
 * local memory but crosses a link as a sector per 4 bytes.
 *
 * The address of each access is followed back through the kernel's body as
 * an expression in %tid.x: independent of it, %tid.x times a constant
 * (bytes between neighbouring threads), %tid.x times a value known only at
 * run time (a row's pitch), or anything else (loaded, divided, ...: not
 * counted). A register written more than once (a loop's) must agree in all
 * its writes. What one thread's accesses through the same address (a
 * register plus constants) use of the gap to its neighbour counts together:
 * a thread that reads all of its 32 bytes in four loads fills its sector,
 * both fields of an 8-byte pair fill theirs. No driver; linear in the body
 * but for the accesses found apart, compared in pairs. */
#ifndef MGPU_PTX_THREAD_STRIDE_H
#define MGPU_PTX_THREAD_STRIDE_H

#include "ptx/ptx_module.h"

/* A warp's 32-byte sector: what a link carries per access at the least. */
#define PTX_SECTOR_BYTES 32

/* For kernel f (a definition) whose statement i reaches parameter
 * access_param[i] (-1: none, as mgpu_kernel_info's access_param), fills
 * scatter[p] for each of its nparams parameters: the most bytes a link
 * carries per byte used among the accesses through it, from 1 (sectors
 * filled) to PTX_SECTOR_BYTES / the access's size (a sector per thread).
 * Returns 0, or -1 when memory runs out. */
int ptx_thread_scatter(const struct ptx_function *f, const int *access_param,
                       unsigned char *scatter);

#endif
