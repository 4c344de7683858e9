#!/bin/sh
# A program that loads and unloads modules in a loop (JIT-compiled kernels)
# must not grow mgpu without bound, on the fake GPU: tests/fake/
# module_churn_client loads, launches and unloads a module 1200 times and
# prints the heap's growth per module and the driver's module loads per
# module. The fake driver keeps something of every module it ever loaded
# (a handle is never reused), so its growth per load is measured without
# mgpu (the fake as libcuda.so.1) and taken out; what is left is mgpu's,
# and must stay under 256 bytes per module (it was about 2.5 KB: each
# module's record and its kernels' were kept for the report). The report
# still names the first modules and counts the rest.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=2
client=tests/fake/module_churn_client
mkdir "$work/driver"
ln -s "$MGPU_DRIVER" "$work/driver/libcuda.so.1"

env -u MGPU_DRIVER LD_LIBRARY_PATH="$work/driver" $client 1200 > "$work/plain" 2>&1 ||
  { cat "$work/plain" >&2; fail "$client on the fake driver alone"; }
MGPU_SPLIT=always "$MGPU_RUN" -n 2 --report $client 1200 > "$work/mgpu" 2> "$work/mgpu.err" ||
  { cat "$work/mgpu" "$work/mgpu.err" >&2; fail "$client under mgpu-run -n 2"; }
cat "$work/plain" "$work/mgpu"
mgpu_bytes=$(awk '/bytes per module/ { b[NR] = $2; l[NR] = $6 }
  END { printf "%.0f\n", b[2] - l[2] * b[1] / l[1] }' "$work/plain" "$work/mgpu")
[ "$mgpu_bytes" -lt 256 ] || fail "mgpu keeps $mgpu_bytes bytes per module loaded and unloaded"
pass "1200 modules loaded, launched and unloaded: mgpu keeps $mgpu_bytes bytes per module"
expect_in "$work/mgpu.err" "modules loaded: 1200"
expect_in "$work/mgpu.err" "module 1 (cuModuleLoadData): rewritten for 2 GPUs"
expect_in "$work/mgpu.err" "1137 more modules unloaded, 1137 launches from their rewritten modules"
pass "the report names the first 63 modules and counts the rest"
