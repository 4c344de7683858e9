#!/bin/sh
# Split launches (issue 5): tests/gpu/split_launch.cu's kernels (grids of
# every dimension and odd sizes, atomics, a last-block reduction, module
# variables and constants, dynamic shared memory through cudaLaunchKernelEx,
# streams, events and host functions) give the plain run's output under
# mgpu-run with every --gpus list of $entry_sets (GPU 0 two, three and eight
# times; distinct GPUs where the machine has them), with every launch split
# (MGPU_SPLIT=always) and with the cost model (auto); the report shows the
# kernels split. Device printf of every slice reaches the output by the next
# synchronisation; a cooperative launch runs whole on the GPU that holds
# most of its data; and an illegal address in the last GPU's slice, in the
# fourth GPU's (of eight), or in the home GPU's, is returned by the next
# synchronising call, as without mgpu, and the program ends; so do blocking
# copies. Fork and join with sequence flags (the default) and with events
# (MGPU_FORK_JOIN=events) both run the checks. A grid-stride loop cut by
# iterations gives the plain output on every list; under auto, a loop of a
# kernel that splits badly runs about as fast as without mgpu; on distinct
# GPUs, one cut by iterations beats one GPU. Graphs captured in global mode
# while split slices run on another stream capture and run right.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/gpu/split_launch
"$prog" all > "$work/plain" 2>&1 || { cat "$work/plain"; fail "split_launch without mgpu"; }
expect_in "$work/plain" "split_launch: PASS"
"$prog" capture > "$work/plain.capture" 2>&1 || { cat "$work/plain.capture"; fail "capture without mgpu"; }

for set in $entry_sets; do
  n=$(entries_in "$set")
  for split in always auto; do
    # Under always, every buffer is spread from the start (MGPU_SPREAD_MIN=1),
    # so that the cooperative kernel's data lie mostly away from the home GPU.
    spread_min=64M
    [ $split = always ] && spread_min=1
    MGPU_SPREAD_MIN=$spread_min MGPU_SPLIT=$split "$MGPU_RUN" --gpus "$set" --report "$prog" all > "$work/out" 2> "$work/err" || {
      cat "$work/out" "$work/err"; fail "split_launch under --gpus $set, MGPU_SPLIT=$split"; }
    diff "$work/plain" "$work/out" || { cat "$work/err"; fail "--gpus $set MGPU_SPLIT=$split differs"; }
    cat "$work/err"
    if [ $split = always ] || ! repeats_a_gpu "$set"; then
      expect_match "$work/err" "^add\(.*\) +[0-9]+ +262144\*? +256 +x$n"
    fi
    if [ $split = always ]; then
      expect_match "$work/err" "^coordinates\(.*\) +[0-9]+ +[0-9x]+\* +[0-9x]+ +x$n"
      expect_match "$work/err" "^last_block_sum\(.*\) +4 +777 +256 +x$n "
      expect_match "$work/err" "^reverse_in_shared\(.*\) +1 +300 +256 +x$n "
      expect_match "$work/err" "^from_table\(.*\) +3 +16384 +256 +x$n "
      # The cooperative kernel runs whole, on the GPU that holds most of
      # its data: GPU 1 with two GPUs; with more, wherever the pages of its
      # buffer landed.
      if [ $n = 2 ]; then
        expect_match "$work/err" "^reverse_after_grid_sync\(.*\) +1 +64 +256 +no \[5\] @1 "
      else
        expect_match "$work/err" "^reverse_after_grid_sync\(.*\) +1 +64 +256 +no \[5\]( @[0-9*]+)? +[0-9]"
      fi
    fi
    # Under auto, kernels of a few microseconds stay whole.
    [ $split = always ] || expect_match "$work/err" "^coordinates\(.*\) +[0-9]+ +[0-9x]+\* +[0-9x]+ +no \[(2|2,10|10)\]"
    pass "split_launch under --gpus $set ($n slices) with MGPU_SPLIT=$split gives the plain output"
  done

  # printf: the same lines (in any order) before the program's next line.
  "$prog" printf | sort > "$work/plain.printf" || fail "printf without mgpu"
  MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" "$prog" printf > "$work/out.printf" ||
    fail "printf under --gpus $set"
  tail -n 1 "$work/out.printf" | grep -q "^printf: synchronised" || {
    cat "$work/out.printf"; fail "device printf came after the program's next line (--gpus $set)"; }
  sort "$work/out.printf" | diff "$work/plain.printf" - || fail "device printf lines differ (--gpus $set)"
  pass "device printf of all $n slices is flushed at the synchronisation (--gpus $set)"

  # A graph captured in global mode while split slices run on another
  # stream: mgpu's threads must not break the capture.
  MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" "$prog" capture > "$work/out.capture" 2>&1 || {
    cat "$work/out.capture"; fail "a global-mode capture during split slices failed (--gpus $set)"; }
  expect_in "$work/out.capture" "capture: PASS"
  pass "ten graphs captured in global mode while split slices ran (--gpus $set)"
done

# The trace: each GPU of the run has its own track of slices, named by the
# device it stands on where GPUs share one.
MGPU_SPLIT=always "$MGPU_RUN" --gpus 0x3 --trace "$work/trace.json" "$prog" all > "$work/out" 2> "$work/err" || {
  cat "$work/out" "$work/err"; fail "split_launch with a trace"; }
diff "$work/plain" "$work/out" || fail "split_launch with a trace differs"
for g in 0 1 2; do
  expect_in "$work/trace.json" "\"name\":\"GPU $g (device 0)\""
  tid=$((1000 + g))
  [ "$(grep -c "\"cat\":\"slice\",\"ph\":\"X\",\"pid\":0,\"tid\":$tid," "$work/trace.json")" -ge 10 ] || {
    head -c 4000 "$work/trace.json"; fail "the trace has fewer than 10 slices on GPU $g's track"; }
done
pass "the trace shows each of the 3 GPUs on device 0 on its own track of slices"

"$prog" fault > "$work/plain.fault" 2>&1 || { cat "$work/plain.fault"; fail "fault without mgpu"; }
"$prog" fault-slice 3 8 > "$work/plain.fault-slice" 2>&1 || {
  cat "$work/plain.fault-slice"; fail "fault in a middle slice without mgpu"; }
"$prog" fault-home > "$work/plain.fault-home" 2>&1 || {
  cat "$work/plain.fault-home"; fail "home fault without mgpu"; }
"$prog" fault-copy > "$work/plain.fault-copy" 2>&1 || {
  cat "$work/plain.fault-copy"; fail "blocking copies after a fault without mgpu"; }
for set in $entry_sets; do
  for fork_join in flags events; do
    export MGPU_FORK_JOIN=$fork_join
    timeout 120 env MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" "$prog" fault > "$work/out.fault" 2>&1 || {
      cat "$work/out.fault"; fail "the fault in the last slice was not returned (--gpus $set, $fork_join)"; }
    grep "^launch:" "$work/out.fault" | diff "$work/plain.fault" - ||
      fail "fault reported differently (--gpus $set, $fork_join)"
    pass "an illegal address in the last GPU's slice is returned by the next synchronisation (--gpus $set, $fork_join)"

    # The middle of the fourth eighth of the grid: GPU 3's slice of eight.
    if [ "$(entries_in "$set")" -eq 8 ]; then
      timeout 120 env MGPU_SPLIT=always MGPU_VERBOSE=2 "$MGPU_RUN" --gpus "$set" "$prog" fault-slice 3 8 \
        > "$work/out.fault" 2>&1 || {
        cat "$work/out.fault"; fail "the fault in GPU 3's slice was not returned (--gpus $set, $fork_join)"; }
      grep "^launch:" "$work/out.fault" | diff "$work/plain.fault-slice" - ||
        fail "fault in GPU 3's slice reported differently (--gpus $set, $fork_join)"
      expect_match "$work/out.fault" "GPU 3: 24576\.\.32767"
      pass "an illegal address in GPU 3's slice of 8 is returned by the next synchronisation (--gpus $set, $fork_join)"
    fi

    # On the home GPU, with one more split launch queued behind it: the
    # other GPUs' slices wait for a fork the home GPU will never give; the
    # program must still get its error and end.
    timeout 120 env MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" "$prog" fault-home > "$work/out.fault" 2>&1 || {
      cat "$work/out.fault"; fail "the home GPU's fault was not returned, or a hang (--gpus $set, $fork_join)"; }
    grep "^launch:" "$work/out.fault" | diff "$work/plain.fault-home" - ||
      fail "home fault reported differently (--gpus $set, $fork_join)"
    pass "an illegal address on the home GPU is returned and the program ends (--gpus $set, $fork_join)"

    # A blocking copy of home-GPU data waits for the slices and must return
    # the last GPU's fault, as the driver does, not the data. (Driver 580
    # also fails the home GPU's calls once a fault on GPU 1 has been
    # noticed, so this passed before mgpu checked blocking copies too; the
    # check keeps the answer from depending on that.)
    timeout 120 env MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" "$prog" fault-copy > "$work/out.fault" 2>&1 || {
      cat "$work/out.fault"; fail "a blocking copy after a fault succeeded (--gpus $set, $fork_join)"; }
    grep "^launch:" "$work/out.fault" | diff "$work/plain.fault-copy" - ||
      fail "fault reported differently by blocking copies (--gpus $set, $fork_join)"
    pass "blocking copies after an illegal address in the last GPU's slice return it (--gpus $set, $fork_join)"
  done
done
unset MGPU_FORK_JOIN

# Events fork and join the same kernels as the flags do.
for set in $entry_sets; do
  MGPU_FORK_JOIN=events MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" "$prog" all > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err"; fail "split_launch with MGPU_FORK_JOIN=events (--gpus $set)"; }
  diff "$work/plain" "$work/out" || { cat "$work/err"; fail "MGPU_FORK_JOIN=events differs (--gpus $set)"; }
  pass "split_launch with MGPU_FORK_JOIN=events gives the plain output (--gpus $set)"
done

# stride_loop SET BLOCKS [ENV...]: tests/gpu/split_launch's grid-stride loop
# of BLOCKS blocks, plain and under mgpu-run --gpus SET (MGPU_SPLIT=auto
# unless ENV says otherwise), with the same output; sets plain_ms and
# mgpu_ms (per launch), and leaves the report in $work/err.stride.
stride_loop() {
  set_=$1 blocks=$2; shift 2
  "$prog" grid-stride $blocks > "$work/plain.stride" 2> "$work/plain.stride.err" || {
    cat "$work/plain.stride" "$work/plain.stride.err"; fail "grid-stride $blocks without mgpu"; }
  env MGPU_SPLIT=auto "$@" "$MGPU_RUN" --gpus "$set_" --report "$prog" grid-stride $blocks \
    > "$work/out.stride" 2> "$work/err.stride" || {
    cat "$work/out.stride" "$work/err.stride"; fail "grid-stride $blocks (--gpus $set_, $*)"; }
  diff "$work/plain.stride" "$work/out.stride" || fail "grid-stride $blocks differs (--gpus $set_, $*)"
  plain_ms=$(sed -n 's/^grid-stride ms per launch: //p' "$work/plain.stride.err")
  mgpu_ms=$(sed -n 's/^grid-stride ms per launch: //p' "$work/err.stride")
}

# stride_within FACTOR SLACK SET BLOCKS [ENV...]: stride_loop until mgpu_ms
# is at most FACTOR x plain_ms + SLACK, three tries at most, since other
# work may be using the GPUs meanwhile.
stride_within() {
  factor=$1 slack=$2; shift 2
  for try in 1 2 3; do
    stride_loop "$@"
    awk -v p="$plain_ms" -v m="$mgpu_ms" -v f="$factor" -v s="$slack" \
      'BEGIN { exit !(p > 0 && m <= f * p + s) }' && return 0
    echo "grid-stride $2 (--gpus $1, $*), try $try: $mgpu_ms ms per launch, plain $plain_ms" >&2
  done
  cat "$work/err.stride"
  return 1
}

# Cut by iterations (a grid-stride loop, ptx/ptx_stride_loop.h), every
# list gives the plain output with every launch split.
for set in $entry_sets; do
  n=$(entries_in "$set")
  stride_loop "$set" 2048 MGPU_SPLIT=always
  expect_match "$work/err.stride" "^add_strided\(.*\) +61 +2048 +256 +x$n"
  pass "grid-stride loop of 2048 blocks cut into $n slices by iterations (--gpus $set): the plain output"
done

# The cost model (auto) must find the faster way before a loop of launches
# is queued, not after: with every buffer on the home GPU
# (MGPU_PLACEMENT=home), a split grid-stride kernel reads and writes half
# its data remotely (on GPUs that share a device, it only adds the split's
# cost), so the loop must run about as fast as without mgpu, whether the
# prior guess says whole (2048 blocks of 256 threads) or split (65536
# blocks: 2^24 threads).
first_set=${entry_sets%% *}
for blocks in 2048 65536; do
  stride_within 1.3 0.05 "$first_set" $blocks MGPU_PLACEMENT=home ||
    fail "grid-stride with $blocks blocks took $mgpu_ms ms per launch under --gpus $first_set against $plain_ms ms plain: the cost model kept splitting it"
  pass "grid-stride loop of $blocks blocks, data at home, auto (--gpus $first_set): $mgpu_ms ms per launch, plain $plain_ms"
done

# The split's estimate (sched/split_estimate.h): with every buffer on the
# home GPU, the other slices would read their shares over the link (between
# entries of one device, as modelled: at a twelfth of local bandwidth), so a
# kernel whose prior says whole (2048 blocks) is never even tried split.
stride_loop "$first_set" 2048 MGPU_PLACEMENT=home MGPU_VERBOSE=1
expect_match "$work/err.stride" "^add_strided\(.*\) +61 +2048 +256 +no \[2\] "
expect_match "$work/err.stride" "split: a grid of 2048 x 1 x 1 blocks of 256 x 1 x 1 stays whole: split, its slices would read"
pass "grid-stride loop of 2048 blocks, data at home, auto (--gpus $first_set): never tried split, as the estimate says"

# With the buffers spread when made (MGPU_SPREAD_MIN=64M: the placement
# and split prior before Principle 6) the loop is cut by iterations: each
# GPU runs the part of the array it holds, so two distinct GPUs must beat
# one. GPUs
# that share a device cannot, and are not timed. At 2048 blocks (half of an
# H200's block slots on each of two), GPUs 0 and 1 of three 4 x H200
# machines took 0.325, 0.336 and 0.356 ms against 0.448 plain; a split
# loop that is not cut has each GPU's blocks read and write all over the
# array, half of it across the link, and is no faster than plain: 0.85
# tells the two apart.
distinct=$(first_distinct_set)
if [ -z "$distinct" ]; then
  echo "skipped: the speed of a loop cut by iterations needs two distinct GPUs (this machine has $gpu_count)"
  exit 0
fi
n=$(entries_in "$distinct")
for blocks in 2048 65536; do
  stride_within 0.85 0 "$distinct" $blocks MGPU_SPREAD_MIN=64M ||
    fail "grid-stride with $blocks blocks took $mgpu_ms ms per launch under --gpus $distinct against $plain_ms ms plain: not cut by iterations?"
  expect_match "$work/err.stride" "^add_strided\(.*\) +61 +$blocks +256 +x$n"
  # Mirrors (on by default) are not tried: each GPU's iterations read its
  # own data (mirror/mirror_policy.h), and a try made NCCL's communicator
  # inside the timed loop (7.5 ms per launch on 2 x H200).
  expect_in "$work/err.stride" "mirrors (auto): none made, no kernel shape tried with them"
  pass "grid-stride loop of $blocks blocks cut by iterations (--gpus $distinct): $mgpu_ms ms per launch, plain $plain_ms; no mirror tried"
done

# Under the defaults (every buffer on the home GPU until a spread pays, the
# prior whole) the 61 launches may or may not earn the spread, but they are
# never slower than plain by more than the split tries' cost.
for blocks in 2048 65536; do
  stride_within 1.05 0.02 "$distinct" $blocks ||
    fail "grid-stride with $blocks blocks under the defaults took $mgpu_ms ms per launch under --gpus $distinct against $plain_ms ms plain"
  pass "grid-stride loop of $blocks blocks under the defaults (--gpus $distinct): $mgpu_ms ms per launch, plain $plain_ms"
done
