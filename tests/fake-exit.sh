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
