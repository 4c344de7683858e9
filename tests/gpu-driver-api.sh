#!/bin/sh
# Driver-API programs under mgpu-run on real GPUs: one linked with -lcuda and
# one that finds every entry point with dlopen/dlsym and cuGetProcAddress.
# Both check their results and the device count (all selected GPUs, or one
# with MGPU_DEVICE_COUNT=one); the report shows their launches.
. "$(dirname "$0")/common.sh"
require_gpu
ptx=tests/gpu/scale.ptx
runs="1"
[ "$gpu_count" -ge 2 ] && runs="1 2"
for n in $runs; do
  EXPECT_DEVICES=$n "$MGPU_RUN" -n $n --report tests/gpu/driver_api_client $ptx > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err"; fail "driver_api_client under -n $n"; }
  expect_in "$work/out" "driver_api_client: PASS"
  expect_match "$work/err" '^scale +7 4096 +256 +(no \[[12]\]|x2( no \[2\])?)'
  pass "a -lcuda program under -n $n"

  EXPECT_DEVICES=1 MGPU_DEVICE_COUNT=one "$MGPU_RUN" -n $n --report tests/gpu/dlsym_client $ptx \
    > "$work/out" 2> "$work/err" || { cat "$work/out" "$work/err"; fail "dlsym_client under -n $n"; }
  expect_in "$work/out" "dlsym_client: dlsym path PASS"
  expect_in "$work/out" "dlsym_client: cuGetProcAddress path PASS"
  expect_match "$work/err" '^scale +5 4096 +256 +(no \[[12]\]|x2( no \[2\])?)'
  expect_in "$work/err" "1 device seen"
  pass "a dlopen/dlsym program under -n $n, seeing one device"
done
