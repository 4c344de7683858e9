#!/bin/sh
# CUDA runtime programs under mgpu-run on real GPUs, with the static runtime
# (nvcc's default) and the shared one: device 0 has the multiprocessors and
# memory of all selected devices (each once, however many of the run's GPUs
# stand on it: --gpus 0x8 shows one GPU's), results check out, and the
# report counts the program's launches (so the hooks were hit). The CUDA
# runtime needs to see every GPU the driver enumerates (see
# src/hooks/virtual_device.c), so the device count is the number of selected
# devices.
. "$(dirname "$0")/common.sh"
require_gpu

tests/gpu/device_query > "$work/plain" || { cat "$work/plain"; fail "device_query without mgpu"; }
expect_in "$work/plain" "devices=$gpu_count"
for set in 1 $entry_sets; do
  if [ "$set" = 1 ]; then gpus="-n 1"; n=1; else gpus="--gpus $set"; n=$(entries_in "$set"); fi
  # The devices the program sees: each distinct GPU of the list once.
  devices=$(echo "$set" | tr ',' '\n' | sed 's/x.*//' | sort -u | wc -l)
  sms=$(awk -v n=$devices '/^device /{ split($3, a, "="); if (++k <= n) s += a[2] } END { print s }' "$work/plain")
  mem=$(awk -v n=$devices '/^device /{ split($5, a, "="); if (++k <= n) s += a[2] } END { printf "%.0f", s }' "$work/plain")
  "$MGPU_RUN" $gpus tests/gpu/device_query > "$work/out" 2>&1 || { cat "$work/out"; fail "device_query $gpus"; }
  expect_in "$work/out" "devices=$devices"
  expect_in "$work/out" "device 0: sms=$sms props_sms=$sms mem=$mem "
  expect_in "$work/out" "set_device_past_end=invalid"
  home_sms=$(awk '/^device 0:/{ split($3, a, "="); print a[2] }' "$work/plain")
  MGPU_SM_COUNT=home "$MGPU_RUN" $gpus tests/gpu/device_query > "$work/out" 2>&1 || fail "home $gpus"
  expect_in "$work/out" "device 0: sms=$home_sms props_sms=$home_sms mem=$mem "
  pass "the virtual device under $gpus: $devices device(s) seen, device 0 has $sms SMs and $mem bytes"

  # 2^24 elements: 65536 blocks; a warm-up and 4 timed launches.
  for prog in examples/vector_add tests/gpu/vector_add_shared; do
    "$MGPU_RUN" $gpus --report $prog --size 16777216 --iterations 1 --repeats 4 \
      > "$work/out" 2> "$work/err" || {
      cat "$work/out" "$work/err"; fail "$prog under $gpus"; }
    cat "$work/out"
    expect_in "$work/out" "PASS"
    if [ "$devices" -lt "$n" ]; then
      expect_in "$work/err" "GPUs: $n selected on $devices device"
    else
      expect_in "$work/err" "GPUs: $n selected, home"
    fi
    expect_in "$work/err" "device 0 has $sms SMs"
    # (launches made while the other GPUs were made ready show [10])
    expect_match "$work/err" "^vector_add\(\.\.\.\) +5 65536 +256 +(no \[([12]|2,10|10)\]|x$n( no \[(2|2,10|10)\])?) +[0-9]+\.[0-9]+\$"
    expect_in "$work/err" "memory: 3 allocations (192.00 MiB), 3 frees"
    pass "$prog under $gpus: correct, and its 5 launches were seen"
  done
done
readelf -d tests/gpu/vector_add_shared | grep -q 'libcudart.so' || fail "vector_add_shared does not use the shared runtime"
readelf -d examples/vector_add | grep -q 'libcudart.so' && fail "examples/vector_add is not statically linked"
pass "one program each with the static and the shared CUDA runtime"
