#!/bin/sh
# Split launches (issue 5): tests/gpu/split_launch.cu's kernels (grids of
# every dimension and odd sizes, atomics, a last-block reduction, module
# variables and constants, dynamic shared memory through cudaLaunchKernelEx,
# streams, events and host functions) give the plain run's output under
# mgpu-run -n 2 (and -n 4 where there are four GPUs) with every launch split
# (MGPU_SPLIT=always) and with the cost model (auto); the report shows the
# kernels split. Device printf of every GPU reaches the output by the next
# synchronisation; a cooperative launch runs whole on the GPU that holds
# most of its data; and an illegal address in the last GPU's slice, or in
# the home GPU's, is returned by the next synchronising call, as without
# mgpu, and the program ends; so do blocking copies. Fork and join with
# sequence flags (the default) and with events (MGPU_FORK_JOIN=events) both
# run the checks. Under auto, a loop of a kernel that splits badly runs
# about as fast as without mgpu.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/gpu/split_launch
"$prog" all > "$work/plain" 2>&1 || { cat "$work/plain"; fail "split_launch without mgpu"; }
expect_in "$work/plain" "split_launch: PASS"
[ "$gpu_count" -ge 2 ] || { echo "one GPU: nothing to split"; exit 0; }

for n in 2 4; do
  [ "$gpu_count" -ge $n ] || continue
  for split in always auto; do
    MGPU_SPLIT=$split "$MGPU_RUN" -n $n --report "$prog" all > "$work/out" 2> "$work/err" || {
      cat "$work/out" "$work/err"; fail "split_launch under -n $n, MGPU_SPLIT=$split"; }
    diff "$work/plain" "$work/out" || { cat "$work/err"; fail "-n $n MGPU_SPLIT=$split differs"; }
    cat "$work/err"
    expect_match "$work/err" "^add\(.*\) +[0-9]+ +262144\*? +256 +x$n"
    if [ $split = always ]; then
      expect_match "$work/err" "^coordinates\(.*\) +[0-9]+ +[0-9x]+\* +[0-9x]+ +x$n"
      expect_match "$work/err" "^last_block_sum\(.*\) +4 +777 +256 +x$n "
      expect_match "$work/err" "^reverse_in_shared\(.*\) +1 +300 +256 +x$n "
      expect_match "$work/err" "^from_table\(.*\) +3 +16384 +256 +x$n "
      # The cooperative kernel runs whole, on the GPU that holds most of
      # its data: GPU 1 under -n 2, the home GPU under -n 4 (a tie).
      if [ $n = 2 ]; then
        expect_match "$work/err" "^reverse_after_grid_sync\(.*\) +1 +64 +256 +no \[5\] @1 "
      else
        expect_match "$work/err" "^reverse_after_grid_sync\(.*\) +1 +64 +256 +no \[5\] +[0-9]"
      fi
    fi
    # Under auto, kernels of a few microseconds stay whole.
    [ $split = always ] || expect_match "$work/err" "^coordinates\(.*\) +[0-9]+ +[0-9x]+\* +[0-9x]+ +no \[2\]"
    pass "split_launch under -n $n with MGPU_SPLIT=$split gives the plain output"
  done
done

# printf: the same lines (in any order) before the program's next line.
"$prog" printf | sort > "$work/plain.printf" || fail "printf without mgpu"
MGPU_SPLIT=always "$MGPU_RUN" -n 2 "$prog" printf > "$work/out.printf" || fail "printf under -n 2"
tail -n 1 "$work/out.printf" | grep -q "^printf: synchronised" || {
  cat "$work/out.printf"; fail "device printf came after the program's next line"; }
sort "$work/out.printf" | diff "$work/plain.printf" - || fail "device printf lines differ"
pass "device printf of both GPUs is flushed at the synchronisation"

"$prog" fault > "$work/plain.fault" 2>&1 || { cat "$work/plain.fault"; fail "fault without mgpu"; }
"$prog" fault-home > "$work/plain.fault-home" 2>&1 || {
  cat "$work/plain.fault-home"; fail "home fault without mgpu"; }
"$prog" fault-copy > "$work/plain.fault-copy" 2>&1 || {
  cat "$work/plain.fault-copy"; fail "blocking copies after a fault without mgpu"; }
for fork_join in flags events; do
  export MGPU_FORK_JOIN=$fork_join
  timeout 120 env MGPU_SPLIT=always "$MGPU_RUN" -n 2 "$prog" fault > "$work/out.fault" 2>&1 || {
    cat "$work/out.fault"; fail "the fault on GPU 1 was not returned ($fork_join)"; }
  grep "^launch:" "$work/out.fault" | diff "$work/plain.fault" - ||
    fail "fault reported differently ($fork_join)"
  pass "an illegal address on GPU 1 is returned by the next synchronisation ($fork_join)"

  # On the home GPU, with one more split launch queued behind it: the
  # other GPU's slice waits for a fork the home GPU will never give; the
  # program must still get its error and end.
  timeout 120 env MGPU_SPLIT=always "$MGPU_RUN" -n 2 "$prog" fault-home > "$work/out.fault" 2>&1 || {
    cat "$work/out.fault"; fail "the home GPU's fault was not returned, or a hang ($fork_join)"; }
  grep "^launch:" "$work/out.fault" | diff "$work/plain.fault-home" - ||
    fail "home fault reported differently ($fork_join)"
  pass "an illegal address on the home GPU is returned and the program ends ($fork_join)"

  # A blocking copy of home-GPU data waits for the slices and must return
  # GPU 1's fault, as the driver does, not the data. (Driver 580 also fails
  # the home GPU's calls once a fault on GPU 1 has been noticed, so this
  # passed before mgpu checked blocking copies too; the check keeps the
  # answer from depending on that.)
  timeout 120 env MGPU_SPLIT=always "$MGPU_RUN" -n 2 "$prog" fault-copy > "$work/out.fault" 2>&1 || {
    cat "$work/out.fault"; fail "a blocking copy after a fault on GPU 1 succeeded ($fork_join)"; }
  grep "^launch:" "$work/out.fault" | diff "$work/plain.fault-copy" - ||
    fail "fault reported differently by blocking copies ($fork_join)"
  pass "blocking copies after an illegal address on GPU 1 return it ($fork_join)"
done
unset MGPU_FORK_JOIN

# Events fork and join the same kernels as the flags do.
MGPU_FORK_JOIN=events MGPU_SPLIT=always "$MGPU_RUN" -n 2 "$prog" all > "$work/out" 2> "$work/err" || {
  cat "$work/out" "$work/err"; fail "split_launch with MGPU_FORK_JOIN=events"; }
diff "$work/plain" "$work/out" || { cat "$work/err"; fail "MGPU_FORK_JOIN=events differs"; }
pass "split_launch with MGPU_FORK_JOIN=events gives the plain output"

# stride_loop BLOCKS [ENV...]: tests/gpu/split_launch's grid-stride loop of
# BLOCKS blocks, plain and under mgpu-run -n 2 (MGPU_SPLIT=auto, with ENV),
# with the same output; sets plain_ms and mgpu_ms (per launch), and leaves
# the report in $work/err.stride.
stride_loop() {
  blocks=$1; shift
  "$prog" grid-stride $blocks > "$work/plain.stride" 2> "$work/plain.stride.err" || {
    cat "$work/plain.stride" "$work/plain.stride.err"; fail "grid-stride $blocks without mgpu"; }
  env MGPU_SPLIT=auto "$@" "$MGPU_RUN" -n 2 --report "$prog" grid-stride $blocks \
    > "$work/out.stride" 2> "$work/err.stride" || {
    cat "$work/out.stride" "$work/err.stride"; fail "grid-stride $blocks ($*)"; }
  diff "$work/plain.stride" "$work/out.stride" || fail "grid-stride $blocks differs ($*)"
  plain_ms=$(sed -n 's/^grid-stride ms per launch: //p' "$work/plain.stride.err")
  mgpu_ms=$(sed -n 's/^grid-stride ms per launch: //p' "$work/err.stride")
}

# stride_within FACTOR SLACK BLOCKS [ENV...]: stride_loop until mgpu_ms is
# at most FACTOR x plain_ms + SLACK, three tries at most, since other work
# may be using the GPUs meanwhile.
stride_within() {
  factor=$1 slack=$2; shift 2
  for try in 1 2 3; do
    stride_loop "$@"
    awk -v p="$plain_ms" -v m="$mgpu_ms" -v f="$factor" -v s="$slack" \
      'BEGIN { exit !(p > 0 && m <= f * p + s) }' && return 0
    echo "grid-stride $1 ($*), try $try: $mgpu_ms ms per launch, plain $plain_ms" >&2
  done
  cat "$work/err.stride"
  return 1
}

# The cost model (auto) must find the faster way before a loop of launches
# is queued, not after: with every buffer on the home GPU
# (MGPU_PLACEMENT=home), a split grid-stride kernel reads and writes half
# its data remotely, so the loop must run about as fast as without mgpu,
# whether the prior guess says whole (2048 blocks of 256 threads) or split
# (8192 blocks).
for blocks in 2048 8192; do
  stride_within 1.3 0.05 $blocks MGPU_PLACEMENT=home ||
    fail "grid-stride with $blocks blocks took $mgpu_ms ms per launch under -n 2 against $plain_ms ms plain: the cost model kept splitting it"
  pass "grid-stride loop of $blocks blocks, data at home, auto: $mgpu_ms ms per launch, plain $plain_ms"
done

# With the default placement the loop is cut by iterations (a grid-stride
# loop, src/ptx/ptx_stride_loop.h): each GPU runs the part of the array it
# holds, so two GPUs must beat one.
for blocks in 2048 8192; do
  stride_within 0.75 0 $blocks ||
    fail "grid-stride with $blocks blocks took $mgpu_ms ms per launch under -n 2 against $plain_ms ms plain: not cut by iterations?"
  expect_match "$work/err.stride" "^add_strided\(.*\) +61 +$blocks +256 +x2"
  pass "grid-stride loop of $blocks blocks cut by iterations: $mgpu_ms ms per launch, plain $plain_ms"
done
