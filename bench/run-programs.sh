#!/bin/sh
# The test programs (tests/programs/README.md) on more GPUs (issues 19, 23):
# bench/run-corpus.sh over tests/programs/ alone, with its table, verdicts,
# REPORTS_DIR and GPU_LISTS (see there).
#   bench/run-programs.sh [GPUS=all] [ROUNDS=3] [PROGRAM...]
# Run from the top build directory after `make check`.
set -eu
gpus=${1:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
[ $# -gt 0 ] && shift
rounds=${1:-3}
[ $# -gt 0 ] && shift
names=${*:-"stencil1d stencil3d gaussian bfs spmv_csr conv2d fdtd2d threadfence_reduction
  atomic_sum histogram_atomicinc pointer_chase coop_grid_sync graph_replay two_threads
  managed_memory transpose scan lookback_scan"}
programs=""
for p in $names; do programs="$programs tests/programs/$p"; done
# shellcheck disable=SC2086
exec sh "$(dirname "$0")/run-corpus.sh" "${gpus:-0}" "$rounds" $programs
