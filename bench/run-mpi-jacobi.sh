#!/bin/sh
# MPI ranks that each own several GPUs (issues 22, 23): examples/mpi_jacobi
# on a SIDE x SIDE grid, SWEEPS sweeps, run plainly as one rank on one GPU
# (no mgpu), then under mgpu-run as R ranks x G GPUs for every R (1, 2, 4,
# 8 up to GPUS) with R x G = GPUS, each rank taking its own group of the
# node's GPUs (mgpu-run -n G under mpirun). Prints the median time per sweep
# (halo exchange included; the slowest rank's), the speedup over the plain
# run, and whether the result line (every point checked against the CPU,
# a checksum that does not depend on the shape) is the plain run's.
#   bench/run-mpi-jacobi.sh [GPUS=all] [SIDE=8192] [SWEEPS=100]
# Run from the top build directory after `make check` (configure found MPI).
set -eu
gpus=${1:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
side=${2:-8192}
sweeps=${3:-100}
prog=examples/mpi_jacobi
. "$(dirname "$0")/find_mgpu_run.sh"
export NCCL_NVLS_ENABLE=0
[ -x "$prog" ] || { echo "run-mpi-jacobi.sh: $prog is missing; configure with MPI and run make check first" >&2; exit 2; }
command -v mpirun > /dev/null 2>&1 || { echo "run-mpi-jacobi.sh: no mpirun on PATH" >&2; exit 2; }
[ "${gpus:-0}" -ge 1 ] || { echo "run-mpi-jacobi.sh: needs a GPU (nvidia-smi -L lists none)" >&2; exit 2; }
mpirun="mpirun --oversubscribe -np"
[ "$(id -u)" -eq 0 ] && mpirun="mpirun --allow-run-as-root --oversubscribe -np"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run NAME RANKS ARGS...: the result line to NAME.result, the sweep time to NAME.ms.
run() {
  name=$1 np=$2
  shift 2
  printf '%s: mpirun -np %s %s\n' "$name" "$np" "$*" >&2
  $mpirun "$np" "$@" "$prog" --side "$side" --sweeps "$sweeps" > "$out/$name.out" 2> "$out/$name.err" || {
    cat "$out/$name.out" "$out/$name.err" >&2; echo "run-mpi-jacobi.sh: $name failed" >&2; exit 1; }
  grep '^mpi_jacobi: ' "$out/$name.out" > "$out/$name.result" || true
  sed -n 's/^time: mpi_jacobi sweep_ms=\([0-9.]*\).*/\1/p' "$out/$name.out" > "$out/$name.ms"
}
run plain 1
shapes=""
r=1
while [ "$r" -le "$gpus" ]; do
  [ $((gpus % r)) -eq 0 ] && shapes="$shapes $r"
  r=$((r * 2))
done
for r in $shapes; do
  run "r$r" "$r" "$MGPU_RUN" -n $((gpus / r))
done

plain_ms=$(cat "$out/plain.ms")
echo "mpi_jacobi: ${side} x ${side} grid, ${sweeps} sweeps on $gpus GPUs; $(cat "$out/plain.result")"
echo
echo "| ranks x GPUs | ms per sweep | speedup | output |"
echo "| --- | --- | --- | --- |"
printf '| 1 x 1, no mgpu | %s | 1.00× | %s |\n' "$plain_ms" \
  "$(grep -q ': PASS' "$out/plain.result" && echo PASS || echo FAIL)"
status=0
for r in $shapes; do
  ms=$(cat "$out/r$r.ms")
  if cmp -s "$out/plain.result" "$out/r$r.result"; then verdict="PASS, same"; else verdict="DIFFERENT"; status=1; fi
  printf '| %s x %s | %s | %.2f× | %s |\n' "$r" $((gpus / r)) "$ms" \
    "$(awk -v a="$ms" -v b="$plain_ms" 'BEGIN { print b / a }')" "$verdict"
done
exit $status
