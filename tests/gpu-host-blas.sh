#!/bin/sh
# A CPU program's BLAS on the GPUs (issue 21, item 2: mgpu-run --blas) with
# the real cuBLAS: tests/blas/cpu_gemms, a CPU program linked with the CPU
# BLAS, must give right results plainly and under --blas on each of the
# test's GPU sets, its large GEMMs on the GPUs (the report) and split over
# them by mgpu's cuBLAS interposer, the small one on the CPU; and under
# --blas -n 1.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/blas/cpu_gemms
[ -x "$prog" ] || { echo "no $prog: configure found no CPU BLAS (libblas-dev)"; exit 77; }
cases=12
timeout 120 $prog > "$work/plain" 2>&1 || { cat "$work/plain" >&2; fail "without mgpu"; }
expect_in "$work/plain" "cpu_gemms: $cases cases correct"
pass "without mgpu: every case right on the CPU BLAS"
for gpus in $entry_sets; do
  label=$(echo "$gpus" | tr ',' '_')
  MGPU_SPLIT=always MGPU_HOST_BLAS_MIN=10000 MGPU_BLAS_MIN=1000 timeout 180 "$MGPU_RUN" --gpus "$gpus" --blas \
    --report $prog > "$work/$label.out" 2> "$work/$label.err" ||
    { cat "$work/$label.out" "$work/$label.err" >&2; fail "--blas --gpus $gpus"; }
  expect_in "$work/$label.out" "cpu_gemms: $cases cases correct"
  expect_match "$work/$label.err" "cblas_sgemm: 5 calls, 4 on the GPUs .*; 1 on the CPU: below MGPU_HOST_BLAS_MIN"
  expect_match "$work/$label.err" "zgemm_: 1 calls, 1 on the GPUs"
  expect_match "$work/$label.err" "cublasSgemm_v2: [0-9]+ calls, [1-9][0-9]* split"
  pass "--blas --gpus $gpus: the large GEMMs on the GPUs, split, right"
done
MGPU_HOST_BLAS_MIN=10000 timeout 120 "$MGPU_RUN" -n 1 --blas --report $prog > "$work/one.out" 2> "$work/one.err" ||
  { cat "$work/one.out" "$work/one.err" >&2; fail "--blas -n 1"; }
expect_in "$work/one.out" "cpu_gemms: $cases cases correct"
expect_match "$work/one.err" "cblas_dgemm: 2 calls, 2 on the GPUs"
pass "--blas -n 1: on the one GPU, right"
