#!/bin/sh
# Pool memory shared between processes (issue 22, item 4), on the fake GPU:
# tests/fake/ipc_client allocates a buffer spread over the GPUs and a small
# one, takes an IPC handle of each, and runs itself again as the child,
# which opens both, checks every word, writes its own and closes them; the
# parent then sees the child's words. The fake's memory is memfd-backed,
# so two processes that map the same file descriptors share it, as two
# processes on a GPU do. A handle of a process that has ended must be
# refused; mgpu_memory_migrate must refuse a shared buffer. Under -n 4 and
# --gpus 0x4; and with MGPU_MEMORY=driver the calls go to the (fake)
# driver, which has no IPC of plain allocations: its own error, in one
# line, not a crash.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4
client=tests/fake/ipc_client
for gpus in "-n 4" "--gpus 0x4"; do
  label=$(echo "$gpus" | tr -d ' -')
  timeout 60 "$MGPU_RUN" $gpus --report "$client" > "$work/$label.out" 2> "$work/$label.err" ||
    { cat "$work/$label.out" "$work/$label.err" >&2; fail "$client under $gpus"; }
  expect_in "$work/$label.out" "child: both buffers read and rewritten"
  expect_in "$work/$label.out" "ipc_client: shared both ways"
  pass "$gpus: pool memory shared both ways between two processes; an ended process's handle refused"
done
MGPU_MEMORY=driver timeout 60 "$MGPU_RUN" -n 4 "$client" --no-ended > "$work/driver.out" 2> "$work/driver.err" &&
  fail "the fake driver has no IPC of plain allocations, yet the client passed"
expect_in "$work/driver.out" "error: cuIpcGetMemHandle returned CUDA_ERROR_NOT_SUPPORTED"
pass "MGPU_MEMORY=driver: the calls reach the driver, whose answer the program gets"
