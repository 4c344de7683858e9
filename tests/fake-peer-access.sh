#!/bin/sh
# The program's view of peer access under mgpu, on the fake GPU (no GPU
# needed): tests/fake/peer_client enables and disables peer access from
# device 0's context to device 1's itself, after a kernel that mgpu splits
# (and enables peer access for). Each answer must be the driver's own
# (SUCCESS, then ALREADY_ENABLED; SUCCESS, then PEER_ACCESS_NOT_ENABLED),
# the program's disable must leave mgpu's access in place (the fake
# driver's record says), and the kernel after it must still be right.
# With nothing of mgpu's between the GPUs (MGPU_SPLIT=never) the calls
# reach the driver as they are.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=2
client=tests/fake/peer_client

run() {
  name=$1; want=$2; shift 2
  "$MGPU_RUN" "$@" "$client" "$want" > "$work/$name.out" 2> "$work/$name.err" ||
    { cat "$work/$name.out" "$work/$name.err" >&2; fail "$client under mgpu-run $* ($name)"; }
  expect_match "$work/$name.out" "^peer_client: [0-9]+ checks passed"
}

MGPU_SPLIT=always run split kept -n 2
expect_in "$work/split.out" "ok second cuCtxEnablePeerAccess: CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"
expect_in "$work/split.out" "ok: device 0's context still reaches device 1 after the program's disable"
pass "-n 2, split: the program's peer-access calls answered as by the driver alone; mgpu's access stays"

MGPU_SPLIT=always run entries kept --gpus 0,1,0,1
pass "--gpus 0,1,0,1: the same"

MGPU_SPLIT=never run whole gone --gpus 0,1
expect_in "$work/whole.out" "ok: device 0's context no longer reaches device 1 after the program's disable"
pass "MGPU_SPLIT=never --gpus 0,1: the calls reach the driver as they are"
