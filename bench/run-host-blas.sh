#!/bin/sh
# A CPU program's SGEMM on its CPU BLAS and under mgpu-run --blas (issue
# 21, item 2): tests/blas/cpu_gemms --time N times an N^3 cblas_sgemm on
# the host clock, the whole call (copies to and from the GPUs included),
# median of 3 after one more, C checked on a sample. Plainly (the CPU BLAS
# it is linked with), then under --blas -n 1 and on each --gpus set given.
# ROUNDS interleaved rounds; the table gives the medians.
#   bench/run-host-blas.sh [ROUNDS=3] [N=4096] [SETS="0x2"]
set -eu
rounds=${1:-3}
n=${2:-4096}
sets=${3:-0x2}
prog=${CPU_GEMMS:-tests/blas/cpu_gemms}
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
[ -x "$prog" ] || { echo "run-host-blas.sh: $prog is missing; it needs a CPU BLAS (libblas-dev) and make check" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
seconds() { sed -n 's/^timed: .*seconds=\([0-9.]*\).*/\1/p'; }
for r in $(seq 1 "$rounds"); do
  "$prog" --time "$n" | seconds >> "$out/plain"
  "$MGPU_RUN" -n 1 --blas "$prog" --time "$n" | seconds >> "$out/one"
  for set in $sets; do
    "$MGPU_RUN" --gpus "$set" --blas "$prog" --time "$n" | seconds >> "$out/$set"
  done
  printf 'round %s of %s done\n' "$r" "$rounds" >&2
done
plain=$(median "$out/plain")
blas=$(ldd "$prog" | sed -n 's/.*\(lib[a-z]*blas[^ ]*\) => \([^ ]*\).*/\2/p' | head -1)
echo "cpu_gemms --time $n: one ${n}^3 cblas_sgemm, host seconds, median of $rounds rounds (CPU BLAS: ${blas:-?}, $(nproc) CPUs)"
echo
echo "| run | seconds | GFLOP/s | speedup over the CPU BLAS |"
echo "| --- | --- | --- | --- |"
row() {
  s=$(median "$out/$2")
  printf '| %s | %.3f | %.1f | %.2f |\n' "$1" "$s" "$(awk -v s="$s" -v n="$n" 'BEGIN { print 2 * n * n * n / s / 1e9 }')" \
    "$(awk -v a="$plain" -v b="$s" 'BEGIN { print a / b }')"
}
row "CPU BLAS (no mgpu)" plain
row "mgpu-run -n 1 --blas" one
for set in $sets; do row "mgpu-run --gpus $set --blas" "$set"; done
