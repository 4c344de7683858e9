#!/bin/sh
# The examples (examples/README.md) give the same output under mgpu-run as
# without it: each runs with --quick plainly, then under -n 1 and under every
# --gpus list of $entry_sets (GPU 0 two, three and eight times, and distinct
# GPUs where the machine has them: common.sh), with MGPU_SPLIT=always and,
# except where GPUs share a device, with the default MGPU_SPLIT. Every run must exit 0 and print one
# "time:" line, and its other lines (results and checksums, bit-identical
# where the kernel is deterministic) must be the plain run's; under always,
# the report must show a kernel cut into as many slices as the list has GPUs.
# Last, each runs under --gpus 0x8 with MGPU_MIRROR=always (below).
# All differences are shown before the test fails.
. "$(dirname "$0")/common.sh"
require_gpu
examples="vector_add saxpy jacobi2d sgemm histogram reduction nbody driver_api"
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
  for set in 1 $entry_sets; do
    if [ "$set" = 1 ]; then n=1; gpus="-n 1"; else n=$(entries_in "$set"); gpus="--gpus $set"; fi
    splits="auto always"
    # GPUs sharing a device gain nothing from a split, so the cost model
    # keeps most launches whole there: every launch split tests more.
    repeats_a_gpu "$set" && splits=always
    for split in $splits; do
      label=$ex.$(echo "$set" | tr ',' '_').$split
      MGPU_SPLIT=$split "$MGPU_RUN" $gpus --report "$prog" --quick > "$work/$label.out" 2> "$work/$label.err"
      check_run "$label" $? || continue
      if ! diff "$work/$ex.plain.result" "$work/$label.result" > "$work/$label.diff"; then
        echo "FAIL: $ex under $gpus, MGPU_SPLIT=$split differs from the plain run (< plain, > mgpu):" >&2
        cat "$work/$label.diff" "$work/$label.err" >&2
        failures=$((failures + 1))
      elif [ "$n" -gt 1 ] && [ $split = always ] && ! grep -Eq " x$n( |$)" "$work/$label.err"; then
        echo "FAIL: $ex under $gpus, MGPU_SPLIT=always: no kernel split into $n slices:" >&2
        cat "$work/$label.err" >&2
        failures=$((failures + 1))
      else
        slices=$(grep -Eo " x[0-9]+( |$)" "$work/$label.err" | tr -d ' x' | sort -n | tail -n 1)
        pass "$ex under $gpus, MGPU_SPLIT=$split: ${slices:-no} slices at most, the plain run's output"
      fi
    done
  done
  # Mirrors (issue 18): every buffer a split launch only reads replicated on
  # each of 8 entries, every privatisable reduction privatised; the output
  # must not change, and the report must show what each example is for:
  # sgemm's A and B and nbody's positions read from replicas, histogram's
  # bins privatised, NCCL's communicator used where it is installed.
  label=$ex.mirror
  MGPU_SPLIT=always MGPU_MIRROR=always "$MGPU_RUN" --gpus 0x8 --report "$prog" --quick \
    > "$work/$label.out" 2> "$work/$label.err"
  check_run "$label" $? || continue
  want=""
  case $ex in
    sgemm) want='^  sgemm_tiled.*: parameters 0, 1$' ;;
    nbody) want='^  nbody_step.*: parameters 0, 1$' ;;
    histogram) want='^  histogram_bytes.*: parameter 2$' ;;
  esac
  if ! diff "$work/$ex.plain.result" "$work/$label.result" > "$work/$label.diff"; then
    echo "FAIL: $ex under --gpus 0x8, MGPU_MIRROR=always differs from the plain run (< plain, > mgpu):" >&2
    cat "$work/$label.diff" "$work/$label.err" >&2
    failures=$((failures + 1))
  elif [ -n "$want" ] && ! grep -Eq "$want" "$work/$label.err"; then
    echo "FAIL: $ex under --gpus 0x8, MGPU_MIRROR=always: the report has no line '$want':" >&2
    cat "$work/$label.err" >&2
    failures=$((failures + 1))
  elif [ "$ex" = histogram ] && ! grep -q "^reductions privatised on each GPU" "$work/$label.err"; then
    echo "FAIL: histogram under MGPU_MIRROR=always: its bins were not privatised:" >&2
    cat "$work/$label.err" >&2
    failures=$((failures + 1))
  elif [ -n "$want" ] && ldconfig -p 2> /dev/null | grep -q 'libnccl\.so\.2' &&
    ! grep -Eq '^  mirrors through NCCL: one communicator over 1 device, [1-9][0-9]* collectives' "$work/$label.err"; then
    echo "FAIL: $ex under MGPU_MIRROR=always: NCCL is installed but the report shows no collective through it:" >&2
    grep -E "mirror|NCCL" "$work/$label.err" >&2
    failures=$((failures + 1))
  else
    pass "$ex under --gpus 0x8, MGPU_MIRROR=always: the plain run's output;$(grep -E '^  (mirrors|reductions privatised): ' "$work/$label.err" | sed 's/^  / /' | tr '\n' ';')"
  fi
  # MGPU_MIRROR=auto (the default) times each kernel shape with and without
  # mirrors and keeps the faster, but makes no copy on a device that holds
  # all of a buffer: on one device listed four times nothing is copied or
  # timed. On distinct GPUs (the first such set, where there is one),
  # sgemm's kernel (six launches with --quick) must have been timed both
  # ways. The output must not change either way.
  distinct=$(first_distinct_set)
  for gpus in 0x4 ${distinct:+$distinct}; do
    label=$ex.mirror_auto_$(echo "$gpus" | tr ',' '_')
    MGPU_SPLIT=always MGPU_MIRROR=auto "$MGPU_RUN" --gpus "$gpus" --report "$prog" --quick \
      > "$work/$label.out" 2> "$work/$label.err"
    check_run "$label" $? || continue
    if ! diff "$work/$ex.plain.result" "$work/$label.result" > "$work/$label.diff"; then
      echo "FAIL: $ex under --gpus $gpus, MGPU_MIRROR=auto differs from the plain run (< plain, > mgpu):" >&2
      cat "$work/$label.diff" "$work/$label.err" >&2
      failures=$((failures + 1))
    elif [ "$gpus" = 0x4 ] &&
      ! grep -Eq '^  mirrors \(auto\): none made, no kernel shape tried' "$work/$label.err"; then
      echo "FAIL: $ex under --gpus 0x4, MGPU_MIRROR=auto: copies made on the one device:" >&2
      grep -E "mirror" "$work/$label.err" >&2
      failures=$((failures + 1))
    elif [ "$gpus" != 0x4 ] && [ $ex = sgemm ] &&
      ! grep -Eq '^  mirrors \(auto\): [1-9][0-9]* kernel shapes timed' "$work/$label.err"; then
      echo "FAIL: $ex under --gpus $gpus, MGPU_MIRROR=auto: no kernel shape was timed both ways:" >&2
      cat "$work/$label.err" >&2
      failures=$((failures + 1))
    else
      pass "$ex under --gpus $gpus, MGPU_MIRROR=auto: the plain run's output;$(grep -E '^  mirrors( \(auto\))?: ' "$work/$label.err" | sed 's/^  mirrors//' | tr '\n' ';')"
    fi
  done
done
[ "$failures" -eq 0 ] || fail "$failures example runs failed or differ from the plain run (above)"
