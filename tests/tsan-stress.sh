#!/bin/sh
# Races in mgpu (issue 17): the stress client, eight host threads on eight
# streams allocating, freeing, copying, launching and synchronising at once,
# under mgpu-run with a ThreadSanitizer copy of the runtime and the shim
# (tests/stress/Makefile.inc), against the fake GPU (no GPU needed). Several
# of the run's GPUs stand on each fake device and every launch is split, so
# the workers, slice streams and fork/join of every GPU run. Fails on any
# ThreadSanitizer report, a failed call or a wrong value. Skipped where
# configure found no compiler that builds and runs ThreadSanitizer programs.
# TSAN_STRESS_SECONDS sets each run's length (default 3).
. "$(dirname "$0")/common.sh"
if [ "$have_tsan" != yes ]; then
  echo "SKIP: no ThreadSanitizer build (configure: races: no)"
  exit 77
fi
seconds=${TSAN_STRESS_SECONDS:-3}
export MGPU_LIBDIR="$top_builddir/tests/tsan/.libs"
export MGPU_DRIVER="$top_builddir/tests/fake/.libs/libfakecuda.so"
export FAKE_CUDA_GPUS=2
export MGPU_SPLIT=always
# halt_on_error: the first report ends the run, with its own exit status.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$top_srcdir/tests/stress/tsan.supp"

# gpus fork_join client-options: one run, checked.
run_case() {
  gpus=$1 fork_join=$2; shift 2
  MGPU_FORK_JOIN=$fork_join FAKE_CUDA_LEAK_REPORT="$work/leaks" \
    "$MGPU_RUN" --gpus "$gpus" tests/stress/stress_client_tsan \
    --threads 8 --seconds "$seconds" "$@" \
    > "$work/out" 2> "$work/err"
  status=$?
  if grep -q "WARNING: ThreadSanitizer" "$work/err" || [ $status -ne 0 ]; then
    cat "$work/out" "$work/err"
    fail "stress client under --gpus $gpus, MGPU_FORK_JOIN=$fork_join $*: exit status $status"
  fi
  expect_in "$work/out" "stress_client: results correct"
  # The client freed everything, and mgpu gave its pool back.
  for kind in physical mappings reservations device_allocations modules; do
    expect_match "$work/leaks" "^$kind 0\$"
  done
  grep "operations in" "$work/out"
  pass "8 threads for ${seconds} s under --gpus $gpus, MGPU_FORK_JOIN=$fork_join $*: no race reported, results correct"
}

# The detector is on, and a report fails the run: the client's own
# deliberate race (--race) must be caught.
MGPU_FORK_JOIN=flags "$MGPU_RUN" --gpus 0x4 tests/stress/stress_client_tsan --threads 8 --ops 30 \
  --max-bytes 64K --race > "$work/out" 2> "$work/err"
status=$?
[ $status -eq 66 ] || { cat "$work/out" "$work/err"; fail "a deliberate race: exit status $status, not 66"; }
expect_in "$work/err" "WARNING: ThreadSanitizer: data race"
expect_match "$work/err" "worker_main .*stress_client.c"
pass "a deliberate race in the client is reported (exit status 66)"

# Small buffers: many operations, allocations and launches; large ones
# (above mgpu's 8 MiB) for copies split by owner over the workers.
run_case 0x4 flags --seed 1 --max-bytes 3M --buffers 4
run_case 0x2,1x2 events --seed 2 --nonblocking --max-bytes 12M --buffers 3
