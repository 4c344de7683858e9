// footprint-check: for every global access of every thread whose pointer
// mgpu's analysis traced to a kernel parameter, the lowest and the highest
// byte it touches, as offsets from that parameter's value at the launch,
// per launch (the first FC_LAUNCHES of the run), GPU entry (the slice),
// parameter and direction (read; written: stored or updated atomically).
// The host compares them at exit with the footprint mgpu predicted for
// each slice (issue 45: zero escapes is the bar) and says how tight the
// prediction was. A test's tool, not a profiler: a call and two reads
// before every access, an atomic where one widens the known range.
//
//   MGPU_SPLIT=always mgpu-run --gpus 0x8 --probe footprint-check ./app
#include <mgpu/probe.h>

#define FC_LAUNCHES 4096 // launches past this are not checked
#define FC_GPUS 8        // entries past this share the last
#define FC_PARAMS 16     // parameters past this are not checked
#define FC_BIAS (1ull << 62) // offsets stored biased: unsigned order is signed order

#define FC_SLOTS (FC_LAUNCHES * FC_GPUS * FC_PARAMS * 2)
// [((launch * FC_GPUS + gpu) * FC_PARAMS + param) * 2 + written]
MGPU_PROBE_ARRAY_INIT(fc_lowest, FC_SLOTS, ~0ull);
MGPU_PROBE_ARRAY(fc_highest, FC_SLOTS);

MGPU_PROBE_ACCESS(footprint_check, "*")
{
    int param = mgpu_access_param();
    unsigned launch = mgpu_launch_sequence();
    if (param < 0 || param >= FC_PARAMS || launch >= FC_LAUNCHES)
        return;
    const void *at = mgpu_kernel_param((unsigned)param);
    if (at == 0)
        return;
    mgpu_u64 base = *(const mgpu_u64 *)at;
    mgpu_u64 bytes = mgpu_access_bytes() ? mgpu_access_bytes() : 1;
    mgpu_u64 first = mgpu_access_address() - base + FC_BIAS;
    mgpu_u64 last = first + bytes; // past the last byte
    unsigned gpu = mgpu_device_ordinal() < FC_GPUS ? mgpu_device_ordinal() : FC_GPUS - 1;
    unsigned written = mgpu_access_kind() != MGPU_ACCESS_LOAD;
    unsigned index = ((launch * FC_GPUS + gpu) * FC_PARAMS + (unsigned)param) * 2 + written;
    // An atomic only where this access widens what is known: after the
    // first few of a slice, most accesses lie inside and only read.
    if (first < mgpu_array_get(fc_lowest, index))
        mgpu_array_min(fc_lowest, index, first);
    if (last > mgpu_array_get(fc_highest, index))
        mgpu_array_max(fc_highest, index, last);
}
