#!/bin/sh
# Copies and sets past the end of an allocation, on the fake GPU: a 2 MiB
# copy into a 4 KiB allocation of mgpu's pool overwrote the allocation next
# to it, and a 3 MiB allocation overrun by 4 KiB was copied, where the
# driver (and mgpu under -n 1, which leaves allocations to it) answers
# CUDA_ERROR_INVALID_VALUE. tests/fake/copy_bounds_client tries every copy
# and set form (host to device, device to host, device to device, cuMemcpy,
# 1D and 2D sets, blocking and stream-ordered) past the end of allocations
# of 4 KiB, 3000 bytes, 3 MiB and 9 MiB (whose copies are split over the
# GPUs): each must be refused and change nothing, neither the allocation,
# nor its neighbour, nor the host buffer of a read; copies and sets that
# end exactly at the end must succeed. Under -n 2 (the pool, its buffers
# spread, copies split), --gpus 0x2 and -n 1 (the driver's own check).
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=2
client=tests/fake/copy_bounds_client

for gpus in "-n 2" "--gpus 0x2" "-n 1"; do
  label=$(echo "$gpus" | tr -d ' -')
  MGPU_SPREAD_MIN=1 "$MGPU_RUN" $gpus --report "$client" > "$work/$label.out" 2> "$work/$label.err" ||
    { cat "$work/$label.out" "$work/$label.err" >&2; fail "$client under $gpus"; }
  expect_in "$work/$label.out" "copy_bounds_client: all checks passed"
  pass "$gpus: copies and sets past an allocation's end refused, nothing written; exact-size ones done"
done
# Under -n 2 the pool held the buffers and the 9 MiB copies were split.
expect_match "$work/n2.err" "one address range on 2 GPUs, .* placement; [1-9][0-9]* copies and sets split by owner"
pass "-n 2: the buffers in mgpu's pool, the large copies split by owner"
