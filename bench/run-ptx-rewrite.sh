#!/bin/sh
# The PTX rewrite benchmark: builds a large module from CUB's kernels with
# nvcc (bench/ptx_corpus.cu, about 10 MB of PTX, once), then times parsing,
# rewriting and analysing it. No GPU needed.
#   bench/run-ptx-rewrite.sh [ROUNDS=11]
# Run from the top build directory after `make check`.
set -eu
rounds=${1:-11}
srcdir=$(cd "$(dirname "$0")/.." && pwd)
. ./tests/env.sh
corpus=bench/ptx_corpus.ptx
if [ ! -s "$corpus" ]; then
  echo "building $corpus with nvcc (a minute or two)..." >&2
  "$CUDA_HOME/bin/nvcc" -ptx -arch=compute_90 "$srcdir/bench/ptx_corpus.cu" -o "$corpus"
fi
[ -x bench/ptx_rewrite_bench ] || { echo "run-ptx-rewrite.sh: run make check first" >&2; exit 2; }
echo "$(date -u +%Y-%m-%d), $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
bench/ptx_rewrite_bench "$corpus" "$rounds"
