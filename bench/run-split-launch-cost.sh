#!/bin/sh
# The host cost of one split launch (issue 5's "<= 40 us on 8 GPUs", issue
# 16's "<= 20 us with 8 entries of one GPU"): bench/split_launch_cost times
# N back-to-back launches of an empty kernel of 1024 blocks, run plainly and
# under mgpu-run --gpus LIST with MGPU_SPLIT=always and each fork/join
# (MGPU_FORK_JOIN=flags, the default, and events), interleaved, ROUNDS
# times; prints the medians per launch (host clock, up to the final
# synchronisation) as a Markdown table. The lists: GPU 0 two, four and
# eight times (every machine), and 2, 4 and 8 distinct GPUs where there are
# that many; SETS replaces them. Then bench/fork_join_floor: what the driver
# alone charges for the same launch cut 2, 4 and 8 ways on one GPU.
#   bench/run-split-launch-cost.sh [ROUNDS=5] [N=20000] [SETS="0x2 0,1 ..."]
# Run from the top build directory after `make check`, or set MGPU_RUN and
# SPLIT_LAUNCH_COST to installed copies.
set -eu
rounds=${1:-5}
n=${2:-20000}
bench=${SPLIT_LAUNCH_COST:-bench/split_launch_cost}
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
. "$(dirname "$0")/gpu_sets.sh"
[ -x "$bench" ] || { echo "run-split-launch-cost.sh: $bench is missing; run make check first" >&2; exit 2; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 1 ] || { echo "run-split-launch-cost.sh: needs a GPU" >&2; exit 2; }
sets=${3:-$(default_sets "$gpus")}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

total_us() { sed -n 's/.*total_us=\([0-9.]*\).*/\1/p'; }
for r in $(seq 1 "$rounds"); do
  "$bench" "$n" | total_us >> "$out/plain"
  for set in $sets; do
    for fj in flags events; do
      MGPU_SPLIT=always MGPU_FORK_JOIN=$fj "$MGPU_RUN" --gpus "$set" "$bench" "$n" | total_us >> "$out/$set.$fj"
    done
  done
  printf 'round %s of %s done\n' "$r" "$rounds" >&2
done

echo "split_launch_cost, $n launches each, median of $rounds interleaved rounds (host µs per launch)"
echo "plain (no mgpu): $(median "$out/plain") µs"
echo
echo "| --gpus | sequence flags | events | events / flags |"
echo "| --- | --- | --- | --- |"
for set in $sets; do
  f=$(median "$out/$set.flags"); e=$(median "$out/$set.events")
  printf '| %s | %.2f | %.2f | %.2f |\n' "$set" "$f" "$e" "$(awk -v a="$e" -v b="$f" 'BEGIN { print a / b }')"
done
floor=${FORK_JOIN_FLOOR:-bench/fork_join_floor}
if [ -x "$floor" ]; then
  echo
  "$floor" 5000 2 4 8
fi
