#!/bin/sh
# BLAS reached from a library loaded RTLD_LOCAL, as Python loads a
# framework's extension module with its cuBLAS or CPU BLAS in the module's
# own scope (blas/caller_scope.c), on the fake GPU (no GPU needed).
# tests/fake/local_module_client dlopens a module of
# tests/fake/local_blas_module.c with RTLD_LOCAL and runs its GEMMs, each
# checked against the reference. mgpu's interposers are preloaded, so the
# module's calls reach them first; the real routine must then be the
# module's own library's, neither missing (the call failed or C left
# unwritten) nor another library's (a handle given to a cuBLAS that did
# not make it, which the fake refuses and says).
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4
# The fake computes with the module's own reference: results to the bit.
export MODULE_EXACT=1
libs="$top_builddir/tests/fake/.libs"
client=tests/fake/local_module_client

# run NAME PROGRAM MODULE ENV... -- MGPU-RUN ARGS...: PROGRAM MODULE under
# mgpu-run ARGS --report with ENV, exit 0; output in $work/NAME.out and
# .err, the fake cuBLAS's log in $work/NAME.log.
run() {
  name=$1; program=$2; module=$3; shift 3
  envs=""
  while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
  shift
  : > "$work/$name.log"
  env $envs FAKE_CUBLAS_LOG="$work/$name.log" "$MGPU_RUN" "$@" --report "$program" "$module" \
    > "$work/$name.out" 2> "$work/$name.err" ||
    { cat "$work/$name.out" "$work/$name.err" >&2; fail "$program $module under mgpu-run $* ($name)"; }
  if grep -q "did not make" "$work/$name.err"; then
    cat "$work/$name.err" >&2; fail "$name: a handle reached a cuBLAS that did not make it"
  fi
}
count() { grep -c -E -- "$2" "$work/$1.log"; }

# cuBLAS in the module's scope: the pass-through case first.
run one "$client" "$libs/libcublas_module.so" -- -n 1
expect_in "$work/one.out" "module: cuBLAS 3 of 3 cases correct"
expect_in "$work/one.out" "module: cuBLASLt 5 of 5 cases correct"
pass "-n 1: the module's cublasDgemm and cublasLtMatmul reach the libraries in its own scope"

run split "$client" "$libs/libcublas_module.so" MGPU_SPLIT=always MGPU_BLAS_MIN=1000 MGPU_VERBOSE=2 -- -n 4
expect_in "$work/split.out" "module: cuBLAS 3 of 3 cases correct"
[ "$(count split '^cublasDgemm_v2 m=96 n=16 k=40 .*devices=4 ')" -eq 4 ] ||
  { cat "$work/split.log" >&2; fail "the module's 96x64x40 Dgemm was not cut in four on mgpu's handles"; }
expect_match "$work/split.err" "cublasDgemm_v2: 3 calls, 2 split"
expect_match "$work/split.err" "cublasDgemm_v2 called from .*libcublas_module.so goes to .*libfakecublas.so"
pass "-n 4: the module's large GEMMs split on handles of its own cuBLAS, right; -v names the library"
# cublasLtMatmul: D cut by columns (a bias and ReLU on D, a separate D; a
# transposed A), each part on a cuBLASLt handle of its GPU entry; a bias
# with fewer columns than GPUs (a cut by rows would need the bias cut),
# a batch and a small call whole; every element right.
expect_in "$work/split.out" "module: cuBLASLt 5 of 5 cases correct"
[ "$(count split '^cublasLtMatmul m=96 n=16 k=40 batch=1 handle=[1-4] devices=4$')" -eq 4 ] ||
  { cat "$work/split.log" >&2; fail "the 96x64x40 cublasLtMatmul with bias and ReLU was not cut in four"; }
[ "$(count split '^cublasLtMatmul m=80 n=12 k=24 ')" -eq 4 ] ||
  { cat "$work/split.log" >&2; fail "the 80x48x24 cublasLtMatmul (A transposed) was not cut in four"; }
[ "$(count split '^cublasLtMatmul m=(64 n=2|32 n=32|8 n=8) .*handle=0 ')" -eq 3 ] ||
  { cat "$work/split.log" >&2; fail "the bias of 2 columns, the batch and the small call were not left whole"; }
expect_match "$work/split.err" "cublasLtMatmul: 5 calls, 2 split \\(2 by columns\\).*1 whole: below MGPU_BLAS_MIN; 1 whole: nothing to cut"
expect_match "$work/split.err" "^    1 whole: a layout or epilogue not cut"
pass "-n 4: cublasLtMatmul cut by D's columns with its epilogue, right; a bias that needs rows, a batch and a small one whole"

run entries "$client" "$libs/libcublas_module.so" MGPU_SPLIT=always MGPU_BLAS_MIN=1000 -- --gpus 0x4
expect_in "$work/entries.out" "module: cuBLAS 3 of 3 cases correct"
expect_in "$work/entries.out" "module: cuBLASLt 5 of 5 cases correct"
expect_match "$work/entries.err" "cublasLtMatmul: 5 calls, 2 split"
expect_match "$work/entries.err" "cublasDgemm_v2: 3 calls, 2 split"
pass "--gpus 0x4: the same on one device standing for four"

# The program has a cuBLAS of its own (libfakecublas2) besides the module's:
# each caller's calls, and mgpu's handles, stay with its own library.
run own tests/fake/local_module_client_own "$libs/libcublas_module.so" MGPU_SPLIT=always MGPU_BLAS_MIN=1000 -- -n 4
expect_in "$work/own.out" "module: cuBLAS 3 of 3 cases correct"
expect_in "$work/own.out" "module: cuBLASLt 5 of 5 cases correct"
[ "$(grep -c "client: its own cuBLAS's Sgemm correct" "$work/own.out")" -eq 2 ] ||
  { cat "$work/own.out" >&2; fail "the program's own cuBLAS call went wrong"; }
pass "a program with another cuBLAS of its own: both libraries get their own calls and handles"

# The CPU BLAS in the module's scope (numpy and SciPy load theirs so).
if [ -f "$libs/libcpublas_module.so" ]; then
  export MGPU_CUBLAS="$libs/libfakecublas.so"
  run cpu "$client" "$libs/libcpublas_module.so" -- -n 4 --blas
  expect_in "$work/cpu.out" "module: CPU BLAS 6 of 6 cases correct"
  expect_match "$work/cpu.err" "cblas_dgemm: 3 calls, 0 on the GPUs .*3 on the CPU: below MGPU_HOST_BLAS_MIN"
  pass "--blas: small calls reach the CPU BLAS in the module's scope and write C"

  run cpu_gpus "$client" "$libs/libcpublas_module.so" MGPU_SPLIT=always MGPU_HOST_BLAS_MIN=10000 MGPU_BLAS_MIN=1000 -- -n 4 --blas
  expect_in "$work/cpu_gpus.out" "module: CPU BLAS 6 of 6 cases correct"
  expect_match "$work/cpu_gpus.err" "cblas_dgemm: 3 calls, 2 on the GPUs .*1 on the CPU: below MGPU_HOST_BLAS_MIN"
  expect_match "$work/cpu_gpus.err" "dgemm_: 3 calls, 2 on the GPUs"
  pass "--blas: the large calls on the GPUs, the small one on the module's CPU BLAS, all right"
else
  echo "skipped: the CPU BLAS module (configure found no CPU BLAS: libblas-dev)"
fi
