#!/bin/sh
# What the probes' glue costs the kernels of short blocks, without the rest
# of the runtime: vector_add's and jacobi2d's kernels compiled to PTX,
# rewritten by mgpu-ptx without probes and with each tool, and each timed
# by bench/probe_glue (driver API, events, interleaved rounds of 20
# launches); ratios to the rewrite without probes. A glue change measured
# here in a minute can then be checked under mgpu-run with
# bench/run-probe-overhead.sh. memory-locality needs the pool's page map,
# which only the runtime gives, and is left out.
#   bench/run-probe-glue.sh [ROUNDS=15]
# Run from the top build directory after `make check`, on a GPU machine.
set -eu
rounds=${1:-15}
srcdir=$(cd "$(dirname "$0")/.." && pwd)
. ./tests/env.sh
[ -x bench/probe_glue ] && [ -x src/ptx/mgpu-ptx ] || { echo "run-probe-glue.sh: run make check first" >&2; exit 2; }
nvcc="$CUDA_HOME/bin/nvcc"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tools="thread-count launch-latency block-time"
for t in $tools; do
  "$nvcc" -ptx -rdc=true -arch=compute_75 -I"$srcdir/probes/include" -o "$work/$t.ptx" "$srcdir/probes/tools/$t.cu"
done
echo "$(date -u +%Y-%m-%d), $(nvidia-smi -L 2>/dev/null | head -n 1), $rounds rounds"
for ex in vector_add jacobi2d; do
  "$nvcc" -ptx -arch=sm_90 -I"$srcdir/examples" -o "$work/$ex.ptx" "$srcdir/examples/$ex.cu"
  src/ptx/mgpu-ptx rewrite "$work/$ex.ptx" -o "$work/$ex-none.ptx" > /dev/null
  files="$work/$ex-none.ptx"
  for t in $tools; do
    src/ptx/mgpu-ptx rewrite "$work/$ex.ptx" -o "$work/$ex-$t.ptx" --probe "$work/$t.ptx" > /dev/null
    files="$files $work/$ex-$t.ptx"
  done
  echo
  echo "$ex (the rewrite without probes first; one block in 32 sampled)"
  bench/probe_glue "$ex" "$rounds" 32 $files
done
