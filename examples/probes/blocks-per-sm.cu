// blocks-per-sm: how many blocks of the matching kernels each
// multiprocessor of each GPU ran. The report lists the map per GPU;
// MGPU_PROBE_OUT has every entry.
//
//   mgpu-run --gpus 0,0 --probe examples/probes/blocks-per-sm.cu examples/sgemm --quick
#include <mgpu/probe.h>

MGPU_PROBE_ARRAY(blocks_per_sm, 1024);

MGPU_PROBE_BLOCK_ENTRY(count_block_on_sm, "*sgemm*")
{
    mgpu_array_add(blocks_per_sm, mgpu_sm_id(), 1);
}
