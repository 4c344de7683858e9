// address-watch: a watch on one address range, recording which block wrote
// it. The range is the WATCHED elements of vector_add's output c (its
// parameter 2) around the middle of the vector, found from the launch's
// own parameters; every store of the kernel is checked, and each one into
// the range leaves a record: the element, the block of the whole grid
// that wrote it, the GPU and multiprocessor, the launch, and when.
// Under --gpus 0,0,0,0 the middle is where GPU 1's slice ends and GPU 2's
// begins, so the records name both.
//
//   MGPU_PROBE_OUT=watch.jsonl mgpu-run --gpus 0,0,0,0 \
//       --probe examples/probes/address-watch.cu examples/vector_add --quick
//   grep '"map":"watch_writes"' watch.jsonl | head
#include <mgpu/probe.h>

#define WATCHED 64 // elements, half before the middle and half after

struct write_record {
    mgpu_u64 ns;      // when, on the host's clock
    mgpu_u64 element; // which element of c
    mgpu_u64 block;   // the writer's block in the whole grid
    unsigned gpu, sm, launch, bytes;
};

MGPU_PROBE_RING(watch_writes, struct write_record, 4096);

MGPU_PROBE_STORE(watch_output, "vector_add*")
{
    const char *c = *(const char *const *)mgpu_kernel_param(2);
    mgpu_u64 n = *(const mgpu_u64 *)mgpu_kernel_param(3);
    mgpu_u64 first = (mgpu_u64)c + (n / 2 - WATCHED / 2) * sizeof(float);
    mgpu_u64 at = mgpu_access_address();
    if (at < first || at >= first + WATCHED * sizeof(float))
        return;
    struct write_record r = {mgpu_global_ns(),   (at - (mgpu_u64)c) / sizeof(float),
                             mgpu_block_index(), mgpu_device_ordinal(),
                             mgpu_sm_id(),       mgpu_launch_sequence(),
                             mgpu_access_bytes()};
    mgpu_ring_push(watch_writes, r);
}
