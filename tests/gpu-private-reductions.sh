#!/bin/sh
# Privatised reductions (issue 18, item 4): tests/gpu/private_reductions
# checks every reduction against the CPU after two launches. It runs
# plainly (the test itself is right), then split over repeated entries of
# one GPU with MGPU_MIRROR=always, with NCCL where it is installed and
# without (MGPU_NCCL=0): the output must be right, the report must name
# the reductions privatised (histogram's bins, extremes' lowest and
# highest, float_sum's sum, wide's count and largest) and no other
# (tickets stores its atomic's result; sum_from_self reads the buffer it
# updates), and the combines must have run, on the trace's GPU tracks.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/gpu/private_reductions
timeout 120 $prog > "$work/plain" 2>&1 || { cat "$work/plain" >&2; fail "without mgpu"; }
expect_in "$work/plain" "private_reductions: PASS"
for config in "0x4" "0x8 MGPU_NCCL=0" "0,0,0"; do
  set -- $config
  gpus=$1
  shift
  label=$(echo "$config" | tr ' ,=' '___')
  timeout 120 env MGPU_SPLIT=always MGPU_MIRROR=always "$@" "$MGPU_RUN" --gpus "$gpus" \
    --report --trace "$work/$label.json" $prog > "$work/$label.out" 2> "$work/$label.err" ||
    { cat "$work/$label.out" >&2; head -60 "$work/$label.err" >&2; fail "$config: under mgpu"; }
  expect_in "$work/$label.out" "private_reductions: PASS"
  expect_in "$work/$label.err" "reductions privatised on each GPU (MGPU_MIRROR):"
  sed -n '/^reductions privatised on each GPU/,/^[^ ]/p' "$work/$label.err" > "$work/$label.kernels"
  expect_match "$work/$label.kernels" "^  histogram: parameter 1$"
  expect_match "$work/$label.kernels" "^  extremes: parameters 1, 2$"
  expect_match "$work/$label.kernels" "^  float_sum: parameter 1$"
  expect_match "$work/$label.kernels" "^  wide: parameters 1, 2$"
  if grep -Eq "^  (tickets|sum_from_self):" "$work/$label.kernels"; then
    cat "$work/$label.kernels" >&2
    fail "$config: a reduction that cannot be privatised was"
  fi
  # Six buffers privatised, twice each: 12 combines, each folding the
  # copies of the entries other than the home one.
  expect_match "$work/$label.err" "^  reductions privatised: 12 combined after their launches \([1-9][0-9]* copies folded"
  expect_match "$work/$label.err" "^    buffer of 1.00 KiB: copies on [1-9][0-9]* GPUs, .* privatised in 2 launches \(add.u32\)"
  # The trace shows mgpu's own work on the GPUs' tracks.
  expect_in "$work/$label.json" '"name":"mirror: combine by mgpu'"'"'s kernel","cat":"mirror"'
  expect_in "$work/$label.json" '"name":"mirror: private copy set to 0","cat":"mirror"'
  pass "$config: reductions privatised, combined, and right: $(grep -E '^  reductions privatised:' "$work/$label.err" | sed 's/^  reductions privatised: //')"
done
