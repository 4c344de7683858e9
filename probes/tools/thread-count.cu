// thread-count: how many blocks and threads of each kernel ran on each GPU
// and on each of its multiprocessors: whether the cut gave each GPU its
// share. Counts are kept per kernel and multiprocessor, so that the
// blocks of a launch do not all update one word.
// Cost: two atomics per block at its start.
//
//   mgpu-run --gpus 0,0,0,0 --probe thread-count ./vector_add
#include <mgpu/probe.h>

#define KERNELS 64 // kernel ids past this share the last row
#define SMS 256    // multiprocessors per GPU, at most

MGPU_PROBE_ARRAY(tc_blocks, KERNELS *SMS); // [kernel * SMS + sm]
MGPU_PROBE_ARRAY(tc_threads, KERNELS *SMS);

MGPU_PROBE_BLOCK_ENTRY(thread_count_entry, "*")
{
    unsigned kernel = mgpu_kernel_id() < KERNELS ? mgpu_kernel_id() : KERNELS - 1;
    mgpu_u64 i = (mgpu_u64)kernel * SMS + mgpu_sm_id() % SMS;
    mgpu_array_add(tc_blocks, i, 1);
    mgpu_array_add(tc_threads, i, mgpu_block_threads());
}
