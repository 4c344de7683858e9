#!/bin/sh
# Each splittable fixture kernel, rewritten and loaded once per slice, run
# as 2, 3 (uneven cuts) and 8 slices of its grid, gives what one unsplit
# launch gives (see tests/gpu/split_kernels_gpu.c). Slice g runs on device
# g modulo the devices there are: on one GPU, every slice on it. Needs a GPU.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/gpu/split_kernels_gpu
for n in 2 3 8; do
  "$prog" tests/ptx/split_kernels.ptx "$n" > "$work/out.$n" 2>&1 || { cat "$work/out.$n"; fail "$n split launches"; }
  cat "$work/out.$n"
  expect_in "$work/out.$n" "rewritten modules: loaded on $n GPUs"
  expect_in "$work/out.$n" "all split launches match the unsplit ones"
  [ "$gpu_count" -lt 2 ] || expect_match "$work/out.$n" "^slices on devices: 0 1"
  pass "$n slices on $gpu_count device(s) match unsplit launches"
done
