// thread-count: how many blocks of each kernel ran on each GPU and on each
// of its multiprocessors: whether the cut gave each GPU its share. Counts
// are kept per kernel and multiprocessor, so that the blocks of a launch
// do not all update one word. The tables give threads as the blocks
// counted times the launches' block size, which mgpu records on the host
// (for a kernel launched with blocks of one size).
// Cost: one atomic per block at its start (a second one, for threads, cost
// a kernel of 1-microsecond blocks a point more).
//
//   mgpu-run --gpus 0,0,0,0 --probe thread-count ./vector_add
#include <mgpu/probe.h>

#define KERNELS 64 // kernel ids past this share the last row
#define SMS 256    // multiprocessors per GPU, at most

MGPU_PROBE_ARRAY(tc_blocks, KERNELS *SMS); // [kernel * SMS + sm]

MGPU_PROBE_BLOCK_ENTRY(thread_count_entry, "*")
{
    unsigned kernel = mgpu_kernel_id() < KERNELS ? mgpu_kernel_id() : KERNELS - 1;
    mgpu_array_add(tc_blocks, (mgpu_u64)kernel * SMS + mgpu_sm_id() % SMS, 1);
}
