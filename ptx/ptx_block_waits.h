/* Whether a function waits, in a loop, for memory that other blocks write:
 * the spin of a decoupled look-back (CUB's scans and onesweep radix sort:
 * block b waits for the status words of blocks b-1, b-2, ...) or of any
 * block that waits for a flag a block launched before it sets. Such a
 * kernel relies on the blocks before it having started; cut into slices
 * that share one device, a later slice's blocks can fill the device while
 * the earlier slice's blocks wait to start, and wait for ever (on one H200
 * listed eight times, bench/corpus/cub_sort_scan did not end). Found from
 * the PTX: a branch back to a label before it, with, between the label and
 * the branch, a conditional branch whose predicate follows (through the
 * registers the loop computes) from a load of global or generic memory
 * marked volatile, relaxed or acquire. A loop that only sums such loads
 * (the last block of a threadfence reduction) does not wait. A function
 * whose loops are too many and too long to follow (millions of
 * statements looked at) is said to wait. No driver. */
#ifndef MGPU_PTX_BLOCK_WAITS_H
#define MGPU_PTX_BLOCK_WAITS_H

#include "ptx/ptx_module.h"

#include <stdbool.h>

bool ptx_function_waits_on_memory(const struct ptx_function *f);

#endif
