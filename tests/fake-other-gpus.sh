#!/bin/sh
# The other GPUs made off the program's path (issue 46), on the fake GPU
# with FAKE_CUDA_CONTEXT_MS: making a device's primary context takes 300 ms
# there, one device at a time, as a real one takes about 100 ms.
# - From 0.1 s after the program's first allocation or rewritten module,
#   the other devices' contexts and peer access are made on a thread of
#   mgpu's own (-v: "made ahead of their first launch"), which the start-up
#   figures do not count; the module's copies there are loaded at a
#   kernel's first launch off the home GPU ("loaded on the other GPUs for
#   its first launch there") and the launches split, with right results.
# - A program whose launches all run whole (MGPU_SPLIT=never) never loads
#   the copies (nor makes the contexts ahead), and ends with right results
#   and nothing left mapped.
# - Under auto, launches run whole, the policy not asked, until the
#   contexts are made (a quick program never loads its module there),
#   unless their buffers already lie on the other GPUs.
# - A program that ends while the contexts are being made ends at once,
#   with the thread stopped before the next device: with three other
#   devices of 1 s each, it takes well under their 3 s.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4 FAKE_CUDA_CONTEXT_MS=300
client=tests/fake/fake_gpu_client

# run NAME ARGS...: common.sh's run_fake_client, with -v.
run() {
  run_name=$1; shift
  run_fake_client "$run_name" "$@" -v
}

# The program's set-up takes 0.5 s between its load and its first launch:
# the thread begins 0.1 s after the load and makes the context by then.
FAKE_CLIENT_WAIT_MS=500 MGPU_SPLIT=always run split -n 2
expect_match "$work/split.err" "the other GPUs' contexts and peer access made ahead of their first launch in [0-9.]+ s"
expect_match "$work/split.err" "module 1 \\(cuModuleLoadData\\): loaded on the other GPUs for its first launch there"
expect_match "$work/split.err" "^mgpu_test_axpy +2 +[0-9]+\\* +256 +x2 "
# The 300 ms of the context were made off the program's path.
awk '/^start-up:/ { s = $0; while ((getline n) > 0 && n ~ /^    /) s = s " " substr(n, 5); print s; exit }' \
  "$work/split.err" > "$work/split.startup"
if grep -q -E 'contexts [0-9.]+' "$work/split.startup"; then
  ms=$(sed -n 's/.*contexts \([0-9.]*\).*/\1/p' "$work/split.startup")
  awk -v ms="$ms" 'BEGIN { exit !(ms < 250) }' ||
    { cat "$work/split.startup"; fail "the other context counted in the start-up: $ms ms"; }
fi
pass "-n 2: the other GPU's context made ahead, the module's copy loaded at the first split launch, split, correct"

FAKE_CLIENT_WAIT_MS=500 MGPU_SPLIT=never run whole -n 4
! grep -q -E "loaded on the other GPUs for its first launch there|made ahead of their first launch" "$work/whole.err" ||
  fail "a run whose launches all ran whole (MGPU_SPLIT=never) made or loaded on the other GPUs"
expect_match "$work/whole.err" "^mgpu_test_axpy +2 +[0-9]+\\* +256 +no "
pass "-n 4, MGPU_SPLIT=never: nothing made or loaded on the other GPUs, correct, nothing left mapped"

# Under auto, a launch runs whole without asking the policy until the
# contexts are made: a quick program never loads its module there.
# One whose buffers already lie on the other GPUs (MGPU_SPREAD_MIN=1: every
# buffer spread when made) has its launches wait for them instead.
FAKE_CUDA_CONTEXT_MS=1500 MGPU_SPLIT=auto run auto_quick -n 2
! grep -q "loaded on the other GPUs" "$work/auto_quick.err" ||
  fail "auto: a program that ended before the other context was made loaded its module there"
expect_match "$work/auto_quick.err" "^mgpu_test_axpy +2 +[0-9]+\\* +256 +no \\[10\\] "
# and the report says why: not the cost model's [2].
expect_in "$work/auto_quick.err" "[10] ran whole while the other GPUs were made ready beside the program"
pass "-n 2, auto: a quick program's launches run whole, the module never loaded on the other GPU"
MGPU_SPLIT=auto MGPU_SPREAD_MIN=1 run auto_spread -n 2
expect_match "$work/auto_spread.err" "module 1 \\(cuModuleLoadData\\): loaded on the other GPUs for its first launch there"
pass "-n 2, auto, buffers spread when made: the launches wait for the module's copy on the other GPU"

# A program that ends while the contexts are made waits for the one being
# made, not for the others: three of 1 s each here.
start=$(date +%s%N)
FAKE_CUDA_CONTEXT_MS=1000 FAKE_CLIENT_WAIT_MS=150 MGPU_SPLIT=auto run short -n 4
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$ms" -lt 2500 ] ||
  fail "a run of -n 4 took $ms ms with three contexts of 1 s to make: exit waited for all of them"
pass "-n 4: exit waits for the context being made, not for the others ($ms ms)"
