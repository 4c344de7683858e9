#!/bin/sh
# Driver-API programs under mgpu-run on real GPUs: one linked with -lcuda and
# one that finds every entry point with dlopen/dlsym and cuGetProcAddress.
# Both check their results and the device count (all selected GPUs, or one
# with MGPU_DEVICE_COUNT=one); the report shows their launches.
. "$(dirname "$0")/common.sh"
require_gpu
ptx=tests/gpu/scale.ptx
for set in 1 $entry_sets; do
  if [ "$set" = 1 ]; then gpus="-n 1"; n=1; else gpus="--gpus $set"; n=$(entries_in "$set"); fi
  devices=$(echo "$set" | tr ',' '\n' | sed 's/x.*//' | sort -u | wc -l)
  EXPECT_DEVICES=$devices "$MGPU_RUN" $gpus --report tests/gpu/driver_api_client $ptx > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err"; fail "driver_api_client under $gpus"; }
  expect_in "$work/out" "driver_api_client: PASS"
  # (launches made while the other GPUs were made ready show [10])
  expect_match "$work/err" "^scale +7 4096 +256 +(no \[([12]|2,10|10)\]|x$n( no \[(2|2,10|10)\])?)"
  pass "a -lcuda program under $gpus"

  EXPECT_DEVICES=1 MGPU_DEVICE_COUNT=one MGPU_SPLIT=always "$MGPU_RUN" $gpus --report \
    tests/gpu/dlsym_client $ptx > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err"; fail "dlsym_client under $gpus"; }
  expect_in "$work/out" "dlsym_client: dlsym path PASS"
  expect_in "$work/out" "dlsym_client: cuGetProcAddress path PASS"
  if [ $n -gt 1 ]; then
    expect_match "$work/err" "^scale +5 4096 +256 +x$n"
  else
    expect_match "$work/err" '^scale +5 4096 +256 +no \[1\]'
  fi
  expect_in "$work/err" "1 device seen"
  pass "a dlopen/dlsym program under $gpus, seeing one device, its launches split $n ways"
done
