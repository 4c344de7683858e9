#!/bin/sh
# A short soak on a real GPU (issue 17): bench/soak.sh runs the stress
# client, eight threads on eight streams with every result checked, under
# mgpu-run --gpus 0x4 with MGPU_SPLIT=always and auto, each in both fork/join
# modes, for MGPU_SOAK_SECONDS in all (default 20); the logs go to
# MGPU_SOAK_LOGS if set. Every run must end correct, and with
# MGPU_SPLIT=always the kernels must show cut into four. Skipped without a
# GPU. The ten-minute soak is `bench/soak.sh 600 LOGDIR`.
. "$(dirname "$0")/common.sh"
require_gpu
logs=${MGPU_SOAK_LOGS:-$work/soak}
MGPU_RUN="$MGPU_RUN" SOAK_SEED=${SOAK_SEED:-1} SOAK_GPUS=0x4 \
  sh "$top_srcdir/bench/soak.sh" "${MGPU_SOAK_SECONDS:-20}" "$logs" > "$work/table" 2>&1
status=$?
cat "$work/table"
[ "$status" -eq 0 ] || fail "the soak failed (logs in $logs)"
for f in "$logs"/always-*.err; do
  expect_match "$f" '^mgpu_test_fill .* x4'
  expect_match "$f" '^mgpu_test_axpy .* x4'
done
pass "the stress client under --gpus 0x4, split always and auto, flags and events: results correct"
