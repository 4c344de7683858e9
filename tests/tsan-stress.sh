#!/bin/sh
# Races in mgpu (issue 17): the stress client, eight host threads on eight
# streams allocating, freeing, copying, launching, loading modules and
# synchronising at once, under mgpu-run with a ThreadSanitizer copy of the
# runtime and the shim (tests/stress/Makefile.inc), against the fake GPU (no
# GPU needed). Several of the run's GPUs stand on each fake device, so the
# workers, slice streams and fork/join of every GPU run. Fails on any
# ThreadSanitizer report, a failed call, a wrong value or memory left
# behind. Skipped where configure found no compiler that builds and runs
# ThreadSanitizer programs. TSAN_STRESS_SECONDS sets each run's length
# (default 3).
. "$(dirname "$0")/common.sh"
if [ "$have_tsan" != yes ]; then
  echo "SKIP: no ThreadSanitizer build (configure: races: no)"
  exit 77
fi
seconds=${TSAN_STRESS_SECONDS:-3}
export MGPU_LIBDIR="$top_builddir/tests/tsan/.libs"
use_fake_driver
export FAKE_CUDA_GPUS=2
supp="$top_srcdir/tests/stress/tsan.supp"
# The fake driver is not instrumented, but ThreadSanitizer still sees the
# locks it takes (its interceptors catch pthread_mutex_lock from any
# library), and the fake takes a lock shared by all threads in most calls
# (its sets of live handles): every driver call would then order the
# threads that make it, and hide a race in mgpu between two threads that
# happen to call the driver in between. `called_from_lib` makes the
# sanitizer ignore what the fake does, its locks included; the strict runs
# add it, so that only mgpu's own synchronisation orders mgpu's threads.
cat "$supp" > "$work/strict.supp"
echo "called_from_lib:libfakecuda.so" >> "$work/strict.supp"

# SPLIT FORK_JOIN GPUS plain|strict CLIENT-OPTIONS...: one run, checked.
# halt_on_error: the first report ends the run, with exit status 66.
run_case() {
  split=$1 fork_join=$2 gpus=$3 mode=$4; shift 4
  file=$supp; [ "$mode" = strict ] && file="$work/strict.supp"
  TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$file" \
  MGPU_SPLIT=$split MGPU_FORK_JOIN=$fork_join FAKE_CUDA_LEAK_REPORT="$work/leaks" \
    "$MGPU_RUN" --gpus "$gpus" --report --trace "$work/trace.json" \
    tests/stress/stress_client_tsan --threads 8 --seconds "$seconds" "$@" \
    > "$work/out" 2> "$work/err"
  status=$?
  what="${MGPU_MIRROR:+MGPU_MIRROR=$MGPU_MIRROR }MGPU_SPLIT=$split MGPU_FORK_JOIN=$fork_join --gpus $gpus ($mode) $*"
  if grep -q "WARNING: ThreadSanitizer" "$work/err" || [ $status -ne 0 ]; then
    cat "$work/out" "$work/err"
    fail "stress client under $what: exit status $status"
  fi
  expect_in "$work/out" "stress_client: results correct"
  # The client freed everything, and mgpu gave its pool back.
  for kind in physical mappings reservations device_allocations modules; do
    expect_match "$work/leaks" "^$kind 0\$"
  done
  [ "$split" = always ] && expect_match "$work/err" '^mgpu_test_fill .* x[0-9]'
  [ "${MGPU_MIRROR:-never}" = always ] && expect_match "$work/err" '^  mirrors: [1-9][0-9]* buffers replicated'
  grep "operations in" "$work/out"
  grep "split by owner" "$work/err"
  pass "8 threads for $seconds s under $what: no race reported, results correct"
}

# The client alone on the fake GPU, without mgpu, leaves nothing behind:
# what is left under mgpu is mgpu's.
mkdir -p "$work/driver"
ln -s "$MGPU_DRIVER" "$work/driver/libcuda.so.1"
FAKE_CUDA_GPUS=1 FAKE_CUDA_LEAK_REPORT="$work/leaks" LD_LIBRARY_PATH="$work/driver" \
  tests/stress/stress_client --threads 8 --seconds 1 --max-bytes 3M > "$work/out" 2>&1 || {
  cat "$work/out"; fail "the stress client on the fake GPU alone"; }
expect_in "$work/out" "stress_client: results correct"
for kind in physical mappings reservations device_allocations host_allocations streams events \
            modules primary_retains contexts; do
  expect_match "$work/leaks" "^$kind 0\$"
done
pass "the stress client alone frees everything it made"

# The detector is on, and a report fails the run: the client's own
# deliberate race (--race) must be caught.
TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$supp" \
  "$MGPU_RUN" --gpus 0x4 tests/stress/stress_client_tsan --threads 8 --ops 30 \
  --max-bytes 64K --race > "$work/out" 2> "$work/err"
status=$?
[ $status -eq 66 ] || { cat "$work/out" "$work/err"; fail "a deliberate race: exit status $status, not 66"; }
expect_in "$work/err" "WARNING: ThreadSanitizer: data race"
expect_match "$work/err" "worker_main .*stress_client.c"
pass "a deliberate race in the client is reported (exit status 66)"

# Small buffers: many operations, allocations, launches and module loads;
# large ones (above mgpu's 8 MiB) for copies split by owner over the
# workers; the cost model of MGPU_SPLIT=auto deciding from several threads.
run_case always flags 0x4 strict --seed 1 --max-bytes 3M --buffers 4
run_case always events 0x2,1x2 plain --seed 2 --nonblocking --max-bytes 12M --buffers 3
run_case auto flags 0x2,1x2 strict --seed 3 --nonblocking --max-bytes 2M --buffers 4
# Replicas of every read-only buffer (device copies: NCCL cannot run on the
# fake), made, refreshed, read from other streams and freed by 8 threads.
MGPU_MIRROR=always MGPU_NCCL=0 run_case always flags 0x4 strict --seed 4 --max-bytes 3M --buffers 4
