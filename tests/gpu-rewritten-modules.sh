#!/bin/sh
# Programs under mgpu-run with two GPUs or more (GPU 0 two, three and eight
# times, distinct GPUs where there are several: $entry_sets) run their
# kernels from mgpu's rewritten per-GPU modules, one per GPU, with the same
# results as without mgpu: a CUDA
# runtime program with a __device__ counter, __constant__ data the host
# rewrites, a device function reading blockIdx and 64 KiB of dynamic shared
# memory (tests/gpu/module_state.cu), and a driver-API program loading PTX,
# a cuLink output, a cubin without PTX, a fatbin with a corrupt PTX entry and
# garbage (tests/gpu/module_loads.c). The report says which modules got
# rewritten modules and why the others did not; a second run finds them in the driver's
# JIT cache. A rewritten module runs as fast as the program's own module
# (tests/gpu/rewritten_speed.c).
. "$(dirname "$0")/common.sh"
require_gpu
state=tests/gpu/module_state
loads="tests/gpu/module_loads tests/gpu/scale.ptx tests/gpu/scale.cubin tests/gpu/scale.fatbin"

$state > "$work/out" 2>&1 || { cat "$work/out"; fail "module_state without mgpu"; }
expect_in "$work/out" "module_state: PASS"
"$MGPU_RUN" -n 1 --report $state > "$work/out" 2> "$work/err" || {
  cat "$work/out" "$work/err"; fail "module_state under -n 1"; }
expect_in "$work/out" "module_state: PASS"
pass "module_state passes alone and under -n 1"

# Whole-program code: the same as the driver makes of the program's PTX.
# Up to three tries for the timing: other work may share the GPU (the lock
# in common.sh only keeps mgpu's GPU tests apart).
ok=0
for try in 1 2 3; do
  tests/gpu/rewritten_speed tests/gpu/tiled_matmul.ptx > "$work/out" 2>&1 && ok=1
  cat "$work/out"
  [ $ok = 1 ] && break
  grep -q "FAIL: the products" "$work/out" && break
done
[ $ok = 1 ] || fail "rewritten_speed"
pass "a rewritten module runs as fast as the program's module, with the same results"

for set in $entry_sets; do
  n=$(entries_in "$set")
  MGPU_VERBOSE=1 "$MGPU_RUN" --gpus "$set" --report $state > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err"; fail "module_state under --gpus $set"; }
  cat "$work/out" "$work/err"
  expect_in "$work/out" "module_state: PASS"
  expect_match "$work/err" "^  module 1 \(cuLibraryLoadData\): rewritten for $n GPUs, built in [0-9.]+ s; 13 launches from them"
  # Whole: by the cost model ([2]), or made while the other GPUs were made ready ([10]).
  expect_match "$work/err" '^weigh\(float\*, unsigned int\) +4 +32x64 +128 +no \[(2|2,10|10)\]'
  expect_match "$work/err" '^staged_sum\(.*\) +1 +96 +256 +no \[(2|10)\]'
  expect_match "$work/err" '^  \[(2\] ran whole on the home GPU: one block, or the cost model|10\] ran whole while the other GPUs were made ready)'
  # Every launch split: the __device__ counter, the __constant__ data and
  # the device function's blockIdx are right in every slice.
  MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" --report $state > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err"; fail "module_state under --gpus $set, MGPU_SPLIT=always"; }
  expect_in "$work/out" "module_state: PASS"
  expect_match "$work/err" "^weigh\(float\*, unsigned int\) +4 +32x64 +128 +x$n "
  pass "a CUDA runtime program runs from $n rewritten modules (--gpus $set) with the same results, split or not"
done
set=${entry_sets%% *}
n=$(entries_in "$set")

cache_files() { find "$CUDA_CACHE_PATH" -type f 2>/dev/null | wc -l; }
compiled=$(cache_files)
[ "$compiled" -gt 0 ] || fail "nothing in the driver's JIT cache ($CUDA_CACHE_PATH) after the rewritten modules were built"
"$MGPU_RUN" --gpus "$set" --report $state > "$work/out" 2> "$work/err" || {
  cat "$work/out" "$work/err"; fail "module_state, second run"; }
expect_in "$work/out" "module_state: PASS"
expect_match "$work/err" "^  module 1 \(cuLibraryLoadData\): rewritten for $n GPUs, built in"
[ "$(cache_files)" -eq "$compiled" ] ||
  fail "the second run compiled again: $compiled files in the JIT cache before it, $(cache_files) after"
pass "the second run finds the compiled rewritten modules in the driver's JIT cache"

MGPU_SPLIT=never "$MGPU_RUN" --gpus "$set" --report $state > "$work/out" 2> "$work/err" || {
  cat "$work/out" "$work/err"; fail "module_state, MGPU_SPLIT=never"; }
expect_in "$work/out" "module_state: PASS"
grep -q "^  module [0-9]* (.*): rewritten for" "$work/err" && fail "MGPU_SPLIT=never still made rewritten modules"
expect_in "$work/err" "MGPU_SPLIT=never"
pass "MGPU_SPLIT=never leaves the program's modules alone"

$loads > "$work/out" 2>&1 || { cat "$work/out"; fail "module_loads without mgpu"; }
expect_in "$work/out" "module_loads: PASS"
for set in $entry_sets; do
  n=$(entries_in "$set")
  MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" --report $loads > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err"; fail "module_loads under --gpus $set"; }
  cat "$work/out" "$work/err"
  expect_in "$work/out" "module_loads: PASS"
  expect_in "$work/err" "module 1 (cuModuleLoadData): rewritten for $n GPUs"
  expect_in "$work/err" "module 2 (cuModuleLoadData): rewritten for $n GPUs"
  expect_in "$work/err" "module 3 (cuModuleLoad): runs as loaded: the image has no PTX for sm_90"
  expect_match "$work/err" "module 4 \(cuModuleLoadData\): runs as loaded: (corrupt image|the JIT compiler refuses)"
  pass "driver-API loads under --gpus $set: PTX and cuLink outputs get $n rewritten modules, a cubin and a corrupt fatbin run as loaded"
done
