#!/bin/sh
# A program that ends while mgpu's NCCL communicator is still being made
# (its first mirrored launch shortly before its end) ends as it chose: the
# SGEMM example, whose split launches mirror A and B, run on the machine's
# distinct GPUs with repeats from 1 to 6, so that its end falls at every
# point of the second it takes to make the communicator. Each run must
# exit 0, print its PASS line (a crash during exit loses what stdio held:
# on 4 x H200 this ended in a segmentation fault twice in 26 runs before
# the exit wait was registered after NCCL's runtime's own exit handler)
# and print no "mgpu: error". Needs two distinct GPUs; skips otherwise.
. "$(dirname "$0")/common.sh"
require_gpu
[ "$gpu_count" -ge 2 ] || { echo "one GPU: no communicator between distinct devices"; exit 77; }
n=$gpu_count
[ "$n" -gt 4 ] && n=4
failures=0
runs=0
for round in 1 2 3; do
  for repeats in 1 2 3 4 5 6; do
    runs=$((runs + 1))
    timeout 120 env MGPU_VERBOSE=1 "$MGPU_RUN" -n "$n" examples/sgemm --repeats "$repeats" \
      > "$work/out" 2> "$work/err"
    status=$?
    if [ "$status" -ne 0 ] || ! grep -q "PASS" "$work/out" || grep -q "mgpu: error" "$work/err"; then
      tail -5 "$work/err" >&2
      echo "FAIL: round $round, --repeats $repeats: status $status" >&2
      failures=$((failures + 1))
    else
      made=$(grep -c "collectives through NCCL" "$work/err")
      echo "ok: round $round, --repeats $repeats (communicator made: $made)"
    fi
  done
done
[ "$failures" -eq 0 ] || fail "$failures of $runs runs of the SGEMM example ended otherwise than it chose"
pass "$runs runs of the SGEMM example on $n GPUs, ending at every point of the communicator's making, ended as they chose"
