#!/bin/sh
# What the built-in probes cost (issue 20), on one GPU: each example's
# kernel time (its own "time:" line: events around its timed loops, median
# of its repeats) under mgpu-run -n 1 without probes and with each tool,
# interleaved, ROUNDS times; the median of the rounds, and the ratio to none.
# Goals: launch-latency and thread-count <= 1.03, block-time <= 1.05,
# memory-locality <= 2. PROBE_TOOLS names the columns instead: "none",
# built-in tools and probe files (a variant of a tool, FILE.cu or .ptx).
#   bench/run-probe-overhead.sh [ROUNDS=3] [EXAMPLE...]
#   PROBE_TOOLS="none launch-latency my-variant.cu" bench/run-probe-overhead.sh 3 vector_add
# Examples run at their default sizes; EXAMPLE_ARGS adds arguments to each
# (--quick for a fast look). Run from the top build directory after
# `make check`, or set MGPU_RUN. The probes compile from the source tree
# when run in the build tree (MGPU_PROBE_DIR, MGPU_PROBE_INCLUDE).
set -eu
rounds=${1:-3}
[ $# -gt 0 ] && shift
examples=${*:-vector_add saxpy jacobi2d sgemm histogram reduction nbody}
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
src=$(cd "$(dirname "$0")/.." && pwd)
if [ -d "$src/probes/tools" ]; then
  export MGPU_PROBE_DIR="${MGPU_PROBE_DIR:-$src/probes/tools}"
  export MGPU_PROBE_INCLUDE="${MGPU_PROBE_INCLUDE:-$src/probes/include}"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MGPU_CACHE_DIR="${MGPU_CACHE_DIR:-$out/cache}"
tools=${PROBE_TOOLS:-none thread-count launch-latency block-time memory-locality}
case " $tools " in *" none "*) ;; *) tools="none $tools" ;; esac
# column NAME: a tool's name, or a probe file's without its folder
column() { basename "$1"; }
# key NAME: a file name for a tool's times
key() { column "$1" | tr -c 'A-Za-z0-9_.\n-' _; }

kernel_ms() { sed -n 's/^time: .* kernel_ms=\([0-9.]*\).*/\1/p'; }
for r in $(seq 1 "$rounds"); do
  for ex in $examples; do
    for t in $tools; do
      probe=
      [ "$t" = none ] || probe="--probe $t"
      # shellcheck disable=SC2086
      "$MGPU_RUN" -n 1 $probe "examples/$ex" ${EXAMPLE_ARGS:-} 2> "$out/err" | kernel_ms >> "$out/$ex.$(key "$t")" ||
        { cat "$out/err" >&2; exit 1; }
    done
  done
  printf 'round %s of %s done\n' "$r" "$rounds" >&2
done
echo "kernel ms per launch under mgpu-run -n 1 (median of $rounds rounds), and the ratio to no probe"
echo
header="| example |" rule="| --- |"
for t in $tools; do
  header="$header $(column "$t") |" rule="$rule --- |"
done
echo "$header"
echo "$rule"
for ex in $examples; do
  none=$(median "$out/$ex.none")
  line="| $ex | $none"
  for t in $tools; do
    [ "$t" = none ] && continue
    v=$(median "$out/$ex.$(key "$t")")
    line="$line | $v ($(awk -v a="$v" -v b="$none" 'BEGIN { printf "%.3f", a / b }'))"
  done
  echo "$line |"
done
