#!/bin/sh
# Device memory shared between processes through the CUDA IPC calls
# (issue 22, item 4) on a real GPU: tests/fake/ipc_client (two processes:
# the child opens the parent's handles, checks every word, writes its own,
# and the parent sees them). Plainly (the driver's own IPC of cudaMalloc
# memory: the test itself is right), under mgpu-run on each of the test's
# GPU sets (mgpu's handles for pool memory; a handle of a process that has
# ended refused; a shared buffer not migrated), and with
# MGPU_MEMORY=driver (the driver's IPC through mgpu's hooks).
. "$(dirname "$0")/common.sh"
require_gpu
client=tests/fake/ipc_client
timeout 60 $client --no-ended > "$work/plain" 2>&1 || { cat "$work/plain" >&2; fail "without mgpu"; }
expect_in "$work/plain" "ipc_client: shared both ways"
pass "without mgpu: the driver's IPC shares cudaMalloc memory both ways"
for gpus in $entry_sets; do
  label=$(echo "$gpus" | tr ',' '_')
  timeout 120 "$MGPU_RUN" --gpus "$gpus" $client > "$work/$label.out" 2> "$work/$label.err" ||
    { cat "$work/$label.out" "$work/$label.err" >&2; fail "--gpus $gpus"; }
  expect_in "$work/$label.out" "ipc_client: shared both ways"
  pass "--gpus $gpus: pool memory shared both ways between two processes"
done
MGPU_MEMORY=driver timeout 60 "$MGPU_RUN" --gpus 0x2 $client --no-ended > "$work/driver.out" 2>&1 ||
  { cat "$work/driver.out" >&2; fail "MGPU_MEMORY=driver"; }
expect_in "$work/driver.out" "ipc_client: shared both ways"
pass "MGPU_MEMORY=driver: the driver's own IPC through mgpu's hooks"
