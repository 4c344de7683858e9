#!/bin/sh
# The run on a machine of several GPUs (issue 23), as one batch that can be
# resumed: every GPU test on distinct GPUs, then the benchmarks, each a step
# whose output goes to LOGDIR/STEP.log and whose end is marked in LOGDIR,
# so that running the script again with the same LOGDIR (on the same
# machine, within one lease) goes on with the steps not yet done. With
# BUDGET seconds (0: none), a step whose usual time would not fit is left
# for the next call; each step is also stopped at its own limit. Prints one
# line per step (name, exit status, seconds) and the list of what is left.
#   bench/run-several-gpus.sh [--list] [GPUS=all] [LOGDIR=bench/results/several-gpus] [BUDGET=0]
# Run from the top build directory after `make check`. Steps:
#   tests      every tests/gpu-*.sh, one step each (GPU 0 repeated and distinct GPUs)
#   scaling    MGPU_MIRROR=auto bench/run-scaling.sh GPUS
#   split-cost bench/run-split-launch-cost.sh 3 20000 "0xGPUS 0,1,..."
#   cublas-*   MGPU_MIRROR=auto bench/run-cublas.sh 2 16384 512 "0,1 ... 0..GPUS-1" sgemm|bf16
#   mpi        bench/run-mpi-jacobi.sh GPUS 8192 100
#   bandwidth  bench/run-memory-bandwidth.sh GPUS 8 5
#   probes     mgpu-run -n GPUS --probe launch-latency --probe block-time, vector_add and sgemm
#   programs   bench/run-programs.sh GPUS 3
set -u
list=false
[ "${1:-}" = --list ] && { list=true; shift; }
gpus=${1:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
logdir=${2:-bench/results/several-gpus}
budget=${3:-0}
here=$(dirname "$0")
export NCCL_NVLS_ENABLE=0
# Probes compile from the source tree when run in the build tree.
src=$(cd "$here/.." && pwd)
if [ -d "$src/probes/tools" ]; then
  export MGPU_PROBE_DIR="${MGPU_PROBE_DIR:-$src/probes/tools}"
  export MGPU_PROBE_INCLUDE="${MGPU_PROBE_INCLUDE:-$src/probes/include}"
fi
case $gpus in
  '' | *[!0-9]*) echo "run-several-gpus.sh: GPUS must be a number, not '$gpus'" >&2; exit 2 ;;
esac
[ "$gpus" -ge 2 ] || { echo "run-several-gpus.sh: needs 2 or more GPUs (nvidia-smi -L lists ${gpus})" >&2; exit 2; }

# The distinct sets: 0,1 then 0,1,2,3 ... doubling up to GPUS, and GPUS itself.
sets=""
k=2
while [ "$k" -lt "$gpus" ]; do sets="$sets$(seq -s, 0 $((k - 1))) "; k=$((k * 2)); done
sets="$sets$(seq -s, 0 $((gpus - 1)))"

# The steps, one per line: NAME USUAL_SECONDS LIMIT_SECONDS COMMAND.
steps() {
  for t in "$here"/../tests/gpu-*.sh; do
    [ -f "$t" ] || continue
    echo "$(basename "$t" .sh) 60 300 sh $t"
  done
  echo "scaling 300 900 env MGPU_SPLIT=auto MGPU_MIRROR=auto sh $here/run-scaling.sh $gpus"
  echo "split-cost 60 300 sh $here/run-split-launch-cost.sh 3 20000 \"0x$gpus $sets\""
  echo "cublas-sgemm 120 400 env MGPU_MIRROR=auto sh $here/run-cublas.sh 2 16384 512 \"$sets\" sgemm"
  echo "cublas-bf16 90 300 env MGPU_MIRROR=auto sh $here/run-cublas.sh 2 16384 512 \"$sets\" bf16"
  echo "mpi 60 300 sh $here/run-mpi-jacobi.sh $gpus 8192 100"
  echo "bandwidth 90 300 sh $here/run-memory-bandwidth.sh $gpus 8 5"
  echo "probes 60 300 sh -c 'for ex in vector_add sgemm; do \"\${MGPU_RUN:-src/mgpu-run}\" -n $gpus --probe launch-latency --probe block-time examples/\$ex; done'"
  echo "programs 450 900 sh $here/run-programs.sh $gpus 3"
}

if $list; then
  steps | while read -r name usual limit command; do
    printf '%-26s about %4s s, at most %4s s: %s\n' "$name" "$usual" "$limit" "$command"
  done
  exit 0
fi
mkdir -p "$logdir" || exit 2
. "$here/find_mgpu_run.sh"
export MGPU_RUN
start=$(date +%s)
left=""
# A step's usual and limit are read from the list; eval keeps its quoting.
steps > "$logdir/steps"
while read -r name usual limit command; do
  [ -f "$logdir/$name.done" ] && continue
  now=$(($(date +%s) - start))
  if [ "$budget" -gt 0 ] && [ $((now + usual)) -gt "$budget" ]; then
    left="$left $name"
    continue
  fi
  [ "$budget" -gt 0 ] && [ $((now + limit)) -gt $((budget + 30)) ] && limit=$((budget + 30 - now))
  t0=$(date +%s)
  eval "timeout $limit $command" > "$logdir/$name.log" 2>&1 < /dev/null
  rc=$?
  echo "$rc" > "$logdir/$name.done"
  printf '%-26s rc=%-3s %5s s\n' "$name" "$rc" $(($(date +%s) - t0)) | tee -a "$logdir/summary"
done < "$logdir/steps"
if [ -n "$left" ]; then
  echo "left for the next call (same LOGDIR):$left"
  exit 3
fi
echo "all steps done; logs in $logdir (rc=124: stopped at its limit)"
