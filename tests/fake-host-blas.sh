#!/bin/sh
# A CPU program's BLAS on the GPUs (issue 21, item 2: mgpu-run --blas), on
# the fake GPU with the fake cuBLAS (no GPU needed). tests/blas/cpu_gemms
# is a CPU program linked with the CPU BLAS; it calls CBLAS in both
# layouts and the Fortran GEMMs in the four types and checks every C
# against its own reference. Plainly it must pass on the CPU BLAS. Under
# mgpu-run --blas -n 4 with a low MGPU_HOST_BLAS_MIN the large calls must
# go to the GPUs (the fake cuBLAS logs them, split by mgpu's cuBLAS
# interposer over the 4 GPUs) and still pass; the small one stays on the
# CPU; the report lists both. Without --blas, or below the default
# threshold, nothing reaches the GPUs.
. "$(dirname "$0")/common.sh"
prog=tests/blas/cpu_gemms
[ -x "$prog" ] || { echo "no $prog: configure found no CPU BLAS (libblas-dev)"; exit 77; }
use_fake_driver
export MGPU_CUBLAS="$top_builddir/tests/fake/.libs/libfakecublas.so"
export FAKE_CUDA_GPUS=4
cases=12

$prog > "$work/plain" 2>&1 || { cat "$work/plain" >&2; fail "$prog without mgpu"; }
expect_in "$work/plain" "cpu_gemms: $cases cases correct"
pass "without mgpu: every case right on the CPU BLAS"

# run NAME ENV... -- MGPU-RUN ARGS...
run() {
  name=$1; shift
  envs=""
  while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
  shift
  : > "$work/$name.log"
  env $envs FAKE_CUBLAS_LOG="$work/$name.log" "$MGPU_RUN" "$@" --report $prog \
    > "$work/$name.out" 2> "$work/$name.err" ||
    { cat "$work/$name.out" "$work/$name.err" >&2; fail "$prog under mgpu-run $* with$envs ($name)"; }
  expect_in "$work/$name.out" "cpu_gemms: $cases cases correct"
}
count() { grep -c -E -- "$2" "$work/$1.log"; }

run blas MGPU_SPLIT=always MGPU_HOST_BLAS_MIN=10000 MGPU_BLAS_MIN=1000 -- -n 4 --blas
expect_in "$work/blas.err" "CPU BLAS calls (--blas):"
expect_match "$work/blas.err" "cblas_sgemm: 5 calls, 4 on the GPUs \\([0-9.]+ ms, [0-9.]+ [KM]iB copied\\); largest .*; 1 on the CPU: below MGPU_HOST_BLAS_MIN"
expect_match "$work/blas.err" "cblas_zgemm: 1 calls, 1 on the GPUs"
expect_match "$work/blas.err" "sgemm_: 1 calls, 1 on the GPUs"
expect_match "$work/blas.err" "zgemm_: 1 calls, 1 on the GPUs"
expect_match "$work/blas.err" "cublasSgemm_v2: [0-9]+ calls, [0-9]+ split"
# Each GEMM in two chunks of columns, each chunk cut over the 4 GPUs.
[ "$(count blas '^cublasZgemm_v2 ')" -eq 16 ] ||
  { cat "$work/blas.log" >&2; fail "two zgemm calls, two chunks each, four parts: not 16 parts"; }
grep -q "^cublasSgemm_v2 m=8 " "$work/blas.log" && fail "the 8x8x8 sgemm reached the GPU"
pass "--blas -n 4: CBLAS (both layouts) and Fortran GEMMs on the GPUs, split, right; the small one on the CPU"

run entries MGPU_SPLIT=always MGPU_HOST_BLAS_MIN=10000 MGPU_BLAS_MIN=1000 -- --gpus 0x4 --blas
expect_match "$work/entries.err" "cblas_sgemm: 5 calls, 4 on the GPUs"
pass "--blas --gpus 0x4: the same on one device standing for four"

run whole MGPU_HOST_BLAS_MIN=10000 -- -n 1 --blas
expect_match "$work/whole.err" "cblas_dgemm: 2 calls, 2 on the GPUs"
expect_match "$work/whole.err" "cublasDgemm_v2: 6 calls, 0 split.*6 whole: one GPU"
pass "--blas -n 1: on the one GPU, whole"

# The second GEMM call fails (a GPU fault, say): the offload of the first
# sgemm stops after its first chunk, and the CPU BLAS computes the columns
# the GPU did not bring back; the results stay right.
run failing MGPU_HOST_BLAS_MIN=10000 FAKE_CUBLAS_FAIL_CALL=2 -- -n 1 --blas
expect_match "$work/failing.err" "cblas_sgemm: 5 calls, 3 on the GPUs .*; 1 on the CPU: the GPUs failed part way; the CPU BLAS finished it"
pass "a GEMM that fails on the GPU part way: the CPU BLAS finishes it, right"

run default -- -n 4 --blas
[ "$(count default .)" -eq 0 ] || fail "below the default MGPU_HOST_BLAS_MIN, a GEMM reached the GPU"
expect_match "$work/default.err" "cblas_sgemm: 5 calls, 0 on the GPUs .*5 on the CPU: below MGPU_HOST_BLAS_MIN"
pass "the default threshold (2^30) keeps these on the CPU"

run off MGPU_HOST_BLAS_MIN=10000 -- -n 4
[ "$(count off .)" -eq 0 ] || fail "without --blas, a GEMM reached the GPU"
grep -q "CPU BLAS calls" "$work/off.err" && fail "without --blas, the report lists CPU BLAS calls"
pass "without --blas the CPU BLAS is left alone"

one_line_error 2 "MGPU_HOST_BLAS_MIN=lots is not valid" env MGPU_HOST_BLAS_MIN=lots "$MGPU_RUN" --blas $prog
pass "a bad MGPU_HOST_BLAS_MIN: one line"
