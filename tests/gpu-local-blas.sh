#!/bin/sh
# The PyTorch pattern with the real cuBLAS and cuBLASLt: a library loaded
# with dlopen(RTLD_LOCAL), its cuBLAS in its own scope through its run path
# (tests/fake/local_blas_module.c built against the toolkit's libraries,
# libcublas_module_gpu.so), running cublasDgemm and cublasLtMatmul (a bias
# and ReLU on a separate D, a transposed A, a bias with two columns, a
# batch with GELU, a small call), every element checked. Plain, then under
# mgpu-run on the test's GPU sets with MGPU_BLAS_MIN low enough to split
# the large ones: the module's calls reach its own libraries, the cuttable
# ones are cut, and the results stay right; under -n 1 nothing is cut.
. "$(dirname "$0")/common.sh"
require_gpu
module="$top_builddir/tests/fake/.libs/libcublas_module_gpu.so"
client=tests/fake/local_module_client
[ -f "$module" ] || { echo "no $module: configure found no shared cuBLAS"; exit 77; }

correct() {
  expect_in "$1" "module: cuBLAS 3 of 3 cases correct"
  expect_in "$1" "module: cuBLASLt 5 of 5 cases correct"
}

timeout 120 $client "$module" > "$work/plain" 2>&1 || { cat "$work/plain" >&2; fail "without mgpu"; }
correct "$work/plain"
pass "without mgpu: every case within tolerance"

for gpus in $entry_sets; do
  label=$(echo "$gpus" | tr ',' '_')
  MGPU_SPLIT=always MGPU_BLAS_MIN=1000 timeout 180 "$MGPU_RUN" --gpus "$gpus" --report $client "$module" \
    > "$work/$label.out" 2> "$work/$label.err" ||
    { cat "$work/$label.out" "$work/$label.err" >&2; fail "under mgpu-run --gpus $gpus"; }
  correct "$work/$label.out"
  expect_match "$work/$label.err" "cublasDgemm_v2: 3 calls, 2 split"
  # The bias of two columns is cut where there are two entries, whole past that.
  expect_match "$work/$label.err" "cublasLtMatmul: 5 calls, [23] split \\([23] by columns\\)"
  pass "--gpus $gpus: the module's GEMMs reach its own cuBLAS and cuBLASLt, the large ones cut, right"
done

MGPU_BLAS_MIN=1000 timeout 120 "$MGPU_RUN" -n 1 --report $client "$module" \
  > "$work/one.out" 2> "$work/one.err" || { cat "$work/one.out" "$work/one.err" >&2; fail "-n 1"; }
correct "$work/one.out"
expect_match "$work/one.err" "cublasLtMatmul: 5 calls, 0 split"
pass "-n 1: the module's calls pass through, right"
