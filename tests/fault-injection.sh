#!/bin/sh
# Injected driver failures: every driver call mgpu and the program make can
# fail, and mgpu must pass the failure on cleanly. For a configuration, a
# clean run counts the fake driver's calls (N, FAKE_CUDA_CALL_COUNT); then
# run K makes call K fail (FAKE_CUDA_FAIL_CALL=K, set for the program only,
# not for mgpu-run itself) and must
# - end (timeout 20 s; a stream wait the fake sees never satisfied aborts
#   after 10 s), and not die from a signal;
# - print "results correct" and exit 0 (mgpu passed the failure over, or
#   fell back to a correct way and said so on stderr), or print one line
#   "error: cuXxx returned CUDA_..." and exit 1: nothing wrong, nothing
#   garbled;
# - leave no physical memory, mapping or reserved range live at exit, and
#   no more device or host allocations, streams, events, modules or
#   contexts than the clean run leaves.
# Configurations (GPU lists rather than -n, which loads the machine's
# topology at every start): tests/fake/fake_client on 3 GPUs (every K; it
# checks answers of its own, so its runs must only end, without a signal
# or a leak, and count as clean errors; it keeps one allocation to the end,
# which mgpu's pool frees at exit and the driver does not: one more device
# allocation is allowed), and fake_gpu_client with MGPU_SPLIT=always under
# --gpus 0x4 (four GPUs on one device: every split path, flags, the copy
# router) and --gpus 0,1,2,3 (four devices), and under --gpus 0x4 with
# MGPU_MIRROR=always (replicas made, refreshed and freed; device copies,
# NCCL cannot run on the fake), and under --gpus 0,1,2,3 with the fill
# launched 8 times, whose buffer is spread after 4 split launches: every
# call of that move is failed in turn (found in the clean run's
# FAKE_CUDA_CALL_LOG). The client makes about 350, 410 and 380
# calls there, so by default they run every 6th, 13th and 11th K
# (about 60 s in all on two shared cores); FAULT_SWEEP_STRIDE=1 runs every
# K of every configuration (about 10 minutes), FAULT_SWEEP_K="K ..." just
# those K, and FAULT_SWEEP_JOBS sets how many runs go at once (default 2).
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4 FAKE_CUDA_WAIT_SECONDS=10 FAKE_NCCL_PROBE="$top_builddir/tests/fake/.libs/libnccl_probe.so"
jobs=${FAULT_SWEEP_JOBS:-2}
bounded="physical mappings reservations"
compared="device_allocations host_allocations streams events modules primary_retains contexts"

# One run: K, then the configuration's words; its verdict in $work/NAME.K.
cat > "$work/one.sh" <<'ONE'
k=$1; name=$2; kind=$3; shift 3
dir=$WORK/$name.$k.d; mkdir -p "$dir"
timeout 20 env "$@" env FAKE_CUDA_FAIL_CALL="$k" FAKE_CUDA_FAIL_LOG="$dir/failed" \
  FAKE_CUDA_LEAK_REPORT="$dir/leaks" "$PROGRAM" > "$dir/out" 2> "$dir/err"
rc=$?
call=$(cut -d' ' -f2 "$dir/failed" 2>/dev/null)
verdict=
if [ $rc -eq 124 ]; then verdict="hang"
elif [ $rc -gt 128 ]; then verdict="signal $((rc - 128))"
elif [ ! -s "$dir/leaks" ]; then verdict="no leak report (exit $rc)"
elif [ "$kind" = client ]; then
  if [ $rc -eq 0 ] && grep -q "results correct" "$dir/out"; then verdict=correct
  elif [ $rc -eq 1 ] && [ "$(wc -l < "$dir/out")" -eq 1 ] &&
       grep -Eq '^error: cu[A-Za-z0-9_]+ returned CUDA_[A-Z0-9_]+$' "$dir/out"; then verdict=error
  else verdict="wrong output (exit $rc): $(head -c 200 "$dir/out" | tr '\n' '|')"; fi
else
  if [ $rc -eq 0 ]; then verdict=correct; else verdict=error; fi
fi
if [ "$verdict" = correct ] || [ "$verdict" = error ]; then
  # One awk for all the counts: this runs hundreds of times.
  left=$(awk -v bounded="$BOUNDED" -v compared="$COMPARED" -v slack="$SLACK" '
    FNR == NR { clean[$1] = $2; next }
    { now[$1] = $2 }
    END {
      n = split(bounded, b, " ")
      for (i = 1; i <= n; i++) if (now[b[i]] != 0) { print "left " b[i] " " now[b[i]]; exit }
      n = split(compared, c, " ")
      for (i = 1; i <= n; i++) {
        allowed = clean[c[i]] + (c[i] == "device_allocations" ? slack : 0)
        if (now[c[i]] > allowed) { print "left " c[i] " " now[c[i]] ", the clean run " clean[c[i]]; exit }
      }
    }' "$WORK/$name.clean" "$dir/leaks")
  [ -z "$left" ] || verdict=$left
fi
echo "$k ${call:-none} $verdict" > "$WORK/$name.$k"
[ "$verdict" = correct ] || [ "$verdict" = error ] && rm -rf "$dir"
exit 0
ONE
export WORK="$work" BOUNDED="$bounded" COMPARED="$compared"

# sweep NAME KIND STRIDE SLACK PROGRAM [ARG=VALUE...] -- MGPU-RUN-ARGS: the
# clean run, then every STRIDE-th K of its calls; SLACK more device
# allocations than the clean run's may be left.
sweep() {
  name=$1 kind=$2 stride=${FAULT_SWEEP_STRIDE:-$3} SLACK=$4; PROGRAM=$5; shift 5
  export PROGRAM SLACK
  vars=
  while [ "$1" != -- ]; do vars="$vars $1"; shift; done
  shift
  env $vars FAKE_CUDA_CALL_COUNT="$work/$name.calls" FAKE_CUDA_LEAK_REPORT="$work/$name.clean" \
    FAKE_CUDA_CALL_LOG="$work/$name.log" "$MGPU_RUN" "$@" "$PROGRAM" > "$work/$name.out" 2>&1 || {
    cat "$work/$name.out"; fail "the clean run of $name"; }
  n=$(cat "$work/$name.calls")
  [ "$n" -gt 0 ] || fail "$name: the fake counted no calls"
  start=$(date +%s)
  if [ "$stride" = move ]; then
    # Every call of the pool's first move: from the home context's wait
    # (two cuCtxSynchronize before the first part's cuMemCreate, with the
    # retain of its GPU's context between where the pool makes it then) to the
    # access granted after the parts are mapped in place.
    ks=$(awk '$2 == "cuCtxSynchronize" { sync = $1 }
      $2 == "cuMemCreate" && prev == "cuCtxSynchronize" && !from { from = sync - 3 }
      from && $2 == "cuStreamSynchronize" { copied = 1 }
      from && copied && $2 == "cuMemSetAccess" { for (k = from; k <= $1; k++) print k; exit }
      $2 != "cuDevicePrimaryCtxRetain" { prev = $2 }' "$work/$name.log")
    [ -n "$ks" ] || fail "$name: no move in the clean run"
  else
    ks=${FAULT_SWEEP_K:-$(seq 1 "$stride" "$n")}
  fi
  # xargs replaces its -I string inside every argument: "{}" cannot occur
  # in mktemp's names, where "K" did (mgpu-test.wpTKcd became wpT95cd).
  echo $ks | tr ' ' '\n' | xargs -P "$jobs" -I {} sh "$work/one.sh" {} "$name" "$kind" $vars \
    "$MGPU_RUN" "$@"
  total=0 correct=0 errors=0 bad=0
  for k in $ks; do
    total=$((total + 1))
    set -- $(cat "$work/$name.$k")
    case "$3" in
      correct) correct=$((correct + 1)) ;;
      error) errors=$((errors + 1)) ;;
      *) bad=$((bad + 1)); echo "FAIL: $name, K=$(cat "$work/$name.$k")" >&2
         [ -d "$work/$name.$k.d" ] && head -5 "$work/$name.$k.d/err" >&2 ;;
    esac
  done
  echo "$name: N=$n calls, $total runs (every ${stride}), $correct correct, $errors clean errors," \
    "$bad failed, $(( $(date +%s) - start )) s"
  [ "$bad" -eq 0 ] || failures=$((failures + bad))
}

failures=0
sweep interposition checker 1 1 tests/fake/fake_client FAKE_EXPECT_GPUS=3 -- --gpus 0,1,2
sweep entries client 6 0 tests/fake/fake_gpu_client MGPU_SPLIT=always -- --gpus 0x4
sweep devices client 13 0 tests/fake/fake_gpu_client MGPU_SPLIT=always -- --gpus 0,1,2,3
sweep mirrors client 11 0 tests/fake/fake_gpu_client MGPU_SPLIT=always MGPU_MIRROR=always \
  MGPU_NCCL=0 -- --gpus 0x4
# Every call of a move (memory/memory_pool.c): the fill's buffer, made on
# the home GPU, spread after four split launches.
sweep moves client move 0 tests/fake/fake_gpu_client MGPU_SPLIT=always FAKE_CLIENT_FILL_REPEAT=8 \
  -- --gpus 0,1,2,3
[ "$failures" -eq 0 ] || fail "$failures injected failures were not passed on cleanly"
pass "every injected failure ended in a correct result or one clean error, with nothing left"
