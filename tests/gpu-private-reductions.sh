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
# Then atomic_sum under MGPU_MIRROR=auto and never on every entry set.
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

# MGPU_MIRROR=auto: tests/programs/atomic_sum's kernels spend their time on
# atomics into one scalar. Split without privatised copies they would be
# slower than whole, so on GPUs of more than one device the split policy
# tries them privatised (and, kept, privatises at every split); the sums
# stay exact. On one device listed several times nothing privatises under
# auto (a device's entries share its memory), so they run whole, as under
# never. On several devices the program repeats its round 100 times (about
# 1.2 s on an H200): launches run whole for the run's first tenth of a
# second and while the other GPUs' contexts and module copies are made, so
# a run of five launches decides nothing.
prog=tests/programs/atomic_sum
for rounds in 1 100; do
  timeout 120 $prog $rounds > "$work/atomic.plain$rounds" 2> /dev/null || fail "atomic_sum $rounds without mgpu"
done
for gpus in $entry_sets; do
  label=atomic_$(echo "$gpus" | tr ',' '_')
  rounds=1
  [ "$(devices_in "$gpus")" -gt 1 ] && rounds=100
  timeout 120 env MGPU_MIRROR=auto "$MGPU_RUN" --gpus "$gpus" --report $prog $rounds \
    > "$work/$label.out" 2> "$work/$label.err" || { cat "$work/$label.err" >&2; fail "$gpus: atomic_sum under auto"; }
  cmp -s "$work/atomic.plain$rounds" "$work/$label.out" || { diff "$work/atomic.plain$rounds" "$work/$label.out" >&2; fail "$gpus: atomic_sum's output differs"; }
  if [ "$(devices_in "$gpus")" -eq 1 ]; then
    expect_match "$work/$label.err" "^sum_atomic_int\(\.\.\.\) +5 3907 +256 +no"
    grep -q "split with their atomics privatised" "$work/$label.err" &&
      fail "$gpus: atomic_sum privatised on one device under auto"
    way="runs whole (one device)"
  else
    expect_match "$work/$label.err" "^  mirrors \(auto\): [1-9][0-9]* kernel shapes split with their atomics privatised"
    expect_match "$work/$label.err" "^sum_atomic_int\(\.\.\.\) +500 3907 +256 +x"
    way="splits privatised"
  fi
  timeout 120 env MGPU_MIRROR=never "$MGPU_RUN" --gpus "$gpus" --report $prog $rounds \
    > "$work/$label.never.out" 2> "$work/$label.never.err" || fail "$gpus: atomic_sum under never"
  expect_match "$work/$label.never.err" "^sum_atomic_int\(\.\.\.\) +$((rounds * 5)) 3907 +256 +no"
  pass "$gpus: atomic_sum under MGPU_MIRROR=auto $way, right; under never, whole"
done
