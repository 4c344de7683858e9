#!/bin/sh
# Where a large buffer starts once a second thread launches kernels, on the
# fake GPU (no GPU needed). Placement moves buffers only while one thread
# launches (sched/placement_follow.c), so from the second launching thread
# on, a buffer spread at its allocation would stay spread under every
# whole launch (PyTorch's autograd thread: an elementwise chain after a
# backward pass ran at 0.24x of one GPU on 4 x H100). tests/fake/
# launch_threads_client launches from one thread or two, then allocates
# 256 MiB and leaves it allocated: under MGPU_SPREAD_MIN=64M (new buffers
# of 64 MiB or more start spread; by default every one starts home), with
# one thread the pool spreads it over the four GPUs (64 MiB each), with two
# it lies on the home GPU.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4
client=tests/fake/launch_threads_client

run() {
  name=$1; shift
  MGPU_SPREAD_MIN=64M "$MGPU_RUN" -n 4 --report -v "$client" "$@" > "$work/$name.out" 2> "$work/$name.err" ||
    { cat "$work/$name.out" "$work/$name.err" >&2; fail "$client $* under mgpu-run -n 4"; }
  expect_match "$work/$name.out" "^launch_threads_client: [0-9]+ checks passed"
}

run one one
expect_match "$work/one.err" "^  GPU 1( \\(device 1\\))?: 64.00 MiB now"
grep -q "new ones start on the home GPU" "$work/one.err" && fail "one launching thread: placement stopped"
pass "one launching thread: the 256 MiB buffer spread over the four GPUs"

run two two
expect_in "$work/two.err" "placement: a second thread launches kernels; buffers stay where they are from now on, and new ones start on the home GPU"
expect_match "$work/two.err" "^  GPU 0( \\(device 0\\))?: 25[68].00 MiB now"
expect_match "$work/two.err" "^  GPU 1( \\(device 1\\))?: 0 B now"
pass "two launching threads: the 256 MiB buffer allocated after on the home GPU, right"
