#!/bin/sh
# Device memory used while the program ends, on the fake GPU (no GPU
# needed; tests/fake/exit_client):
# - an atexit handler the program registered before its first allocation
#   reads the buffer back and frees it: mgpu's pool must still hold it
#   then (mgpu's own end comes after every handler of the program's,
#   whenever it registered), under -n 2 and --gpus 0x2;
# - exit() while four threads copy from a buffer: nothing may be unmapped
#   under them, so no run may die from a signal (the pool is left to the
#   driver while other threads that used the GPU are alive), 30 runs each
#   under -n 2 and --gpus 0x2.
# - exit(3) in a host function that holds its stream (below).
# Without mgpu, both end as the program chose.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=2
client=tests/fake/exit_client
# Without mgpu the program loads the fake driver itself.
mkdir -p "$work/driver"
ln -s "$MGPU_DRIVER" "$work/driver/libcuda.so.1"

for how in plain "-n 2" "--gpus 0x2"; do
  case $how in plain) set -- env LD_LIBRARY_PATH="$work/driver" ;; *) set -- "$MGPU_RUN" $how ;; esac
  name=$(echo "$how" | tr -c 'a-z0-9\n' '_')
  FAKE_CUDA_LEAK_REPORT="$work/$name.leaks" "$@" "$client" handler > "$work/$name.out" 2> "$work/$name.err" ||
    { cat "$work/$name.out" "$work/$name.err" >&2; fail "exit_client handler ($how)"; }
  expect_in "$work/$name.out" "handler: read back and freed"
  # What the program freed in its handler and what mgpu kept is given back.
  [ "$how" = plain ] || for kind in physical mappings reservations; do
    expect_match "$work/$name.leaks" "^$kind 0\$"
  done
  pass "an atexit handler registered before the first allocation reads and frees it ($how)"
done

for how in plain "-n 2" "--gpus 0x2"; do
  case $how in plain) set -- env LD_LIBRARY_PATH="$work/driver" ;; *) set -- "$MGPU_RUN" $how ;; esac
  died=0
  for i in $(seq 1 30); do
    "$@" "$client" threads > "$work/threads.out" 2> "$work/threads.err"
    rc=$?
    [ $rc -eq 0 ] || { died=$((died + 1)); echo "run $i ($how): status $rc" >&2; head -3 "$work/threads.err" >&2; }
  done
  [ $died -eq 0 ] || fail "exit() under copying threads: $died of 30 runs did not end with status 0 ($how)"
  pass "exit() while four threads copy from device memory: 30 runs end with status 0 ($how)"
done

# exit(3) in a host function that holds its stream (FAKE_CUDA_HOST_FUNCS_ASYNC:
# host functions run on threads of their own, and cuCtxSynchronize, cuMemFree
# and module loads wait for them, as the driver's do) until the program's
# thread has queued more split launches and opens a semaphore
# (tests/gpu/exit_paths, the modes of tests/gpu-exit-paths.sh). No launch may
# wait for the GPU: a move after a streak of split launches waited for the
# home context, and the links' measurement freed its memory inside the launch
# (before: "fake GPU: cuMemFree_v2 waited 15 s for a host function that never
# returned", and the same hang on the H200). The program must end with its
# own status, mgpu knowing the exit ran in a host function, the report once.
prog=tests/gpu/exit_paths
for mode in callback-exit stream-callback-exit; do
  FAKE_CUDA_GPUS=1 FAKE_CUDA_HOST_FUNCS_ASYNC=1 FAKE_CUDA_WAIT_SECONDS=50 MGPU_SPLIT=always \
    timeout 60 "$MGPU_RUN" --gpus 0x4 -v --report "$prog" $mode > "$work/$mode.out" 2> "$work/$mode.err"
  rc=$?
  [ $rc -eq 3 ] || { cat "$work/$mode.out" "$work/$mode.err" >&2; fail "$mode: exit status $rc, not 3"; }
  expect_in "$work/$mode.err" "exit in a host callback"
  [ "$(grep -c '^kernel  ' "$work/$mode.err")" -eq 1 ] ||
    { cat "$work/$mode.err" >&2; fail "$mode: the report was not printed once"; }
  # What may wait for the program's queued work is not waited for past a
  # bound: the rewritten module's copies on the other GPUs (loaded on a
  # thread of mgpu's own, waited for a second), or a move (100 ms).
  expect_match "$work/$mode.err" 'put off: the program.s queued work did not finish within 100 ms|copies on the other GPUs not loaded within [0-9]+ ms'
  pass "exit(3) in a host function holding the stream behind split launches ($mode): status 3, the report once"
done
