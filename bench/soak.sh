#!/bin/sh
# The soak of issue 17: the stress client (tests/stress/stress_client.c),
# eight host threads on eight streams running random allocations, frees,
# copies, memsets, launches and synchronisations with every result checked,
# under mgpu-run --gpus 0x4 (four GPUs of the run on GPU 0) on a real GPU,
# for SECONDS in all, shared by four runs: MGPU_SPLIT=always and the default
# auto, each with both fork/join modes (flags, events), blocking and
# non-blocking streams. Writes each run's output and mgpu's report to
# LOGDIR, prints a Markdown table of operations, bytes checked and errors,
# and exits 1 if any run failed, hung or got a wrong value.
#   bench/soak.sh [SECONDS=600] [LOGDIR=a new directory under $TMPDIR]
# Environment: SOAK_GPUS (default 0x4), SOAK_THREADS (8), SOAK_SEED (the
# first run's seed, default the time; the runs use SEED, SEED+1, ...),
# STRESS_CLIENT (default tests/stress/stress_client). Run from the top build
# directory after `make check`, or set MGPU_RUN and STRESS_CLIENT.
set -u
seconds=${1:-600}
logs=${2:-}
gpus=${SOAK_GPUS:-0x4}
threads=${SOAK_THREADS:-8}
seed=${SOAK_SEED:-$(date +%s)}
client=${STRESS_CLIENT:-tests/stress/stress_client}
. "$(dirname "$0")/find_mgpu_run.sh"
[ -x "$client" ] || { echo "soak.sh: $client is missing; run make check first" >&2; exit 2; }
if [ -z "$logs" ]; then
  logs=$(mktemp -d "${TMPDIR:-/tmp}/mgpu-soak.XXXXXX")
else
  mkdir -p "$logs" || exit 2
fi
# Four runs share the time; a run that outlives its share by two minutes
# has hung (a lost fork/join flag, a deadlock) and is stopped.
per=$(( seconds / 4 ))
[ "$per" -ge 1 ] || per=1
limit=$(( per + 120 ))
stopper=""
command -v timeout > /dev/null 2>&1 && stopper="timeout -k 10 $limit"
export CUDA_CACHE_PATH="$logs/jit-cache"

echo "soak: $threads threads under mgpu-run --gpus $gpus, 4 runs of $per s, seeds from $seed, logs in $logs"
echo
echo "| MGPU_SPLIT | MGPU_FORK_JOIN | streams | seed | s | operations | bytes checked | fill, axpy split | errors | result |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
failed=0
n=0
for c in always:flags:blocking always:events:nonblocking auto:flags:nonblocking \
         auto:events:blocking; do
  split=${c%%:*}; rest=${c#*:}; fork_join=${rest%%:*}; streams=${rest#*:}
  s=$(( seed + n )); n=$(( n + 1 ))
  name="$split-$fork_join-$streams"
  flag=""; [ "$streams" = nonblocking ] && flag=--nonblocking
  start=$(date +%s)
  MGPU_SPLIT=$split MGPU_FORK_JOIN=$fork_join $stopper "$MGPU_RUN" --gpus "$gpus" --report \
    "$client" --threads "$threads" --seconds "$per" --seed "$s" $flag \
    > "$logs/$name.out" 2> "$logs/$name.err"
  status=$?
  took=$(( $(date +%s) - start ))
  ops=$(sed -n 's/^stress_client: \([0-9]*\) operations in.*/\1/p' "$logs/$name.out")
  bytes=$(sed -n 's/^stress_client: \([0-9]*\) bytes checked$/\1/p' "$logs/$name.out")
  # The report's split column: x4, or no [reasons], or both.
  cut_fill=$(awk '$1 == "mgpu_test_fill" { $1 = $2 = $3 = $4 = ""; $NF = ""; print }' "$logs/$name.err" | xargs)
  cut_axpy=$(awk '$1 == "mgpu_test_axpy" { $1 = $2 = $3 = $4 = ""; $NF = ""; print }' "$logs/$name.err" | xargs)
  errors=$(grep -c -E '^(error:|stress_client: wrong value)' "$logs/$name.out")
  if [ "$status" -eq 0 ] && grep -q "^stress_client: results correct" "$logs/$name.out"; then
    result=pass
  elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    result="hung (stopped after $limit s)"; failed=1; errors=$(( errors + 1 ))
  else
    result="FAIL (status $status)"; failed=1
    [ "$errors" -gt 0 ] || errors=1
  fi
  echo "| $split | $fork_join | $streams | $s | $took | ${ops:-?} | ${bytes:-?} | ${cut_fill:--}, ${cut_axpy:--} | $errors | $result |"
done
echo
for f in "$logs"/*.out; do
  grep -h -E '^(error:|stress_client: wrong value)' "$f" | sed "s|^|$(basename "$f" .out): |"
done
[ "$failed" -eq 0 ] && echo "soak: all runs correct" || echo "soak: FAILED (see $logs)"
exit "$failed"
