#!/bin/sh
# Each splittable fixture kernel, rewritten and loaded on two GPUs, run as
# two slices of its grid, gives what one unsplit launch gives (see
# tests/gpu/split_kernels_gpu.c). A second run finds the compiled modules in
# the disk cache instead of compiling again. Needs a GPU.
. "$(dirname "$0")/common.sh"
require_gpu
export MGPU_CACHE_DIR="$work/cache"
prog=tests/gpu/split_kernels_gpu
"$prog" tests/ptx/split_kernels.ptx > "$work/first" 2>&1 || { cat "$work/first"; fail "split launches"; }
cat "$work/first"
expect_in "$work/first" "module copies: compiled"
expect_in "$work/first" "all split launches match the unsplit ones"
[ "$gpu_count" -lt 2 ] || expect_in "$work/first" "slices on GPU 0 and GPU 1"
ls "$work/cache"/*.cubin > /dev/null 2>&1 || fail "nothing in the module cache"
"$prog" tests/ptx/split_kernels.ptx > "$work/second" 2>&1 || { cat "$work/second"; fail "second run"; }
expect_in "$work/second" "module copies: from the disk cache"
expect_in "$work/second" "all split launches match the unsplit ones"
pass "split launches on $gpu_count GPU(s) match unsplit ones; the second run compiles nothing"
