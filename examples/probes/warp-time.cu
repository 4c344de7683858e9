// warp-time: a histogram of warp durations per GPU, in powers of two of
// multiprocessor cycles (bucket b counts warps that took [2^b, 2^(b+1))
// cycles), measured from the warp's lane 0 entering to its threads leaving
// (a warp whose threads leave at different points counts once per point).
//
//   MGPU_PROBE_OUT=warps.jsonl mgpu-run --gpus 0,0 \
//       --probe examples/probes/warp-time.cu examples/jacobi2d --quick
#include <mgpu/probe.h>

MGPU_PROBE_ARRAY(warp_cycles_log2, 64);

// One start per warp of a block (a block has at most 32 warps).
static __shared__ mgpu_u64 warp_start[32];

MGPU_PROBE_ENTRY(warp_enter, "*")
{
    unsigned t = mgpu_thread_index();
    if (t % 32 == 0)
        warp_start[t / 32] = mgpu_sm_cycles();
}

// Called once for each warp's threads leaving together, by the lowest.
MGPU_PROBE_WARP_EXIT(warp_leave, "*")
{
    mgpu_u64 cycles = mgpu_sm_cycles() - warp_start[mgpu_thread_index() / 32];
    mgpu_array_add(warp_cycles_log2, cycles ? 63 - __clzll(cycles) : 0, 1);
}
