// launch-latency: per launch and GPU, when the slice's first block started
// and its last block ended. mgpu's tables turn them into the time from the
// host's launch call to the first block, the slice's span, and how much
// later each GPU started than the first: the skew between slices.
//
// Each multiprocessor keeps its own first start and last end per launch,
// so that blocks of one launch do not all update one word: a value packs
// the launch's number (high 24 bits) with a time (low 40 bits), and
// atomicMax keeps the latest launch of a slot and, within it, the latest
// end, or (time inverted) the earliest start. The last SLOTS launches are
// kept. Cost: one atomic per block at its start and one at its end (one
// per warp at its end, through a warp-exit probe, made vector_add 2.9x
// slower: the warps of a multiprocessor all update one word), in one block
// in 32: the slice's first block and others spread over it, or every
// block of a grid of at most 4096 (mgpu/probe.h). In every block, the
// count of threads that finds a block's end made vector_add 1.3x slower.
// The last end is then the last of the sampled blocks', a few blocks'
// start from the slice's true end on a grid of many short blocks.
//
//   mgpu-run --gpus 0,0,0,0 --probe launch-latency ./vector_add
#include <mgpu/probe.h>

#define SLOTS 1024 // launches kept: a launch's slot is its number mod SLOTS
#define SMS 256    // multiprocessors per GPU, at most
#define TIME_MASK ((1ull << 40) - 1)

MGPU_PROBE_ARRAY(ll_first, SLOTS *SMS); // launch << 40 | (TIME_MASK - start)
MGPU_PROBE_ARRAY(ll_last, SLOTS *SMS);  // launch << 40 | end

static __device__ __forceinline__ mgpu_u64 slot(void)
{
    return (mgpu_launch_sequence() % SLOTS) * SMS + mgpu_sm_id() % SMS;
}

MGPU_PROBE_BLOCK_ENTRY_SAMPLED(launch_latency_entry, "*", 32)
{
    mgpu_array_max(ll_first, slot(),
                   (mgpu_u64)mgpu_launch_sequence() << 40 |
                       (TIME_MASK - (mgpu_run_ns() & TIME_MASK)));
}

MGPU_PROBE_BLOCK_EXIT_SAMPLED(launch_latency_exit, "*", 32)
{
    mgpu_array_max(ll_last, slot(),
                   (mgpu_u64)mgpu_launch_sequence() << 40 | (mgpu_run_ns() & TIME_MASK));
}
