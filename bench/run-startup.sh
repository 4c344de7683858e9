#!/bin/sh
# What mgpu adds to a program's start and end: bench/startup (initialise,
# launch one kernel, exit) and bench/startup_big (the same with a module
# of about 1 MB of PTX, 512 kernels) run as whole processes plainly and
# under mgpu-run: -n 1; --gpus 0x8 (eight entries on GPU 0: the module
# copies, workers and pool of eight), also with MGPU_SPLIT=always; and,
# where the machine has them, -n 2, -n 4 and -n 8 against a --gpus list
# of the same GPUs. Interleaved, ROUNDS times after one warm-up of each
# (which fills the driver's JIT cache with mgpu's copies, so the big
# program's rounds are second runs, and mgpu's cache with NVML's answers,
# so that no round asks NVML); prints the medians of the wall time
# in milliseconds, and each against plain and against plain on as many
# GPUs as the run shows the program (CUDA_VISIBLE_DEVICES: the driver's
# own start grows with the GPUs it sees), as a Markdown table.
#   bench/run-startup.sh [ROUNDS=11]
# Run from the top build directory after `make check`, or set MGPU_RUN,
# STARTUP and STARTUP_BIG to installed copies.
set -eu
rounds=${1:-11}
bench=${STARTUP:-bench/startup}
big=${STARTUP_BIG:-bench/startup_big}
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
for p in "$bench" "$big"; do
  [ -x "$p" ] || { echo "run-startup.sh: $p is missing; run make check first" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export CUDA_CACHE_PATH="$out/jit-cache" MGPU_CACHE_DIR="$out/mgpu-cache"
gpus=$(nvidia-smi -L 2> /dev/null | wc -l)

# ms LABEL COMMAND...: runs COMMAND, which must pass, and adds its wall
# time in milliseconds to $out/LABEL.
# (Its own names: the caller's loop reads `label`, which sh does not scope.)
ms() {
  ms_label=$1; shift
  ms_start=$(date +%s%N)
  "$@" > "$out/last" 2>&1 < /dev/null ||
    { cat "$out/last" >&2; echo "run-startup.sh: $ms_label failed" >&2; exit 1; }
  ms_end=$(date +%s%N)
  echo "$(( (ms_end - ms_start) / 1000 ))" | awk '{ printf "%.1f\n", $1 / 1000 }' >> "$out/$ms_label"
}

# The runs, as "label|how" lines; how is empty for plain, "visible LIST"
# for plain with CUDA_VISIBLE_DEVICES=LIST (the plain program on as many
# GPUs as a run of mgpu shows it: the driver's start grows with them).
runs() {
  echo "plain|"
  for n in 1 2 4; do
    [ "$gpus" -gt "$n" ] && echo "visible$n|visible $(seq -s, 0 $((n - 1)))"
  done
  echo "n1|-n 1"
  echo "entries8|--gpus 0x8"
  echo "entries8-always|--gpus 0x8 always"
  for n in 2 4 8; do
    [ "$gpus" -ge "$n" ] || continue
    echo "n$n|-n $n"
    echo "list$n|--gpus $(seq -s, 0 $((n - 1)))"
  done
}

run_all() {
  runs | while IFS='|' read -r label how; do
    for program in "$bench" "$big"; do
      name=$(basename "$program")
      case $how in
        "") ms "$name.$label" "$program" ;;
        visible*) ms "$name.$label" env CUDA_VISIBLE_DEVICES="${how#visible }" "$program" ;;
        *always) ms "$name.$label" env MGPU_SPLIT=always "$MGPU_RUN" ${how% always} "$program" ;;
        *) ms "$name.$label" "$MGPU_RUN" $how "$program" ;;
      esac
    done
  done
}
run_all
rm -f "$out"/*.plain "$out"/*.visible* "$out"/*.n* "$out"/*.entries* "$out"/*.list*
for r in $(seq 1 "$rounds"); do
  run_all
done

echo "wall time of the whole program, ms, median of $rounds interleaved rounds (the big one: second runs)"
echo
echo "| run | startup | over plain | over plain on its GPUs | startup_big | over plain | over plain on its GPUs |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
# Every run must have left its times (a run that failed inside the loop's
# pipe ends only that pipe's shell).
runs | while IFS='|' read -r label how; do
  for name in startup startup_big; do
    [ -s "$out/$name.$label" ] || { echo "run-startup.sh: no times for $name ($label)" >&2; exit 1; }
  done
done || exit 1
small_plain=$(median "$out/startup.plain")
big_plain=$(median "$out/startup_big.plain")
# baseline LABEL: the plain run on as many distinct GPUs as run LABEL
# shows the program (all of them: plain).
baseline() {
  case $1 in
    n1 | entries8*) b=1 ;;
    n* | list*) b=$(echo "$1" | tr -dc '0-9') ;;
    *) b=$gpus ;;
  esac
  if [ "$b" -lt "$gpus" ] && [ -s "$out/startup.visible$b" ]; then echo "visible$b"; else echo plain; fi
}
over() { awk -v a="$1" -v p="$2" 'BEGIN { printf "%+.1f", a - p }'; }
runs | while IFS='|' read -r label how; do
  s=$(median "$out/startup.$label")
  b=$(median "$out/startup_big.$label")
  base=$(baseline "$label")
  case $label in plain | visible*) own_s=-; own_b=- ;; *)
    own_s=$(over "$s" "$(median "$out/startup.$base")")
    own_b=$(over "$b" "$(median "$out/startup_big.$base")") ;;
  esac
  case $how in
    "") shown=plain ;;
    visible*) shown="plain, CUDA_VISIBLE_DEVICES=${how#visible }" ;;
    *) shown=$how ;;
  esac
  printf '| %s | %.1f | %s | %s | %.1f | %s | %s |\n' "$shown" "$s" \
    "$(over "$s" "$small_plain")" "$own_s" "$b" "$(over "$b" "$big_plain")" "$own_b"
done
