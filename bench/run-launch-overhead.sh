#!/bin/sh
# The cost of mgpu on launch-bound work: bench/launch_overhead run plainly and
# under mgpu-run (-n 1; --gpus 0x2, GPU 0 standing for two, where every launch
# goes through the rewritten module and the split policy and runs whole; and
# -n 2 where there are two GPUs), interleaved, ROUNDS times; prints medians
# per call and their ratios as a Markdown table.
#   bench/run-launch-overhead.sh [ROUNDS=11] [N=100000]
# Run from the top build directory after `make check` (which builds the
# benchmark), or set MGPU_RUN and LAUNCH_OVERHEAD to installed copies.
set -eu
rounds=${1:-11}
n=${2:-100000}
bench=${LAUNCH_OVERHEAD:-bench/launch_overhead}
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
[ -x "$bench" ] || { echo "run-launch-overhead.sh: $bench is missing; run make check first" >&2; exit 2; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
configs="plain mgpu-n1 mgpu-0x2"
[ "${gpus:-0}" -ge 2 ] && configs="$configs mgpu-n2"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for r in $(seq 1 "$rounds"); do
  for c in $configs; do
    case $c in
      plain) "$bench" "$n" ;;
      mgpu-n1) "$MGPU_RUN" -n 1 "$bench" "$n" ;;
      mgpu-0x2) "$MGPU_RUN" --gpus 0x2 "$bench" "$n" ;;
      mgpu-n2) "$MGPU_RUN" -n 2 "$bench" "$n" ;;
    esac > "$out/line"
    sed -n 's/.* launch_us=\([0-9.]*\).*/\1/p' "$out/line" >> "$out/$c.launch"
    sed -n 's/.*grid_launch_us=\([0-9.]*\).*/\1/p' "$out/line" >> "$out/$c.grid"
    sed -n 's/.*memcpy_us=\([0-9.]*\).*/\1/p' "$out/line" >> "$out/$c.memcpy"
  done
  printf 'round %s of %s done\n' "$r" "$rounds" >&2
done

echo "launch_overhead, $n calls each, median of $rounds interleaved rounds (µs per call)"
echo
printf '| case |'; for c in $configs; do printf ' %s |' "$c"; done
for c in $configs; do [ "$c" = plain ] || printf ' %s / plain |' "$c"; done; echo
printf '| --- |'; for c in $configs; do printf ' --- |'; done
for c in $configs; do [ "$c" = plain ] || printf ' --- |'; done; echo
for kind in launch grid memcpy; do
  case $kind in
    launch) label="empty kernel launch, 1 block" ;;
    grid) label="empty kernel launch, 132 blocks" ;;
    memcpy) label="64 B cudaMemcpyAsync H2D" ;;
  esac
  printf '| %s |' "$label"
  base=$(median "$out/plain.$kind")
  for c in $configs; do printf ' %.4f |' "$(median "$out/$c.$kind")"; done
  for c in $configs; do
    [ "$c" = plain ] || printf ' %.4f |' "$(awk -v a="$(median "$out/$c.$kind")" -v b="$base" 'BEGIN { print a / b }')"
  done
  echo
done
