#!/bin/sh
# MPI ranks under mgpu (issue 22) with a real mpirun on one GPU:
# examples/mpi_jacobi (rows divided among ranks, halos through host memory)
# plainly under mpirun -np 2, then under mgpu-run as 1 rank x 2 GPUs and
# 2 ranks x 2 GPUs (GPU 0 listed twice for each), each with MGPU_SPLIT=always:
# the result line (every point checked, a checksum that does not depend on
# the shape) must be the plain run's. One rank more than the machine has
# GPUs, without --gpus, is one line naming the fix. Skipped without a
# GPU, without MPI at configure, or without a working mpirun.
. "$(dirname "$0")/common.sh"
require_gpu
prog=examples/mpi_jacobi
[ -x "$prog" ] || { echo "skip: $prog was not built (configure found no MPI)"; exit 77; }
command -v mpirun > /dev/null 2>&1 || { echo "skip: no mpirun"; exit 77; }
mpirun="mpirun --oversubscribe -np"
[ "$(id -u)" -eq 0 ] && mpirun="mpirun --allow-run-as-root --oversubscribe -np"
$mpirun 1 true > "$work/probe" 2>&1 || { cat "$work/probe"; echo "skip: mpirun does not start here"; exit 77; }

# run LABEL RANKS ARGS...: under mpirun; the result line to LABEL.result.
run() {
  label=$1 np=$2
  shift 2
  timeout 300 $mpirun "$np" "$@" > "$work/$label.out" 2> "$work/$label.err" ||
    { cat "$work/$label.out" "$work/$label.err" >&2; fail "$label exited $?"; }
  grep '^mpi_jacobi: ' "$work/$label.out" > "$work/$label.result"
  grep -q ': PASS checksum' "$work/$label.result" ||
    { cat "$work/$label.out" >&2; fail "$label: no PASS line"; }
}
run plain 2 $prog --quick
cat "$work/plain.result"
for shape in "1 0x2" "2 0x2"; do
  set -- $shape
  label=ranks$1
  MGPU_SPLIT=always run "$label" "$1" "$MGPU_RUN" --gpus "$2" --report -v $prog --quick
  cmp -s "$work/plain.result" "$work/$label.result" ||
    { diff "$work/plain.result" "$work/$label.result" >&2; fail "$1 ranks x --gpus $2: result differs"; }
  # Every rank says which it is, and split its kernels.
  for r in $(seq 0 $(($1 - 1))); do
    grep -q "^mgpu report: rank $r on " "$work/$label.err" ||
      { cat "$work/$label.err" >&2; fail "$1 ranks: no report of rank $r"; }
  done
  grep -Eq "jacobi_band.* x2( |$)" "$work/$label.err" ||
    { cat "$work/$label.err" >&2; fail "$1 ranks: jacobi_band was not split in two"; }
  pass "$1 rank(s) x --gpus $2 under mgpu: the plain run's result, $(sed -n 's/^time: mpi_jacobi //p' "$work/$label.out")"
done
# One rank more than the node has GPUs, without --gpus.
np=$((gpu_count + 1))
plural=s
[ "$gpu_count" -eq 1 ] && plural=
$mpirun $np "$MGPU_RUN" $prog --quick > "$work/toomany.out" 2> "$work/toomany.err" &&
  fail "$np ranks on $gpu_count GPU$plural without --gpus ran"
grep -q "$np ranks on a node of $gpu_count GPU$plural: each rank needs one" "$work/toomany.err" ||
  { cat "$work/toomany.err" >&2; fail "$np ranks on $gpu_count GPU$plural: not the one-line error"; }
pass "$np ranks on $gpu_count GPU$plural without --gpus: refused in one line naming the fix"
