#!/bin/sh
# The scaling benchmark of issue 5: every example (examples/README.md) at its
# default size, run plainly (one GPU, no mgpu) and under mgpu-run -n 1, 2, 4,
# 8 (powers of two up to MAX_GPUS, and MAX_GPUS itself); for each run the
# kernel time from its "time:" line, the speedup over the plain run, the
# efficiency (speedup / GPUs), the bytes the GPUs sent each other over NVLink
# during the whole run (NVML counters read by bench/nvlink_bytes before and
# after it; n/a where the machine has none), and whether it passed with the
# plain run's result lines. Targets of the issue on 8 GPUs are shown where
# they apply.
#   bench/run-scaling.sh [MAX_GPUS] [EXAMPLE...]
# MAX_GPUS defaults to the GPUs present, the examples to all of them. Run from
# the top build directory after `make check` (or `make bench-scaling`).
# Writes bench/results/scaling-DATE-HOST.md (also printed) and
# bench/results/scaling-DATE-HOST.svg (speedup against GPUs); exits 1 if any
# run failed or printed other results than the plain run.
set -eu
here=$(dirname "$0")
. "$here/find_mgpu_run.sh"
all_examples="vector_add saxpy jacobi2d sgemm histogram reduction nbody driver_api"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
max_gpus=${gpus:-0}
case ${1:-} in
  '' | *[!0-9]*) ;;
  *) max_gpus=$1; shift ;;
esac
examples=${*:-$all_examples}
[ "${gpus:-0}" -ge 1 ] || { echo "run-scaling.sh: no GPU found (nvidia-smi -L)" >&2; exit 1; }
[ "$max_gpus" -ge 1 ] && [ "$max_gpus" -le "$gpus" ] || {
  echo "run-scaling.sh: MAX_GPUS must be from 1 to $gpus (the GPUs present), not $max_gpus" >&2; exit 2; }
for ex in $examples; do
  [ -x "examples/$ex" ] || {
    echo "run-scaling.sh: examples/$ex is missing; run make check first (examples: $all_examples)" >&2
    exit 2; }
done
[ -x bench/nvlink_bytes ] || { echo "run-scaling.sh: bench/nvlink_bytes is missing; run make check first" >&2; exit 2; }

counts=""
n=1
while [ "$n" -le "$max_gpus" ]; do counts="$counts $n"; n=$((n * 2)); done
case " $counts " in *" $max_gpus "*) ;; *) counts="$counts $max_gpus" ;; esac

host=$(hostname -s 2>/dev/null || uname -n)
date=$(date +%Y-%m-%d)
mkdir -p bench/results
report=bench/results/scaling-$date-$host.md
plot=bench/results/scaling-$date-$host.svg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# target EXAMPLE GPUS: the issue's speedup target, or nothing.
target() {
  [ "$2" -eq 8 ] || return 0
  case $1 in vector_add) echo 5.4 ;; jacobi2d) echo 5.5 ;; sgemm) echo 5.0 ;; esac
}

# human BYTES: the byte count in B, KiB, MiB, GiB or TiB; n/a stays n/a.
human() {
  awk -v b="$1" 'BEGIN {
    if (b == "n/a") { print "n/a"; exit }
    split("B KiB MiB GiB TiB", unit, " "); u = 1
    while (b >= 1024 && u < 5) { b /= 1024; u++ }
    format = u == 1 ? "%d %s\n" : "%.2f %s\n"
    printf format, b, unit[u] }'
}

# run_once EXAMPLE GPUS: the example plainly (GPUS 0) or under mgpu-run -n
# GPUS; leaves its stdout, stderr, status and NVLink bytes in $work.
run_once() {
  label=$1.$2
  before=$(bench/nvlink_bytes)
  set +e
  if [ "$2" -eq 0 ]; then
    "examples/$1" > "$work/$label.out" 2> "$work/$label.err"
  else
    "$MGPU_RUN" -n "$2" "examples/$1" > "$work/$label.out" 2> "$work/$label.err"
  fi
  echo $? > "$work/$label.status"
  set -e
  after=$(bench/nvlink_bytes)
  if [ "$before" = n/a ] || [ "$after" = n/a ]; then
    echo n/a
  else
    awk -v a="$after" -v b="$before" 'BEGIN { printf "%.0f\n", a - b }'
  fi > "$work/$label.nvlink"
}

failures=0
: > "$work/plot.data"
{
  echo "# Scaling of the examples under mgpu"
  echo
  echo "- **Date:** $(date '+%Y-%m-%d %H:%M %Z'), host $host"
  echo "- **GPUs:** $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c |
    awk '{ n = $1; $1 = ""; printf "%s%d ×%s", sep, n, $0; sep = ", " }'),"\
       "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "- **mgpu:** $("$MGPU_RUN" --version 2>&1 | head -1)"
  echo "- **Command:** \`bench/run-scaling.sh $max_gpus $examples\`, default sizes"
  echo "- **Columns:** kernel ms is the example's median time per launch (CUDA events around a"
  echo "  loop of launches); speedup and efficiency compare with the plain run (one GPU, no"
  echo "  mgpu); NVLink is what all GPUs sent over NVLink during the whole run, setup and"
  echo "  checks included (n/a: no NVML NVLink counters); output: PASS and the same result"
  echo "  lines as the plain run. Targets: issue 5, on 8 GPUs."
} > "$report"

for ex in $examples; do
  printf 'scaling: %s plain\n' "$ex" >&2
  run_once "$ex" 0
  plain_status=$(cat "$work/$ex.0.status")
  plain_ms=$(sed -n 's/^time: .* kernel_ms=\([0-9.]*\) .*/\1/p' "$work/$ex.0.out")
  grep -v '^time: ' "$work/$ex.0.out" > "$work/$ex.0.result" || true
  {
    echo
    echo "## $ex"
    echo
    sed -n "/^$ex: /p" "$work/$ex.0.out" | sed 's/^/    /'
    echo
    echo "| GPUs | kernel ms | speedup | efficiency | NVLink | output | target |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
  } >> "$report"
  if [ "$plain_status" -ne 0 ] || [ -z "$plain_ms" ]; then
    failures=$((failures + 1))
    echo "run-scaling.sh: $ex without mgpu exited $plain_status:" >&2
    tail -n 20 "$work/$ex.0.out" "$work/$ex.0.err" >&2
    echo "| 1, no mgpu | — | — | — | $(human "$(cat "$work/$ex.0.nvlink")") | FAIL (status $plain_status) | |" >> "$report"
    continue
  fi
  echo "| 1, no mgpu | $plain_ms | 1.00× | 1.00 | $(human "$(cat "$work/$ex.0.nvlink")") | PASS | |" >> "$report"

  for n in $counts; do
    printf 'scaling: %s -n %s\n' "$ex" "$n" >&2
    run_once "$ex" "$n"
    status=$(cat "$work/$ex.$n.status")
    ms=$(sed -n 's/^time: .* kernel_ms=\([0-9.]*\) .*/\1/p' "$work/$ex.$n.out")
    grep -v '^time: ' "$work/$ex.$n.out" > "$work/$ex.$n.result" || true
    bytes=$(human "$(cat "$work/$ex.$n.nvlink")")
    goal=$(target "$ex" "$n")
    if [ "$status" -ne 0 ] || [ -z "$ms" ]; then
      failures=$((failures + 1))
      echo "run-scaling.sh: $ex under -n $n exited $status:" >&2
      tail -n 20 "$work/$ex.$n.out" "$work/$ex.$n.err" >&2
      echo "| $n | — | — | — | $bytes | FAIL (status $status) | ${goal:+≥ $goal×} |" >> "$report"
      continue
    fi
    if cmp -s "$work/$ex.0.result" "$work/$ex.$n.result"; then
      output="PASS, same"
    else
      failures=$((failures + 1))
      output="PASS, **differs**"
      echo "run-scaling.sh: $ex under -n $n printed other results than without mgpu:" >&2
      diff "$work/$ex.0.result" "$work/$ex.$n.result" >&2 || true
    fi
    speedup=$(awk -v p="$plain_ms" -v m="$ms" 'BEGIN { printf "%.2f", (m > 0 ? p / m : 0) }')
    efficiency=$(awk -v s="$speedup" -v n="$n" 'BEGIN { printf "%.2f", s / n }')
    verdict=""
    [ -n "$goal" ] && verdict=$(awk -v s="$speedup" -v g="$goal" \
      'BEGIN { printf "≥ %s×: %s", g, (s + 0 >= g + 0 ? "met" : "**missed**") }')
    echo "| $n | $ms | $speedup× | $efficiency | $bytes | $output | $verdict |" >> "$report"
    echo "$ex $n $speedup" >> "$work/plot.data"
  done
done

awk -v title="mgpu scaling, $host, $date (speedup of the kernel time over one GPU without mgpu)" \
  -f "$here/plot_scaling.awk" "$work/plot.data" > "$plot"
{
  echo
  echo "Plot: \`$(basename "$plot")\`."
} >> "$report"
cat "$report"
echo "run-scaling.sh: wrote $report and $plot" >&2
[ "$failures" -eq 0 ] || { echo "run-scaling.sh: $failures runs failed or differ (above)" >&2; exit 1; }
