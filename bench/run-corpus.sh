#!/bin/sh
# The corpus (issue 45): programs written the way other people write CUDA,
# at real sizes, each run plainly (no mgpu) and under mgpu-run -n G for
# G = 2, 4, 8 up to GPUS (and GPUS itself), with mgpu's defaults
# (MGPU_SPLIT=auto, MGPU_PLACEMENT=auto; MGPU_MIRROR as the caller sets it),
# ROUNDS times, interleaved. Two times for each: the wall time of the whole
# program (CPU reference, start-up and contexts included), and its GPU time:
# the sum of the report's "GPU ms" column (every launch timed with events on
# the program's stream, a split launch from fork to join) plus the time of
# placement's moves. One GPU's GPU time is taken the same way under
# mgpu-run -n 1 with MGPU_SPLIT=never MGPU_MEMORY=driver (mgpu's timing, the
# program's own modules and allocations). Speedup = one GPU's GPU time / G
# GPUs'; "slower" marks a run more than 5 % slower than one GPU. With more
# than one round, each GPU time is followed by its spread over the rounds
# (smallest–largest), and "slower (within spread)" marks a slower median
# whose fastest round was no slower than one GPU's slowest: noise as far as
# the rounds can tell, not a slowdown shown. Every run's stdout must be the
# plain run's. Each program's row is printed when its rounds are done; the
# last rows give, per configuration, the geometric mean of the speedups and
# how many programs were slower. With REPORTS_DIR set, every run's stderr
# (its report) is kept there as PROGRAM.CONFIG.ROUND.err. With GPU_LISTS
# set (GPU lists separated by spaces, as --gpus takes them:
# "0,1,2,3,0,1,2,3"), the runs are under --gpus LIST for each list instead
# of -n G: where a machine has fewer GPUs than a run should have, its GPUs
# listed again stand for the rest.
#   bench/run-corpus.sh [GPUS=all] [ROUNDS=3] [PROGRAM[:SCALE]...]
# A PROGRAM is a path to an executable, or the name of one in bench/corpus/
# or tests/programs/; by default every program of bench/corpus/ (make
# corpus) and of tests/programs/ (make check), then, where Python has torch
# or cupy, the framework clients (bench/run-frameworks.sh, with their own
# timings; CORPUS_FRAMEWORKS=0 leaves them out). Every program takes an
# optional SCALE, about that many times its GPU work (its file's opening
# comment says how): the test programs run scaled up to at least 20 ms of
# GPU time on one H200 (the SCALE below each), the corpus programs at their
# own sizes (SCALE 1, or CORPUS_SCALE: the "long" corpus, each program's
# loop K times as long, so that the other GPUs' set-up, made off the
# program's way, about 0.1 s a GPU, is small beside it); PROGRAM:SCALE gives
# another. Run from the top build directory. Exits 1 when a run's output
# differs from the plain run's, 2 when a program is missing or a run fails.
set -eu
gpus=${1:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
[ $# -gt 0 ] && shift
rounds=${1:-3}
[ $# -gt 0 ] && shift
corpus_programs="matvec_atax matvec_bicg kmeans black_scholes monte_carlo sgemm_tiled_repeat
  underoccupied nbody_allpairs thrust_sort cub_sort_scan histogram_shared stencil3d_512 lu_shrinking"
test_programs="stencil1d stencil3d gaussian bfs spmv_csr conv2d fdtd2d threadfence_reduction
  atomic_sum histogram_atomicinc pointer_chase coop_grid_sync graph_replay two_threads
  managed_memory transpose scan lookback_scan"
programs=${*:-}
if [ -z "$programs" ]; then
  for p in $corpus_programs; do programs="$programs bench/corpus/$p"; done
  for p in $test_programs; do programs="$programs tests/programs/$p"; done
fi
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
export NCCL_NVLS_ENABLE=0
me=$(basename "$0")
[ "${gpus:-0}" -ge 2 ] || { echo "$me: needs GPUS of 2 or more (nvidia-smi -L lists ${gpus:-none})" >&2; exit 2; }
# path_of PROGRAM[:SCALE]: the executable.
path_of() {
  set -- "${1%%:*}"
  case $1 in
    */*) echo "$1" ;;
    *) if [ -x "bench/corpus/$1" ]; then echo "bench/corpus/$1"; else echo "tests/programs/$1"; fi ;;
  esac
}
# scale_of PROGRAM[:SCALE]: the SCALE it runs at; nothing for a program of
# neither folder without one (it is run without).
scale_of() {
  case $1 in
    *:*) echo "${1##*:}" ;;
    */*) case $(path_of "$1") in
           bench/corpus/*) echo "${CORPUS_SCALE:-1}" ;;
           tests/programs/*) test_scale "$(basename "$1")" ;;
         esac ;;
    *) scale_of "$(path_of "$1")" ;;
  esac
}
# test_scale NAME: a test program's SCALE in the corpus, for at least 20 ms
# of GPU time on one H200 (bench/RESULTS.md, the twenty-second session).
test_scale() {
  case $1 in
    stencil1d) echo 2000 ;;
    stencil3d) echo 500 ;;
    gaussian) echo 100 ;;
    bfs) echo 800 ;;
    spmv_csr) echo 60 ;;
    conv2d) echo 120 ;;
    fdtd2d) echo 100 ;;
    threadfence_reduction) echo 400 ;;
    atomic_sum) echo 3 ;;
    histogram_atomicinc) echo 16 ;;
    pointer_chase) echo 220 ;;
    coop_grid_sync) echo 100 ;;
    graph_replay) echo 56 ;;
    two_threads) echo 170 ;;
    managed_memory) echo 4 ;;
    transpose) echo 100 ;;
    scan) echo 200 ;;
    lookback_scan) echo 120 ;;
    *) echo 1 ;;
  esac
}
case ${CORPUS_SCALE:-1} in
  '' | *[!0-9]* | 0) echo "$me: CORPUS_SCALE must be a whole number from 1, not '${CORPUS_SCALE:-}'" >&2; exit 2 ;;
esac
for p in $programs; do
  case $p in
    *:*) case ${p##*:} in '' | *[!0-9]* | 0)
           echo "$me: $p: the SCALE after ':' must be a whole number from 1" >&2; exit 2 ;; esac ;;
  esac
  [ -x "$(path_of "$p")" ] || {
    echo "$me: $(path_of "$p") is missing; run make check (tests/programs) and make corpus (bench/corpus) first" >&2
    exit 2
  }
done
# A configuration is a GPU count (-n G) or, from GPU_LISTS, a --gpus list.
counts=""
if [ -n "${GPU_LISTS:-}" ]; then
  counts=$GPU_LISTS
else
  g=2
  while [ "$g" -lt "$gpus" ]; do counts="$counts $g"; g=$((g * 2)); done
  counts="$counts $gpus"
fi
# select_gpus CONFIG: mgpu-run's option for it; config_name CONFIG: a file name.
select_gpus() { case $1 in *[!0-9]*) echo "--gpus $1" ;; *) echo "-n $1" ;; esac; }
config_name() { echo "n$1" | tr ',' '_'; }
out=$(mktemp -d)
[ -z "${REPORTS_DIR:-}" ] || mkdir -p "$REPORTS_DIR"
trap 'rm -rf "$out"' EXIT

now_ms() { date +%s%N | awk '{ printf "%.3f\n", $1 / 1e6 }'; }
# gpu_ms REPORT: the kernel table's GPU ms summed, plus placement's move time.
gpu_ms() {
  awk '/^kernel .*GPU ms$/ { table = 1; next }
       table && /^(  |modules|memory|\.\.\.)/ { table = 0 }
       table && $NF ~ /^[0-9.]+$/ { sum += $NF }
       /placement after the kernels/ { if (match($0, /, [0-9.]+ ms\)/)) sum += substr($0, RSTART + 2, RLENGTH - 6) }
       END { printf "%.3f\n", sum }' "$1"
}
# range_of FILE: " (min–max)" with more than one round, else nothing.
range_of() { [ "$rounds" -gt 1 ] && echo " ($(spread "$1"))" || true; }
# run NAME PROGRAM COMMAND...: wall time to NAME.wall, stdout compared with the plain run's.
run() {
  name=$1 p=$2
  shift 2
  b=$(basename "${p%%:*}")
  t0=$(now_ms)
  # shellcheck disable=SC2046
  "$@" "$(path_of "$p")" $(scale_of "$p") > "$out/$b.$name.out" 2> "$out/$b.$name.err" || {
    cat "$out/$b.$name.out" "$out/$b.$name.err" >&2; echo "$me: $p ($name) failed" >&2; exit 2; }
  t1=$(now_ms)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >> "$out/$b.$name.wall"
  [ "$name" = plain ] || gpu_ms "$out/$b.$name.err" >> "$out/$b.$name.gpu"
  [ -z "${REPORTS_DIR:-}" ] || cp "$out/$b.$name.err" "$REPORTS_DIR/$b.$name.$r.err"
  [ "$name" = plain ] || cmp -s "$out/$b.plain.out" "$out/$b.$name.out" || echo "$b $name" >> "$out/different"
}
echo "$(echo $programs | wc -w) programs on 1 to $gpus GPUs (MGPU_MIRROR=${MGPU_MIRROR:-auto}); median of $rounds interleaved rounds; CORPUS_SCALE=${CORPUS_SCALE:-1}"
echo "GPU ms: the report's kernel times plus placement's moves; wall ms: the whole program"
[ "$rounds" -gt 1 ] && echo "in parentheses: the smallest and largest GPU ms of the rounds"
echo
header="| program | SCALE | plain wall ms | 1 GPU: GPU ms |"
rule="| --- | --- | --- | --- |"
for g in $counts; do
  header="$header $(select_gpus "$g") GPU ms | speedup | wall ms |"
  rule="$rule --- | --- | --- |"
done
echo "$header output |"
echo "$rule --- |"
# One program at a time, its configurations interleaved in each round, its
# row printed as soon as it is done.
status=0
for p in $programs; do
  b=$(basename "${p%%:*}")
  for r in $(seq 1 "$rounds"); do
    run plain "$p"
    run one "$p" env MGPU_SPLIT=never MGPU_MEMORY=driver "$MGPU_RUN" -n 1 --report
    for g in $counts; do
      # select_gpus gives two words, split on purpose.
      # shellcheck disable=SC2046
      run "$(config_name "$g")" "$p" "$MGPU_RUN" $(select_gpus "$g") --report
    done
  done
  one=$(median "$out/$b.one.gpu")
  line="| $b | $(scale_of "$p" | grep . || echo -) | $(median "$out/$b.plain.wall") | $one$(range_of "$out/$b.one.gpu") |"
  for g in $counts; do
    c=$(config_name "$g")
    ms=$(median "$out/$b.$c.gpu")
    awk -v a="$ms" -v b="$one" 'BEGIN { if (a > 0 && b > 0) print b / a }' >> "$out/speedups.$c"
    speedup=$(awk -v a="$ms" -v b="$one" 'BEGIN { if (a > 0) printf "%.2f×", b / a; else print "n/a" }')
    slower=$(awk -v a="$ms" -v b="$one" 'BEGIN { print (a > 1.05 * b) ? " slower" : "" }')
    # With rounds, a slower median whose fastest round was no slower than
    # one GPU's slowest is within the rounds' spread: not shown to be slower.
    if [ -n "$slower" ] && [ "$rounds" -gt 1 ]; then
      fastest=$(sort -g "$out/$b.$c.gpu" | head -n 1)
      slowest_one=$(sort -g "$out/$b.one.gpu" | tail -n 1)
      awk -v a="$fastest" -v b="$slowest_one" 'BEGIN { exit !(a <= b) }' && slower=" slower (within spread)"
    fi
    [ "$slower" = " slower" ] && echo "$b" >> "$out/slower.$c"
    line="$line $ms$(range_of "$out/$b.$c.gpu") | $speedup$slower | $(median "$out/$b.$c.wall") |"
  done
  if grep -q "^$b " "$out/different" 2> /dev/null; then
    line="$line DIFFERENT |"
    status=1
  else
    line="$line same |"
  fi
  echo "$line"
done
echo
for g in $counts; do
  c=$(config_name "$g")
  [ -e "$out/speedups.$c" ] || continue
  awk -v what="$(select_gpus "$g")" -v slower="$( [ -e "$out/slower.$c" ] && wc -l < "$out/slower.$c" || echo 0)" \
    '$1 > 0 { s += log($1); n++ } END { if (n) printf "%s: geometric mean of the speedups %.2f× over %d programs; %d more than 5 %% slower than one GPU\n", what, exp(s / n), n, slower }' \
    "$out/speedups.$c"
done
# The framework clients (issue 43's PyTorch and CuPy clients, their own
# timings: bench/run-frameworks.sh) after the default programs, where
# Python has torch or cupy; CORPUS_FRAMEWORKS=0 leaves them out.
if [ -z "$*" ] && [ "${CORPUS_FRAMEWORKS:-1}" != 0 ] && [ -z "${GPU_LISTS:-}" ] &&
  { "${PYTHON:-python3}" -c "import torch" > /dev/null 2>&1 ||
    "${PYTHON:-python3}" -c "import cupy" > /dev/null 2>&1; }; then
  echo
  echo "The framework clients (bench/run-frameworks.sh $rounds: GPU ms of each call, CUDA events in the client):"
  echo
  sh "$(dirname "$0")/run-frameworks.sh" "$rounds" 2> "$out/frameworks.err" || {
    cat "$out/frameworks.err" >&2; echo "$me: the framework clients failed" >&2; status=2; }
fi
exit $status
