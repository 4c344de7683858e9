#!/bin/sh
# The examples (examples/README.md) give the same output under mgpu-run as
# without it: each runs with --quick plainly, then under -n 1, 2, 4, ... (powers
# of two up to the GPU count), each with the default MGPU_SPLIT and with
# MGPU_SPLIT=always. Every run must exit 0 and print one "time:" line, and its
# other lines (results and checksums, bit-identical where the kernel is
# deterministic) must be the plain run's. All differences are shown before the
# test fails.
. "$(dirname "$0")/common.sh"
require_gpu
examples="vector_add saxpy jacobi2d sgemm histogram reduction nbody driver_api"
counts=""
n=1
while [ "$n" -le "$gpu_count" ]; do counts="$counts $n"; n=$((n * 2)); done
failures=0

# check_run LABEL STATUS: the run $work/LABEL.{out,err} exited 0 and printed
# exactly one well-formed time: line; its other lines go to $work/LABEL.result.
check_run() {
  label=$1 status=$2
  times=$(grep -c '^time: ' "$work/$label.out")
  if [ "$status" -ne 0 ] || [ "$times" -ne 1 ] ||
     ! grep -Eq '^time: [a-z_0-9]+ kernel_ms=[0-9]+\.[0-9]+ iterations=[0-9]+ repeats=[0-9]+$' "$work/$label.out"; then
    echo "FAIL: $label exited $status with $times time: lines:" >&2
    cat "$work/$label.out" "$work/$label.err" >&2
    failures=$((failures + 1))
    return 1
  fi
  grep -v '^time: ' "$work/$label.out" > "$work/$label.result"
}

for ex in $examples; do
  prog=examples/$ex
  "$prog" --quick > "$work/$ex.plain.out" 2> "$work/$ex.plain.err"
  check_run "$ex.plain" $? || continue
  if ! grep -q "^$ex: .*: PASS" "$work/$ex.plain.result"; then
    echo "FAIL: $ex without mgpu did not pass:" >&2; cat "$work/$ex.plain.out" >&2
    failures=$((failures + 1)); continue
  fi
  cat "$work/$ex.plain.result"
  for n in $counts; do
    for split in auto always; do
      label=$ex.n$n.$split
      MGPU_SPLIT=$split "$MGPU_RUN" -n "$n" --report "$prog" --quick > "$work/$label.out" 2> "$work/$label.err"
      check_run "$label" $? || continue
      if diff "$work/$ex.plain.result" "$work/$label.result" > "$work/$label.diff"; then
        pass "$ex under -n $n, MGPU_SPLIT=$split: the plain run's output"
      else
        echo "FAIL: $ex under -n $n, MGPU_SPLIT=$split differs from the plain run (< plain, > mgpu):" >&2
        cat "$work/$label.diff" "$work/$label.err" >&2
        failures=$((failures + 1))
      fi
    done
  done
done
[ "$failures" -eq 0 ] || fail "$failures example runs failed or differ from the plain run (above)"
