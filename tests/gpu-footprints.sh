#!/bin/sh
# The footprints are sound on the GPU (issue 45, item 2): every test
# program and example, run with every launch split over GPU 0 eight times
# (MGPU_SPLIT=always --gpus 0x8) under the footprint-check probe, touches
# no byte outside what its kernels' footprints predicted for each slice:
# the check's line at exit says 0 escapes, and every program's output is
# the plain run's. Each kernel's tightness (predicted bytes over touched)
# is printed for the record. The corpus (bench/corpus, built by `make
# corpus`) is checked by tests/gpu-footprints-corpus.sh, with this script.
# MGPU_TEST_FOOTPRINT_PROGRAMS replaces the list (paths from the build
# directory); a program not built is left out, said so, and the test is
# skipped when none is built.
. "$(dirname "$0")/common.sh"
require_gpu
programs=${MGPU_TEST_FOOTPRINT_PROGRAMS:-"tests/programs/stencil1d tests/programs/stencil3d
  tests/programs/gaussian tests/programs/bfs tests/programs/spmv_csr tests/programs/conv2d
  tests/programs/fdtd2d tests/programs/threadfence_reduction tests/programs/atomic_sum
  tests/programs/histogram_atomicinc tests/programs/pointer_chase tests/programs/two_threads
  tests/programs/transpose tests/programs/scan tests/programs/lookback_scan examples/vector_add
  examples/saxpy examples/jacobi2d examples/sgemm examples/histogram examples/reduction examples/nbody"}
failures=0
checked=0
built=0
for prog in $programs; do
  [ -x "$prog" ] || { echo "left out (not built): $prog"; continue; }
  built=$((built + 1))
  name=$(basename "$prog")
  args=""
  case $prog in examples/*) args=--quick ;; esac
  timeout 300 "$prog" $args > "$work/$name.plain" 2> /dev/null || { failures=$((failures + 1)); echo "FAIL: $prog without mgpu" >&2; continue; }
  timeout 600 env MGPU_SPLIT=always "$MGPU_RUN" --gpus 0x8 --probe footprint-check "$prog" $args \
    > "$work/$name.out" 2> "$work/$name.err"
  status=$?
  line=$(grep '^footprint-check:' "$work/$name.err")
  if [ "$status" -ne 0 ] || [ -z "$line" ]; then
    cat "$work/$name.err" >&2
    echo "FAIL: $prog under the footprint check exited $status" >&2
    failures=$((failures + 1))
    continue
  fi
  grep -v '^time: ' "$work/$name.plain" > "$work/$name.p"
  grep -v '^time: ' "$work/$name.out" > "$work/$name.o"
  cmp -s "$work/$name.p" "$work/$name.o" || { diff "$work/$name.p" "$work/$name.o" >&2; echo "FAIL: $prog's output differs" >&2; failures=$((failures + 1)); }
  echo "$line" | grep -q ', 0 escapes;' || {
    sed -n '/^footprint-check:/,/^[^ ]/p' "$work/$name.err" >&2
    echo "FAIL: $prog: a slice touched bytes its footprint did not predict" >&2
    failures=$((failures + 1))
  }
  echo "$prog: $line"
  sed -n '/^footprint-check:/,/^[^ ]/p' "$work/$name.err" | grep '^  ' | sed 's/^/  /'
  checked=$((checked + 1))
done
[ "$built" -gt 0 ] || { echo "none of the programs is built (the corpus: make corpus)"; exit 77; }
[ "$checked" -gt 0 ] || fail "no program could be checked"
[ "$failures" -eq 0 ] || fail "$failures of the footprint runs failed (above)"
pass "$checked programs: no slice touched a byte outside its footprint; outputs as plain"
