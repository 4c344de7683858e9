#!/bin/sh
# A program that ends, or forks, with GPU work in flight (tests/gpu/exit_paths.c,
# one mode per way) under mgpu-run --gpus 0x4 with every launch split:
# exit(0) with launches and copies queued, exit(3) in a cuLaunchHostFunc or
# cuStreamAddCallback host function or in a graph's host node, the calls
# made while a host function holds a stream, abort(), a forked child that
# calls CUDA (errors, quickly) or just exits, cuModuleUnload while the
# module's slices run. Each must end within 60 s with the status the
# program chose, print no "mgpu: error" and no crash, print the report
# where --report asks for it (once: never from a forked child), and leave no memory on the GPU: its pid
# (and its child's) gone from nvidia-smi's processes and the memory in use
# back near where it was. Each mode also runs without mgpu first, so that a
# failure the driver alone shows is told apart from mgpu's (reported as skip).
# One "ok:", "skip:" or "FAIL:" line per case, with its time.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/gpu/exit_paths
# abort() would otherwise dump the core of a process that maps GPU memory.
ulimit -c 0
failures=0

if command -v nvidia-smi > /dev/null 2>&1; then
  smi=yes
else
  smi=no
  echo "no nvidia-smi: the GPU memory is not checked after each case"
fi

# used_mib: memory in use on all the machine's GPUs, in MiB.
used_mib() {
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2> /dev/null |
    awk '{ s += $1 } END { print s + 0 }'
}
gpu_pids() {
  nvidia-smi --query-compute-apps=pid --format=csv,noheader 2> /dev/null | tr -d ' '
}
[ $smi = yes ] && baseline=$(used_mib)

# released PID...: within 15 s none of the PIDs holds GPU memory and the
# memory in use is back within 512 MiB of the baseline (the cases allocate
# over 384 MiB and the driver's context takes more). Says why not on stdout.
released() {
  [ $smi = yes ] || return 0
  i=0
  while [ $i -lt 30 ]; do
    left=""
    for pid in "$@"; do
      gpu_pids | grep -qx "$pid" && left="$left $pid"
    done
    used=$(used_mib)
    [ -z "$left" ] && [ "$used" -le $((baseline + 512)) ] && return 0
    sleep 0.5
    i=$((i + 1))
  done
  echo "after 15 s, GPU memory still held: pids${left:- none} listed, $used MiB in use against $baseline MiB before the test"
  return 1
}

# attempt TAG STATUS MODE COMMAND...: runs COMMAND tests/gpu/exit_paths MODE
# under `timeout 60` and sets `problems` to what went wrong (empty: none)
# and `took` to its seconds.
attempt() {
  tag=$1 want=$2 mode=$3; shift 3
  out="$work/$tag.out" err="$work/$tag.err"
  start=$(date +%s.%N)
  timeout ${limit:-60} "$@" $prog $mode > "$out" 2> "$err"
  got=$?
  took=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
  problems=""
  if [ $got -eq 124 ]; then
    problems="hung: killed after ${limit:-60} s;"
  elif [ $got -ne "$want" ]; then
    problems="exit status $got, not $want;"
  fi
  grep -q "FAIL" "$out" && problems="$problems the program says FAIL;"
  crash=$(grep -E -m 1 "mgpu: error|AddressSanitizer|runtime error:|Segmentation fault|double free|corrupted|stack smashing|dumped core" "$err")
  [ -n "$crash" ] && problems="$problems stderr: '$crash';"
  pids=$(sed -n 's/^exit_paths: pid \([0-9]*\),.*/\1/p; s/^exit_paths: child pid \([0-9]*\)$/\1/p' "$out")
  why=$(released $pids) || problems="$problems $why;"
}

# exit_case NAME STATUS MODE REPORT [callback]: the mode without mgpu, then
# under mgpu-run --gpus 0x4 with MGPU_SPLIT=always; REPORT (yes, no) says
# whether the run also has --report and must print the report once. With
# `callback` the exit happens in a host function, and mgpu must have known
# it (-v says so): the driver forbids CUDA calls on its callback thread.
exit_case() {
  name=$1 want=$2 mode=$3 report=$4 callback=${5:-}
  attempt "$mode-plain" "$want" "$mode"
  plain_problems=$problems plain_took=$took
  report_opt=""
  [ "$report" = yes ] && report_opt=--report
  [ -n "$callback" ] && report_opt="$report_opt -v"
  attempt "$mode-mgpu" "$want" "$mode" env MGPU_SPLIT=always "$MGPU_RUN" --gpus 0x4 $report_opt
  if [ -n "$callback" ] && ! grep -q "exit in a host callback" "$err"; then
    problems="$problems mgpu did not know the exit ran in a host function (no 'exit in a host callback' under -v), so its exit work called the driver on the driver's callback thread;"
  fi
  if [ "$report" = yes ]; then
    reports=$(grep -c -E '^kernel +launches' "$err")
    [ "$reports" -eq 1 ] || problems="$problems the report printed $reports times, not once;"
    grep -q -E '^mgpu_test_fill +[0-9]+ .* x4' "$err" ||
      problems="$problems the report shows no launch of mgpu_test_fill split 4 ways;"
  fi
  if [ -z "$problems" ]; then
    echo "ok: $name: exit status $want in ${took} s under mgpu (${plain_took} s without)"
    [ -n "$plain_problems" ] && echo "  (without mgpu: $plain_problems)"
  elif [ -n "$plain_problems" ]; then
    echo "skip: $name: fails without mgpu too, so the driver's doing: $plain_problems (under mgpu, in ${took} s: $problems)"
    sed 's/^/  plain stdout: /' "$work/$mode-plain.out"
    sed 's/^/  plain stderr: /' "$work/$mode-plain.err" | head -20
  else
    echo "FAIL: $name, in ${took} s under mgpu: $problems"
    sed 's/^/  stdout: /' "$work/$mode-mgpu.out"
    sed 's/^/  stderr: /' "$work/$mode-mgpu.err" | head -60
    failures=$((failures + 1))
  fi
}

exit_case "exit(0) with split launches and async copies queued" 0 outstanding yes
# The process ends in the host function within seconds, or never: the
# program's thread queues the module's first launches while its stream is
# held in a host function, which mgpu's module loads used to wait for.
limit=20
exit_case "calls the driver takes without waiting for a stream held in a host function return" 0 held-stream no
exit_case "exit(3) in a cuLaunchHostFunc host function, work queued around it" 3 callback-exit yes callback
exit_case "exit(3) in a cuStreamAddCallback callback, work queued around it" 3 stream-callback-exit yes callback
exit_case "exit(3) in a graph host node (cuGraphAddHostNode, cuGraphExecHostNodeSetParams)" 3 graph-host-node-exit yes callback
exit_case "exit(3) in a graph host node (cuGraphAddNode, cuGraphExecNodeSetParams)" 3 graph-node-exit yes callback
limit=60
exit_case "abort() with work queued" 134 abort no
exit_case "a forked child calls cuInit, cuMemAlloc, cuLaunchKernel: errors at once; the parent goes on" 0 fork-child-cuda yes
exit_case "a forked child exits with exit(0) (atexit handlers run in it); the parent goes on" 0 fork-child-exit yes
exit_case "cuModuleUnload while split launches of the module run; loaded again, right results" 0 unload-running yes

[ $failures -eq 0 ] || fail "$failures exit path(s) failed"
pass "every exit path ends as the program chose, without a hang or an mgpu error, and frees the GPU's memory"
