#!/bin/sh
# Each splittable fixture kernel, rewritten and loaded on two GPUs, run as
# two slices of its grid, gives what one unsplit launch gives (see
# tests/gpu/split_kernels_gpu.c). Needs a GPU.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/gpu/split_kernels_gpu
"$prog" tests/ptx/split_kernels.ptx > "$work/first" 2>&1 || { cat "$work/first"; fail "split launches"; }
cat "$work/first"
expect_in "$work/first" "module copies: loaded on 2 GPUs"
expect_in "$work/first" "all split launches match the unsplit ones"
[ "$gpu_count" -lt 2 ] || expect_in "$work/first" "slices on GPU 0 and GPU 1"
pass "split launches on $gpu_count GPU(s) match unsplit ones"
