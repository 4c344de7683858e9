#!/bin/sh
# What mirrors cost (issue 18), on whatever GPUs there are (one is enough):
# 1. The host cost per split launch of the mirror bookkeeping when nothing
#    is mirrored (goal <= 1 us): bench/split_launch_cost (an empty kernel
#    whose one pointer is written, so nothing qualifies) under --gpus 0x8
#    with MGPU_MIRROR=never and =always, interleaved, ROUNDS times.
# 2. The refresh of a 256 MiB buffer: bench/mirror_refresh under --gpus
#    0x2, 0x4 and 0x8 with MGPU_MIRROR=always (every entry refreshes its
#    own copy, all on one GPU here), and plainly.
# Prints medians as Markdown tables.
#   bench/run-mirror-cost.sh [ROUNDS=5] [N=20000]
# Run from the top build directory after `make check`, or set MGPU_RUN.
set -eu
rounds=${1:-5}
n=${2:-20000}
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
for b in bench/split_launch_cost bench/mirror_refresh; do
  [ -x "$b" ] || { echo "run-mirror-cost.sh: $b is missing; run make check first" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

total_us() { sed -n 's/.*total_us=\([0-9.]*\).*/\1/p'; }
for r in $(seq 1 "$rounds"); do
  for m in never always; do
    MGPU_SPLIT=always MGPU_MIRROR=$m "$MGPU_RUN" --gpus 0x8 bench/split_launch_cost "$n" |
      total_us >> "$out/launch.$m"
  done
  printf 'round %s of %s done\n' "$r" "$rounds" >&2
done
never=$(median "$out/launch.never")
always=$(median "$out/launch.always")
echo "split_launch_cost under --gpus 0x8, $n launches each, median of $rounds interleaved rounds (host µs per launch)"
echo
echo "| MGPU_MIRROR=never | MGPU_MIRROR=always, nothing mirrored | added |"
echo "| --- | --- | --- |"
printf '| %.2f | %.2f | %+.2f |\n' "$never" "$always" "$(awk -v a="$always" -v b="$never" 'BEGIN { print a - b }')"
echo
echo "mirror_refresh, 256 MiB buffer, median of 21 rounds each (GPU ms, events)"
echo
echo "| run | set + launch, buffer written | set + launch, other buffer written | refresh of all copies | per copy |"
echo "| --- | --- | --- | --- | --- |"
line() {
  v() { echo " $2" | sed -n "s/.* $1=\([-0-9.]*\).*/\1/p"; }
  r=$(v refresh_ms "$2")
  printf '| %s | %s | %s | %s | %s |\n' "$1" "$(v stale_ms "$2")" "$(v fresh_ms "$2")" "$r" \
    "$(awk -v r="$r" -v k="$3" 'BEGIN { printf "%.3f", r / k }')"
}
line plain "$(bench/mirror_refresh 256 21)" 1
for k in 2 4 8; do
  line "--gpus 0x$k" "$(MGPU_SPLIT=always MGPU_MIRROR=always "$MGPU_RUN" --gpus 0x$k bench/mirror_refresh 256 21)" "$k"
done
