// block-records: a record per block of the matching kernels, sent to the
// host through a ring: when it started (host clock, ns), on which GPU and
// multiprocessor, which block of the whole grid, and in which launch. The
// ring keeps the first 4096 blocks per GPU and counts the rest as dropped.
//
//   MGPU_PROBE_OUT=blocks.jsonl mgpu-run --gpus 0,0,0,0 \
//       --probe examples/probes/block-records.cu examples/vector_add --quick
//   grep '"type":"record"' blocks.jsonl | head
#include <mgpu/probe.h>

struct block_record {
    mgpu_u64 start_ns;
    mgpu_u64 block;
    unsigned gpu, sm, launch, kernel;
};

MGPU_PROBE_RING(block_starts, struct block_record, 4096);

MGPU_PROBE_BLOCK_ENTRY(record_block, "*")
{
    struct block_record r = {mgpu_global_ns(), mgpu_block_index(),     mgpu_device_ordinal(),
                             mgpu_sm_id(),     mgpu_launch_sequence(), mgpu_kernel_id()};
    mgpu_ring_push(block_starts, r);
}
