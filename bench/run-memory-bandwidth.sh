#!/bin/sh
# What mgpu's distributed memory costs and gives: bench/memory_bandwidth (copy
# bandwidth between the host and one SIZE GiB buffer, pinned and pageable;
# cudaMalloc/cudaFree per call) run plainly, under mgpu-run -n 1 and under
# mgpu-run -n N; prints one Markdown table with a column per run and the ratio
# of -n N to plain (above 1 is faster for GB/s, slower for µs).
#   bench/run-memory-bandwidth.sh [N=all GPUs] [SIZE_GIB=8] [REPS=5]
# Run from the top build directory after `make check` (which builds the
# benchmark), or set MGPU_RUN and MEMORY_BANDWIDTH to installed copies.
set -eu
gpus=${1:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
size_gib=${2:-8}
reps=${3:-5}
bench=${MEMORY_BANDWIDTH:-bench/memory_bandwidth}
. "$(dirname "$0")/find_mgpu_run.sh"
# NCCL's NVLink multicast (NVLS) is not usable on every machine; keep it off.
export NCCL_NVLS_ENABLE=0
[ -x "$bench" ] || { echo "run-memory-bandwidth.sh: $bench is missing; run make check first" >&2; exit 2; }
[ "${gpus:-0}" -ge 1 ] || { echo "run-memory-bandwidth.sh: no GPU (nvidia-smi -L lists none)" >&2; exit 2; }
configs="plain mgpu-n1"
[ "$gpus" -ge 2 ] && configs="$configs mgpu-n$gpus"
last=${configs##* }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for c in $configs; do
  case $c in
    plain) set -- "$bench" ;;
    mgpu-n*) set -- "$MGPU_RUN" -n "${c#mgpu-n}" "$bench" ;;
  esac
  printf '%s: %s %s %s\n' "$c" "$*" "$size_gib" "$reps" >&2
  "$@" "$size_gib" "$reps" > "$out/$c" 2> "$out/$c.err" || {
    cat "$out/$c" "$out/$c.err" >&2; echo "run-memory-bandwidth.sh: the $c run failed" >&2; exit 1; }
  # One "case<TAB>value<TAB>unit" line per table row of the program.
  awk -F'|' '/^\| / && $3 ~ /[0-9]/ {
      for (i = 2; i <= 4; i++) gsub(/^ +| +$/, "", $i)
      print $2 "\t" $3 "\t" $4 }' "$out/$c" > "$out/$c.rows"
done

head -n 1 "$out/plain"
echo
printf '| case | unit |'; for c in $configs; do printf ' %s |' "$c"; done; printf ' %s / plain |\n' "$last"
printf '| --- | --- |'; for c in $configs; do printf ' --- |'; done; printf ' --- |\n'
cut -f 1 "$out/plain.rows" | while IFS= read -r name; do
  unit=$(awk -F'\t' -v n="$name" '$1 == n { print $3 }' "$out/plain.rows")
  printf '| %s | %s |' "$name" "$unit"
  for c in $configs; do
    printf ' %s |' "$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$out/$c.rows")"
  done
  awk -F'\t' -v n="$name" '$1 == n { v[FILENAME] = $2 }
      END { a = v[ARGV[1]]; b = v[ARGV[2]]
            if (a == "" || b == "" || b + 0 == 0) print " - |"; else printf " %.3f |\n", a / b }' \
    "$out/$last.rows" "$out/plain.rows"
done
