#!/bin/sh
# What mgpu adds to a program's start and end (issue 16: "<= 50 ms over
# plain"): bench/startup (initialise, launch one kernel, exit) run as a
# whole process plainly, under mgpu-run -n 1 and under mgpu-run --gpus 0x8
# (eight GPUs on GPU 0: the module copies, workers and pool of eight),
# interleaved, ROUNDS times after one warm-up of each (which fills the
# driver's JIT cache with mgpu's copies); prints the medians of the wall
# time in milliseconds as a Markdown table.
#   bench/run-startup.sh [ROUNDS=11]
# Run from the top build directory after `make check`, or set MGPU_RUN and
# STARTUP to installed copies.
set -eu
rounds=${1:-11}
bench=${STARTUP:-bench/startup}
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
[ -x "$bench" ] || { echo "run-startup.sh: $bench is missing; run make check first" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export CUDA_CACHE_PATH="$out/jit-cache"

# ms LABEL COMMAND...: runs COMMAND, which must pass, and adds its wall
# time in milliseconds to $out/LABEL.
ms() {
  label=$1; shift
  start=$(date +%s%N)
  "$@" > "$out/last" 2>&1 || { cat "$out/last" >&2; echo "run-startup.sh: $label failed" >&2; exit 1; }
  end=$(date +%s%N)
  echo "$(( (end - start) / 1000 ))" | awk '{ printf "%.1f\n", $1 / 1000 }' >> "$out/$label"
}

run_all() {
  ms plain "$bench"
  ms n1 "$MGPU_RUN" -n 1 "$bench"
  ms entries8 "$MGPU_RUN" --gpus 0x8 "$bench"
  ms entries8-always env MGPU_SPLIT=always "$MGPU_RUN" --gpus 0x8 "$bench"
}
run_all
rm -f "$out/plain" "$out/n1" "$out/entries8" "$out/entries8-always"
for r in $(seq 1 "$rounds"); do
  run_all
done

plain=$(median "$out/plain")
echo "startup, wall time of the whole program, median of $rounds interleaved rounds"
echo
echo "| run | ms | over plain |"
echo "| --- | --- | --- |"
row() { printf '| %s | %.1f | %+.1f |\n' "$1" "$2" "$(awk -v a="$2" -v b="$plain" 'BEGIN { print a - b }')"; }
row "plain" "$plain"
row "mgpu-run -n 1" "$(median "$out/n1")"
row "mgpu-run --gpus 0x8" "$(median "$out/entries8")"
row "mgpu-run --gpus 0x8, MGPU_SPLIT=always" "$(median "$out/entries8-always")"
