#!/bin/sh
# Every way into the driver, end to end under mgpu-run, against the fake
# driver (no GPU needed): dlopen + dlsym, cuGetProcAddress (v1, v2, the
# self-lookup, per-thread variants, NULL status), -lcuda, an RPATH that
# points elsewhere, the NCCL pass-through, the virtual device, the report and
# the trace; a library named like cuBLAS sees one GPU's attributes.
. "$(dirname "$0")/common.sh"
fake_libs="$top_builddir/tests/fake/.libs"
use_fake_driver
export FAKE_NCCL_PROBE="$fake_libs/libnccl_probe.so"
export FAKE_CUBLAS_PROBE="$fake_libs/libcublas_probe.so"
export FAKE_CUDA_GPUS=4

for n in 1 3; do
  FAKE_EXPECT_GPUS=$n "$MGPU_RUN" -n $n --report --trace "$work/trace$n.json" \
    tests/fake/fake_client > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err"; fail "fake_client under -n $n"; }
  cat "$work/out"
  expect_in "$work/out" "0 failure(s)"
  expect_in "$work/out" "ok: libcublas* sees one GPU's multiprocessors"
  expect_in "$work/out" "ok: the audit module marks the program's communicator, not its binding of NCCL"
  expect_in "$work/out" "ok: with mirrors, libnccl* gets a wrapped cuLaunchKernel"
  expect_in "$work/err" "mgpu report"
  expect_in "$work/err" "GPUs: $n selected, home Fake GPU 0; device 0 has $((n * 100)) SMs, $n.00 GiB; $n device"
  # Three per-thread launches and five legacy ones (the failed launch is not counted), 2 ms each.
  # The fake driver loads no modules, so with several GPUs the kernels run
  # the program's own code.
  reason=1; [ $n = 1 ] || reason=3
  expect_match "$work/err" "^kernel_a\\(float\\*, int\\) +3 64 +128 +no \\[$reason\\] +6\\.000\$"
  expect_match "$work/err" "^kernel_b\\(\\.\\.\\.\\) +5 32x32 +16x16 +no \\[$reason\\] +10\\.000\$"
  if [ $n = 1 ]; then
    expect_in "$work/err" "[1] only one GPU selected"
  else
    expect_in "$work/err" "[3] ran the program's own code: its module has no rewritten modules"
  fi
  expect_in "$work/err" "memory: 2 allocations (4.00 MiB), 1 frees; peak 4.00 MiB; 1.00 MiB still allocated"
  expect_in "$work/err" "cuLaunchKernel 6"
  expect_in "$work/err" "cuLaunchKernel_ptsz 3"
  expect_in "$work/trace$n.json" '"traceEvents"'
  spans=$(grep -c '"ph":"X"' "$work/trace$n.json")
  [ "$spans" -eq 8 ] || fail "the trace has $spans kernel spans, not 8"
  pass "fake_client, report and trace under -n $n"
done

# Three of the run's GPUs on one device: the program sees that device once,
# with its own multiprocessors and memory, not three times as much.
FAKE_EXPECT_GPUS=1 "$MGPU_RUN" --gpus 2x3 --report tests/fake/fake_client \
  > "$work/out" 2> "$work/err" || { cat "$work/out" "$work/err"; fail "fake_client under --gpus 2x3"; }
expect_in "$work/out" "0 failure(s)"
expect_in "$work/err" "GPUs: 3 selected on 1 device, home Fake GPU 2; device 0 has 100 SMs, 1.00 GiB; 1 device seen"
expect_in "$work/err" "[3] ran the program's own code: its module has no rewritten modules"
pass "fake_client under --gpus 2x3: one device, counted once"

FAKE_EXPECT_GPUS=2 MGPU_MIRROR=always "$MGPU_RUN" -n 2 tests/fake/fake_client \
  > "$work/out" 2> "$work/err" || { cat "$work/out" "$work/err"; fail "MGPU_MIRROR=always"; }
expect_in "$work/out" "ok: with mirrors, libnccl* gets a wrapped cuLaunchKernel"
pass "with MGPU_MIRROR=always a library whose lookups bypass mgpu gets its writing calls wrapped"

FAKE_EXPECT_GPUS=2 MGPU_MIRROR=never "$MGPU_RUN" -n 2 tests/fake/fake_client \
  > "$work/out" 2> "$work/err" || { cat "$work/out" "$work/err"; fail "MGPU_MIRROR=never"; }
expect_in "$work/out" "ok: lookups from libnccl* pass through to the driver"
pass "with MGPU_MIRROR=never a library whose lookups bypass mgpu gets the driver's own calls"

FAKE_EXPECT_GPUS=3 MGPU_SPLIT=never "$MGPU_RUN" -n 3 --report tests/fake/fake_client \
  > "$work/out" 2> "$work/err" || { cat "$work/out" "$work/err"; fail "MGPU_SPLIT=never"; }
expect_in "$work/out" "0 failure(s)"
expect_match "$work/err" '^kernel_a\(float\*, int\) +3 64 +128 +no \[4\] +6\.000$'
expect_in "$work/err" "[4] MGPU_SPLIT=never"
pass "MGPU_SPLIT=never is reported as the reason"

FAKE_EXPECT_GPUS=2 MGPU_SM_COUNT=home "$MGPU_RUN" --gpus 3,1 tests/fake/fake_client \
  > "$work/out" 2> "$work/err" || { cat "$work/out" "$work/err"; fail "MGPU_SM_COUNT=home"; }
expect_in "$work/out" "0 failure(s)"
pass "--gpus 3,1 with MGPU_SM_COUNT=home"

FAKE_EXPECT_GPUS=3 MGPU_DEVICE_COUNT=one "$MGPU_RUN" -n 3 --report tests/fake/fake_client \
  > "$work/out" 2> "$work/err" || { cat "$work/out" "$work/err"; fail "MGPU_DEVICE_COUNT=one"; }
expect_in "$work/out" "0 failure(s)"
expect_in "$work/err" "device 0 has 300 SMs, 3.00 GiB; 1 device seen"
pass "MGPU_DEVICE_COUNT=one shows device 0 alone"

"$MGPU_RUN" -n 2 tests/fake/fake_linked_client > "$work/out" 2>&1 || { cat "$work/out"; fail "-lcuda"; }
expect_in "$work/out" "linked: result=0 devices=2 sms=200"
MGPU_DEVICE_COUNT=one "$MGPU_RUN" -n 2 tests/fake/fake_linked_client > "$work/out" 2>&1 || {
  cat "$work/out"; fail "-lcuda, one device"; }
expect_in "$work/out" "linked: result=0 devices=1 sms=200"
pass "a program linked with -lcuda reaches mgpu"

# An RPATH to another libcuda.so.1 beats LD_LIBRARY_PATH; LD_AUDIT beats it.
mkdir -p tests/fake/rpath-driver
cp "$MGPU_DRIVER" tests/fake/rpath-driver/libcuda.so.1
"$MGPU_RUN" -n 2 tests/fake/fake_rpath_client > "$work/out" 2>&1 || { cat "$work/out"; fail "rpath"; }
expect_in "$work/out" "linked: result=0 devices=2 sms=200"
MGPU_AUDIT=0 "$MGPU_RUN" -n 2 tests/fake/fake_rpath_client > "$work/out" 2>&1 || {
  cat "$work/out"; fail "rpath without audit"; }
expect_in "$work/out" "linked: result=0 devices=2 sms=100"
pass "LD_AUDIT redirects a libcuda.so.1 found through an RPATH"
