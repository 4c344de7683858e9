#!/bin/sh
# Placement that follows the kernels (issue 19, MGPU_PLACEMENT=auto):
# tests/gpu/placement_follow uses large buffers one way per mode and checks
# them against the CPU. Each mode runs plainly, then under
# mgpu-run --gpus 0x4 (one GPU standing for four: decisions, not speed)
# with MGPU_SPLIT=always (a one-block kernel still runs whole; auto for the
# mode whose split and placement are decided together) and
# MGPU_PLACEMENT=auto and MGPU_SPREAD_MIN=64M (buffers of 64 MiB or more
# start spread, as before principle 6 made every one start on the home
# GPU: the moves of both kinds are what this test follows): the output
# must be the plain run's, and the report
# must say where each buffer ended and how many times it moved, and -v
# the cost model's bandwidths; mgpu-info --bandwidth measures them too.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/gpu/placement_follow
cubin=tests/ptx/kernels.cubin
[ -f "$cubin" ] || fail "no $cubin (made by make check)"

# check MODE PATTERN...: the mode passes both ways, and every PATTERN (an
# extended regex) matches a line of the report (and -v's lines). The split
# policy is MGPU_SPLIT=$split (always unless the caller sets it).
split=always
check() {
  m=$1
  shift
  args=$m
  [ "$m" = no_ptx ] && args="$m $cubin"
  timeout 120 $prog $args > "$work/$m.plain" 2> "$work/$m.plain-err" ||
    { cat "$work/$m.plain" "$work/$m.plain-err" >&2; fail "$m without mgpu"; }
  timeout 120 env MGPU_SPLIT=$split MGPU_PLACEMENT=auto MGPU_SPREAD_MIN=64M "$MGPU_RUN" --gpus 0x4 --report -v \
    --trace "$work/$m.json" $prog $args > "$work/$m.out" 2> "$work/$m.err" ||
    { cat "$work/$m.out" >&2; grep -E "placement|FAIL|error" "$work/$m.err" >&2; fail "$m under mgpu"; }
  cmp -s "$work/$m.plain" "$work/$m.out" ||
    { diff "$work/$m.plain" "$work/$m.out" >&2; fail "$m: output differs from the plain run"; }
  for pattern in "$@"; do
    grep -Eq -- "$pattern" "$work/$m.err" || {
      sed -n '/placement after the kernels/,/^[a-z]/p' "$work/$m.err" >&2
      fail "$m: no report line matches '$pattern'"
    }
  done
  # Every move is on the trace, on the track of the GPU it went to.
  moves=$(sed -n 's/^  placement after the kernels (auto): \([0-9]*\) moves.*/\1/p' "$work/$m.err")
  traced=$(grep -o '"cat":"placement"' "$work/$m.json" | wc -l)
  [ "$traced" -eq "${moves:-0}" ] || fail "$m: $moves moves, $traced of them on the trace"
  pass "$m: $(grep -E '^  placement after the kernels' "$work/$m.err" | sed 's/^  //')"
}

check small_loop \
  '^  placement after the kernels \(auto\): 1 moves' \
  'mgpu: copy bandwidths \((measured|kept from earlier runs on these devices); \* modelled: entries of one device, a twelfth of local\):' \
  'to GPU 0: from 0 [0-9]+ GB/s, from 1 [0-9]+ GB/s\*, from 2 [0-9]+ GB/s\*, from 3 [0-9]+ GB/s\*' \
  '^    buffer of 1024\.00 MiB: on GPU 0, moved there after whole launches of [^;]+ on it; 12 whole and 0 split launches, 1 move$'
check vector_add \
  '^  placement after the kernels \(auto\): 0 moves' \
  '^    buffer of 256\.00 MiB: where it was made .*; 0 whole and 6 split launches, 0 moves$'
check alternate \
  '^  placement after the kernels \(auto\): 0 moves' \
  '^    buffer of 256\.00 MiB: where it was made .*; 12 whole and 12 split launches, 0 moves$'
check streaks \
  '^  placement after the kernels \(auto\): 1 moves' \
  '^    buffer of 256\.00 MiB: on GPU 0, .*; 20 whole and 20 split launches, 1 move$'
check unknown \
  '^  placement after the kernels \(auto\): 1 moves' \
  '^    buffer of 256\.00 MiB: on GPU 0, .*; 6 whole and 0 split launches, 1 move$'
# Under MGPU_SPREAD_MIN (64 MiB): made on the home GPU, where whole
# launches leave it and split ones spread it.
check small_whole \
  '^  GPU 1( \(device 0\))?: 0 B now, 0 B at peak$' \
  '^  placement after the kernels \(auto\): 0 moves' \
  '^    buffer of 16\.00 MiB: on the home GPU, where it was made; 6 whole and 0 split launches, 0 moves$'
check small_split \
  '^  placement after the kernels \(auto\): 1 moves' \
  'placement: the 16777216-byte buffer at 0x[0-9a-f]+ spread over the GPUs after 4 split launches' \
  '^    buffer of 16\.00 MiB: spread after split launches of [^;]+; 0 whole and 6 split launches, 1 move$'
# Decided with the split (MGPU_SPLIT=auto): 48 MiB made on the home GPU,
# a kernel whose split would read three quarters of it over the links but
# would pay with it spread. It is spread before the first split try; the
# timings (one GPU: split no faster) may then keep the kernel whole, and
# the whole launches bring the buffer back (a second move).
split=auto
check spread_split \
  'split: a grid of 49152 x 1 x 1 blocks of 256 x 1 x 1 is tried split after its buffers are spread' \
  'placement: the 50331648-byte buffer at 0x[0-9a-f]+ spread over the GPUs before a split launch that pays only so' \
  '^    buffer of 48\.00 MiB: .*; [0-9]+ whole and [1-9][0-9]* split launches, [12] moves?$'
split=always
check no_ptx \
  '^  placement after the kernels \(auto\): 2 moves'
[ "$(grep -Ec '^    buffer of 256\.00 MiB: on GPU 0, .*; 5 whole and 0 split launches, 1 move$' "$work/no_ptx.err")" -eq 2 ] ||
  fail "no_ptx: not both buffers moved to GPU 0 after 5 whole launches"

# The cost model's inputs, as mgpu-info measures them: GPU 0 twice, its
# second entry modelled.
"$top_builddir/src/mgpu-info" --bandwidth --gpus 0,0 > "$work/bandwidth" 2>&1 ||
  { cat "$work/bandwidth" >&2; fail "mgpu-info --bandwidth"; }
expect_match "$work/bandwidth" '^  to GPU 1: from 0 [0-9]+ GB/s\*, from 1 [0-9]+ GB/s$'
pass "mgpu-info --bandwidth: $(sed -n 2p "$work/bandwidth" | sed 's/^  //')"
