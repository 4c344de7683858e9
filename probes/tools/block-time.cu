// block-time: per kernel and GPU, the distribution of block durations
// (a histogram with 8 buckets per power of two, in multiprocessor cycles:
// a block starts and ends on one multiprocessor) and each GPU's busy time
// (first block start to last block end of each launch, summed).
//
// The histogram has 8 copies (by multiprocessor), so that blocks of like
// duration do not all update one word; the busy time is kept per launch
// and multiprocessor as in launch-latency.cu. Cost: a few atomics per
// block, in one block in 32 (as launch-latency.cu): the histogram is of
// the sampled blocks, and the busy time ends at the last sampled block's
// end.
//
//   mgpu-run --gpus 0,0,0,0 --probe block-time ./sgemm
#include <mgpu/probe.h>

#define KERNELS 64  // kernels past this many ids share no histogram
#define BUCKETS 496 // per kernel; see bucket() below
#define COPIES 8    // of each kernel's histogram
#define SLOTS 1024  // launches kept for the busy time
#define SMS 256
#define TIME_MASK ((1ull << 40) - 1)

MGPU_PROBE_ARRAY(bt_hist, KERNELS *COPIES *BUCKETS); // [(kernel * COPIES + copy) * BUCKETS + b]
MGPU_PROBE_ARRAY(bt_max, KERNELS);
MGPU_PROBE_ARRAY(bt_first, SLOTS *SMS); // launch << 40 | (TIME_MASK - start)
MGPU_PROBE_ARRAY(bt_last, SLOTS *SMS);  // launch << 40 | end

// The block's start, written by its first thread, read by its last.
static __shared__ mgpu_u64 bt_block_start;

// Exact below 8, then 8 buckets per power of two.
static __device__ unsigned bucket(mgpu_u64 v)
{
    if (v < 8)
        return (unsigned)v;
    unsigned e = 63 - __clzll(v);
    return 8 + (e - 3) * 8 + (unsigned)((v >> (e - 3)) & 7);
}

static __device__ __forceinline__ mgpu_u64 slot(void)
{
    return (mgpu_launch_sequence() % SLOTS) * SMS + mgpu_sm_id() % SMS;
}

MGPU_PROBE_BLOCK_ENTRY_SAMPLED(block_time_entry, "*", 32)
{
    bt_block_start = mgpu_sm_cycles();
    mgpu_array_max(bt_first, slot(),
                   (mgpu_u64)mgpu_launch_sequence() << 40 |
                       (TIME_MASK - (mgpu_run_ns() & TIME_MASK)));
}

MGPU_PROBE_BLOCK_EXIT_SAMPLED(block_time_exit, "*", 32)
{
    mgpu_u64 cycles = mgpu_sm_cycles() - bt_block_start;
    unsigned kernel = mgpu_kernel_id();
    if (kernel < KERNELS) {
        unsigned copy = mgpu_sm_id() % COPIES;
        mgpu_array_add(bt_hist, ((mgpu_u64)kernel * COPIES + copy) * BUCKETS + bucket(cycles), 1);
        if (cycles > mgpu_array_get(bt_max, kernel)) // most blocks are not the longest
            mgpu_array_max(bt_max, kernel, cycles);
    }
    mgpu_array_max(bt_last, slot(),
                   (mgpu_u64)mgpu_launch_sequence() << 40 | (mgpu_run_ns() & TIME_MASK));
}
