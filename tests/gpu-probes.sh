#!/bin/sh
# Injected probes on the GPU, with -n 1 and with GPU 0 four times (every
# launch split, MGPU_SPLIT=always):
# - the program's output is the plain run's with all three built-in tools;
# - thread-count: each kernel's blocks, summed over the GPUs, are its
#   launches times its grid; under 0x4 each GPU ran a quarter of each grid;
#   its threads are the blocks times the block size the host recorded;
# - launch-latency: every launch of the kernel has a first block start and
#   a last block end on each GPU that ran a slice, after the host's launch
#   call (within the clock's error) and in order; the table has a row per GPU;
# - block-time: the histograms count the same blocks as thread-count;
# - memory-locality: one access in 16 of each thread counted, each warp
#   at its own phase, in the sampled blocks (one in 8), to the parameter it
#   reaches; under 0x4 nearly all local
#   with the default placement and mostly remote with interleave; -n 1
#   (no pool) all outside the pool;
# - on 65536 blocks the timing tools run in the sampled blocks exactly;
# - in saxpy's grid-stride loop cut by iterations, a probe's register named
#   as the loop's step is the probe's own;
# - the example probes run, a ring drops what does not fit and counts it;
#   address-watch records each write into its range once, by the block
#   and GPU that wrote it;
# - a probe whose glob matches nothing gets the one-line error at exit.
. "$(dirname "$0")/common.sh"
require_gpu
failures=0
prog=examples/vector_add
size=1048576 # 4096 blocks of 256 threads
grid=4096
args="--quick --size $size"

"$prog" $args > "$work/plain.out" 2> "$work/plain.err" || { cat "$work/plain.err"; fail "plain run"; }
grep -v '^time: ' "$work/plain.out" > "$work/plain.result"

# json_field LINE FIELD: a number field of one JSON line.
json_field() { echo "$1" | sed -n "s/.*\"$2\":\([0-9-]*\).*/\1/p"; }
# map_entries FILE MAP GPU: "index value" per line for one map of one GPU.
map_entries() {
  grep "\"map\":\"$2\",\"gpu\":$3," "$1" | sed 's/.*"entries":\[//; s/\]\]}$/]/; s/\],\[/\n/g' |
    tr -d '[]}' | tr ',' ' ' | grep -v '^$'
}

for set in 1 0x4; do
  if [ "$set" = 1 ]; then gpus="-n 1"; n=1; else gpus="--gpus $set"; n=4; fi
  out="$work/$set.jsonl"
  MGPU_SPLIT=always MGPU_PROBE_OUT="$out" "$MGPU_RUN" $gpus --trace "$work/$set.json" --probe thread-count \
    --probe launch-latency --probe block-time "$prog" $args > "$work/$set.out" 2> "$work/$set.err" ||
    { cat "$work/$set.err"; fail "$gpus with the three tools exited $?"; }
  grep -v '^time: ' "$work/$set.out" > "$work/$set.result"
  diff "$work/plain.result" "$work/$set.result" > /dev/null ||
    { cat "$work/$set.err"; fail "$gpus with probes: the output differs from the plain run"; }
  expect_in "$work/$set.err" "thread-count: blocks and threads each GPU ran"
  expect_in "$work/$set.err" "launch-latency: per kernel and GPU"
  expect_in "$work/$set.err" "block-time: per kernel and GPU"
  [ -s "$out" ] || fail "$gpus: no MGPU_PROBE_OUT"

  kernel_line=$(grep '"type":"kernel"' "$out" | grep 'vector_add' | head -n 1)
  kid=$(json_field "$kernel_line" id)
  [ -n "$kid" ] || { cat "$out" | head; fail "$gpus: vector_add is not among the probed kernels"; }
  launches=$(grep '"type":"launch"' "$out" | grep -c "\"kernel\":$kid,")
  [ "$launches" -gt 0 ] || fail "$gpus: no launch of vector_add numbered"

  # thread-count: per kernel and multiprocessor, [kernel * 256 + sm].
  total=0
  g=0
  while [ $g -lt $n ]; do
    blocks=$(map_entries "$out" tc_blocks $g | awk -v k="$kid" 'int($1 / 256) == k { s += $2 } END { print s + 0 }')
    [ "$blocks" -eq $((launches * grid / n)) ] ||
      fail "$gpus: GPU $g ran $blocks blocks of vector_add, not $launches x $grid / $n"
    sms=$(map_entries "$out" tc_blocks $g | awk -v k="$kid" 'int($1 / 256) == k && $2 > 0 { n++ } END { print n + 0 }')
    [ "$sms" -gt 1 ] || fail "$gpus: GPU $g ran vector_add's blocks on $sms multiprocessors"
    total=$((total + blocks))
    g=$((g + 1))
  done
  # Threads: the blocks counted times the launches' block size, which the
  # host recorded (every launch of vector_add has blocks of 256).
  echo "$kernel_line" | grep -q '"block_threads":\[256,256\]' || fail "$gpus: vector_add's block size: $kernel_line"
  grep -Eq "^ +all +$total +$((total * 256))\$" "$work/$set.err" ||
    { cat "$work/$set.err"; fail "$gpus: thread-count's table does not give $total blocks, $((total * 256)) threads"; }
  pass "$gpus: thread-count: $total blocks of vector_add = $launches launches x $grid, $((total / n)) per GPU, x 256 threads"

  # launch-latency: per launch and GPU (its "slice" lines), host call <=
  # first start <= last end.
  error=$(grep '"type":"clock"' "$out" | sed -n 's/.*"error_ns":\([0-9]*\).*/\1/p' | sort -n | tail -n 1)
  grep '"type":"launch"' "$out" | grep "\"kernel\":$kid," |
    sed 's/.*"sequence":\([0-9]*\).*"host_ns":\([0-9]*\).*/\1 \2/' > "$work/host"
  g=0
  while [ $g -lt $n ]; do
    grep "\"type\":\"slice\",\"tool\":\"launch-latency\",\"gpu\":$g," "$out" |
      sed 's/.*"sequence":\([0-9]*\).*"first_ns":\([0-9]*\),"last_ns":\([0-9]*\).*/\1 \2 \3/' > "$work/slices.$g"
    awk -v err="$error" -v g=$g -v set="$gpus" '
      FILENAME == ARGV[1] { host[$1] = $2; next }
      { first[$1] = $2; last[$1] = $3 }
      END {
        for (s in host) {
          n++
          if (!(s in first)) { printf "%s: launch %s has no slice on GPU %d\n", set, s, g; bad = 1; continue }
          if (first[s] + err + 1000 < host[s]) { printf "%s: launch %s starts on GPU %d before its call\n", set, s, g; bad = 1 }
          if (last[s] < first[s]) { printf "%s: launch %s ends on GPU %d before it starts\n", set, s, g; bad = 1 }
          if (first[s] - host[s] > 1e9) { printf "%s: launch %s took over 1 s to start on GPU %d\n", set, s, g; bad = 1 }
        }
        exit bad || n == 0
      }' "$work/host" "$work/slices.$g" ||
      fail "$gpus: launch-latency's times are not plausible"
    g=$((g + 1))
  done
  rows=$(awk '/^launch-latency:/ { on = 1; next } /^$/ { on = 0 } on && /vector_add/' "$work/$set.err" | wc -l)
  [ "$rows" -eq $n ] || { cat "$work/$set.err"; fail "$gpus: launch-latency has $rows rows for vector_add, not $n"; }
  pass "$gpus: launch-latency: $launches launches, each after its call and in order on every GPU (clock error $error ns)"
  # The trace: each launch's slice on each GPU's track, in category probe.
  spans=$(grep -o '"cat":"probe","ph":"X","pid":0,"tid":[0-9]*' "$work/$set.json" | sort | uniq -c |
    awk -v l="$launches" '$1 >= l { n++ } END { print n + 0 }')
  [ "$spans" -eq $n ] || { head -c 3000 "$work/$set.json"; fail "$gpus: the trace has probe spans on $spans GPU tracks, not $n"; }
  pass "$gpus: the trace shows each launch's slice on each of the $n GPUs' tracks"

  # block-time counts the blocks thread-count counted.
  g=0
  while [ $g -lt $n ]; do
    hist=$(map_entries "$out" bt_hist $g | awk -v k="$kid" 'int($1 / (8 * 496)) == k { s += $2 } END { print s + 0 }')
    [ "$hist" -eq $((launches * grid / n)) ] ||
      fail "$gpus: block-time counted $hist blocks of vector_add on GPU $g, not $((launches * grid / n))"
    g=$((g + 1))
  done
  awk '/^block-time:/ { on = 1; next } /^$/ { on = 0 } on && /vector_add/ { if ($(NF-4) + 0 <= 0) bad = 1; n++ }
       END { exit bad || n == 0 }' "$work/$set.err" ||
    { cat "$work/$set.err"; fail "$gpus: block-time's median block duration is not positive"; }
  pass "$gpus: block-time: its histograms count every block"
done

# memory-locality: ml_counts[((copy * 64 + kernel) * 17 + slot) * 66 + class]
# (8 copies), slot 1 + i for parameter i, class 0 outside the pool, 1 a
# replica, 2 + g GPU g's.
# vector_add reads a and b and writes c once per thread; a warp whose index
# in the slice is 15, 14 or 13 modulo 16 samples its first, second or third
# access: warps 5, 6 and 7 of a block of odd index in the slice, 96 accesses.
# Only sampled blocks run the probe: one in 8 (block b of the slice when
# b * 0x9E3779B1 mod 2^32 < 2^32 / 8, mgpu/probe.h). The vectors are 64 MiB, eight
# 2 MiB pages per GPU under 0x4, so that placement can give each GPU its
# quarter (with 4 MiB, two pages, GPUs 0 and 2 read pages of 1 and 3).
ml_size=16777216
ml_grid=65536
"$prog" --quick --size $ml_size > "$work/ml_plain.out" 2> "$work/ml_plain.err" ||
  { cat "$work/ml_plain.err"; fail "plain run of $ml_size"; }
grep -v '^time: ' "$work/ml_plain.out" > "$work/ml_plain.result"
# probed_run NAME WHAT [VAR=VALUE...] MGPU-RUN ARGS...: vector_add on
# $ml_size elements with MGPU_SPLIT=always and MGPU_PROBE_OUT=$work/NAME.jsonl
# (out); checks that it prints what the plain run does, and sets the
# kernel's id (kid) and its launches. WHAT names the run in failures.
probed_run() {
  name=$1; what=$2; shift 2
  out="$work/$name.jsonl"
  env MGPU_SPLIT=always MGPU_PROBE_OUT="$out" "$@" "$prog" --quick --size $ml_size \
    > "$work/$name.out" 2> "$work/$name.err" || { cat "$work/$name.err"; fail "$what"; }
  grep -v '^time: ' "$work/$name.out" | diff "$work/ml_plain.result" - > /dev/null ||
    fail "$what: the output differs from the plain run"
  kid=$(json_field "$(grep '"type":"kernel"' "$out" | grep vector_add | head -n 1)" id)
  launches=$(grep '"type":"launch"' "$out" | grep -c "\"kernel\":$kid,")
}
locality() { # NAME GPUS EXPECT [PLACEMENT]: EXPECT is local, remote or outside
  name=$1; gpus=$2; want=$3
  probed_run "$name" "memory-locality $name" ${4:+MGPU_PLACEMENT=$4} "$MGPU_RUN" $gpus --probe memory-locality
  expect_in "$work/$name.err" "memory-locality: global accesses (one in 16 of each thread's)"
  expect_in "$work/$name.err" "(sampled: one block in 8 of each GPU's slice, every block of a grid of at most 4096)"
  n=$(grep -c '"map":"ml_counts"' "$out")
  g=0
  while [ $g -lt $n ]; do
    map_entries "$out" ml_counts $g | awk -v k="$kid" -v g=$g -v n=$n -v l="$launches" -v want="$want" \
      -v set="$name" -v grid=$ml_grid '
      { kernel = int($1 / (17 * 66)) % 64; slot = int($1 / 66) % 17; class = $1 % 66 }
      kernel != k { next }
      { total += $2; by_slot[slot] += $2
        if (class == 0) outside += $2; else if (class == 2 + g) local += $2; else if (class >= 2) remote += $2 }
      END {
        for (b = 1; b < grid / n; b += 2)
          if ((b * 2654435761) % 4294967296 < 4294967296 / 8)
            odd_sampled++
        expect = l * odd_sampled * 96
        if (total != expect) { printf "%s: GPU %d counted %d accesses of vector_add, not %d\n", set, g, total, expect; exit 1 }
        if (by_slot[1] != total / 3 || by_slot[2] != total / 3 || by_slot[3] != total / 3) {
          printf "%s: GPU %d: accesses by parameter %d %d %d (other %d), not a third each\n", set, g, by_slot[1], by_slot[2], by_slot[3], by_slot[0]; exit 1 }
        share = (want == "local" ? local : want == "remote" ? remote : outside) / total
        if (share < (want == "remote" ? 0.6 : 0.95)) { printf "%s: GPU %d: only %.3f of the accesses %s\n", set, g, share, want; exit 1 }
        printf "%s: GPU %d: %d accesses, %.3f %s\n", set, g, total, share, want
      }' >> "$work/locality.log" || { cat "$work/$name.err" "$work/locality.log"; fail "memory-locality $name"; }
    g=$((g + 1))
  done
}
locality ml_one "-n 1" outside
locality ml_placed "--gpus 0x4" local distributed
locality ml_interleave "--gpus 0x4" remote interleave
cat "$work/locality.log"
pass "memory-locality: every sampled access of the sampled blocks counted, by parameter; 0x4 local (distributed placement), interleaved remote, -n 1 outside"

# The timing tools on a grid of 65536 blocks, over the 4096 that every block
# of runs them: block-time's histograms count exactly the sampled blocks
# (one in 32: block b of the slice when b * 0x9E3779B1 mod 2^32 < 2^27),
# thread-count still every block, launch-latency a slice per launch and GPU.
for set in 1 0x4; do
  if [ "$set" = 1 ]; then gpus="-n 1"; n=1; else gpus="--gpus $set"; n=4; fi
  probed_run "sampled.$set" "$gpus: the timing tools on $ml_grid blocks" "$MGPU_RUN" $gpus \
    --probe thread-count --probe launch-latency --probe block-time
  expect_in "$work/sampled.$set.err" "(sampled: one block in 32 of each GPU's slice"
  expect_in "$work/sampled.$set.err" "launch_latency_exit at block-exit (in one block in 32) of '*': 1 kernel"
  slice=$((ml_grid / n))
  want=$(awk -v g=$slice 'BEGIN { for (b = 0; b < g; b++) if ((b * 2654435761) % 4294967296 < 134217728) c++; print c }')
  g=0
  while [ $g -lt $n ]; do
    hist=$(map_entries "$out" bt_hist $g | awk -v k="$kid" 'int($1 / (8 * 496)) == k { s += $2 } END { print s + 0 }')
    blocks=$(map_entries "$out" tc_blocks $g | awk -v k="$kid" 'int($1 / 256) == k { s += $2 } END { print s + 0 }')
    [ "$hist" -eq $((launches * want)) ] ||
      fail "$gpus: block-time counted $hist blocks of vector_add on GPU $g, not $launches x $want sampled"
    [ "$blocks" -eq $((launches * slice)) ] ||
      fail "$gpus: thread-count counted $blocks blocks on GPU $g, not $launches x $slice"
    slices=$(grep -c "\"type\":\"slice\",\"tool\":\"launch-latency\",\"gpu\":$g," "$out")
    [ "$slices" -ge "$launches" ] || fail "$gpus: launch-latency has $slices slices on GPU $g for $launches launches"
    g=$((g + 1))
  done
  pass "$gpus: $ml_grid blocks: block-time in $want of each slice's $slice blocks (one in 32), thread-count in all, launch-latency a slice per launch on each GPU"
done

# Probes inlined into a grid-stride loop cut by iterations (saxpy at 0x4):
# the loop's rewrite patches the kernel's index and step registers, not an
# inlined probe's registers of the same names. The step of saxpy's loop is
# %rd3 (nvcc 13.0); a probe declares its own %rd3, sets it to 1 and adds it
# per block: patched as the step, it added nctaid * ntid instead. Its count
# must equal thread-count's, whose blocks must spread over multiprocessors.
cat > "$work/step_named.cu" << 'EOF2'
#include <mgpu/probe.h>
MGPU_PROBE_ARRAY(step_named_blocks, 1);
MGPU_PROBE_BLOCK_ENTRY(step_named_entry, "*saxpy*")
{
    mgpu_u64 one;
    asm volatile("{\n\t.reg .b64 %%rd3;\n\tmov.u64 %%rd3, 1;\n\tmov.u64 %0, %%rd3;\n\t}" : "=l"(one));
    mgpu_array_add(step_named_blocks, 0, one);
}
EOF2
examples/saxpy --quick > "$work/saxpy_plain.out" 2> "$work/saxpy_plain.err" ||
  { cat "$work/saxpy_plain.err"; fail "plain saxpy"; }
out="$work/saxpy.jsonl"
MGPU_SPLIT=always MGPU_PROBE_OUT="$out" "$MGPU_RUN" --gpus 0x4 -v -v --probe thread-count \
  --probe "$work/step_named.cu" examples/saxpy --quick > "$work/saxpy.out" 2> "$work/saxpy.err" ||
  { cat "$work/saxpy.err"; fail "saxpy with probes"; }
grep -v '^time: ' "$work/saxpy_plain.out" > "$work/saxpy_plain.result"
grep -v '^time: ' "$work/saxpy.out" | diff "$work/saxpy_plain.result" - > /dev/null ||
  fail "saxpy with probes: the output differs from the plain run"
expect_in "$work/saxpy.err" "GPU 3: iterations"
kid=$(json_field "$(grep '"type":"kernel"' "$out" | grep saxpy | head -n 1)" id)
for g in 0 1 2 3; do
  blocks=$(map_entries "$out" tc_blocks $g | awk -v k="$kid" 'int($1 / 256) == k { s += $2 } END { print s + 0 }')
  sms=$(map_entries "$out" tc_blocks $g | awk -v k="$kid" 'int($1 / 256) == k && $2 > 0 { n++ } END { print n + 0 }')
  counted=$(map_entries "$out" step_named_blocks $g | awk '{ s += $2 } END { print s + 0 }')
  [ "$blocks" -gt 0 ] && [ "$counted" -eq "$blocks" ] && [ "$sms" -gt 1 ] ||
    fail "saxpy cut by iterations, GPU $g: $blocks blocks on $sms multiprocessors, the probe's own %rd3 added $counted"
done
pass "probes in saxpy's loop cut by iterations: a probe's %rd3 is its own, not the loop's step; thread-count's blocks spread"

# The example probes: blocks per SM, warp durations, a ring of block starts,
# a watch on a range of vector_add's output.
for ex in blocks-per-sm warp-time block-records address-watch; do
  out="$work/$ex.jsonl"
  MGPU_SPLIT=always MGPU_PROBE_OUT="$out" "$MGPU_RUN" --gpus 0x4 --trace "$work/$ex.json" \
    --probe "$top_srcdir/examples/probes/$ex.cu" "$prog" $args > "$work/$ex.out" 2> "$work/$ex.err" ||
    { cat "$work/$ex.err"; fail "the example probe $ex"; }
  grep -v '^time: ' "$work/$ex.out" | diff "$work/plain.result" - > /dev/null ||
    fail "$ex: the output differs from the plain run"
done
# blocks-per-sm attaches to *sgemm* only: vector_add has none, which is an error.
expect_in "$work/blocks-per-sm.err" "attaches to no kernel the program ran"
warps=$(grep '"map":"warp_cycles_log2"' "$work/warp-time.jsonl" | sed 's/.*"entries":\[//' |
  grep -o '\[[0-9]*,[0-9]*\]' | tr -d '[]' | awk -F, '{ s += $2 } END { print s + 0 }')
launches=$(grep -c '"type":"launch"' "$work/warp-time.jsonl")
[ "$warps" -eq $((launches * grid * 8)) ] || fail "warp-time counted $warps warps, not $launches x $grid x 8"
kept=$(grep -c '"type":"record","map":"block_starts"' "$work/block-records.jsonl")
dropped=$(grep '"type":"ring","map":"block_starts"' "$work/block-records.jsonl" |
  sed 's/.*"dropped":\([0-9]*\).*/\1/' | awk '{ s += $1 } END { print s + 0 }')
launches=$(grep -c '"type":"launch"' "$work/block-records.jsonl")
[ "$kept" -eq $((4 * 4096)) ] && [ $((kept + dropped)) -eq $((launches * grid)) ] ||
  fail "block-records kept $kept and dropped $dropped of $launches x $grid blocks"
# Each record names its GPU, and the GPU's ring holds only its own blocks.
grep '"type":"record","map":"block_starts","gpu":2,' "$work/block-records.jsonl" | head -n 1 |
  sed 's/.*"words":\[\([0-9]*\),\([0-9]*\),\([0-9]*\),.*/\3/' > "$work/word"
[ $(( $(cat "$work/word") & 0xffffffff )) -eq 2 ] || fail "a record of GPU 2's ring does not say GPU 2"
[ "$(grep -c '"name":"block_starts","cat":"block_starts"' "$work/block-records.json")" -eq "$kept" ] ||
  fail "the trace does not show every kept block record"
# address-watch: the 64 elements around the middle, each written once per
# launch, by block element / 256 of GPU block / 1024 (records: ns, element,
# block, gpu | sm << 32, launch | bytes << 32).
launches=$(grep -c '"type":"launch"' "$work/address-watch.jsonl")
grep '"type":"record","map":"watch_writes"' "$work/address-watch.jsonl" |
  sed 's/.*"words":\[\([0-9,]*\)\].*/\1/' | tr ',' ' ' |
  awk -v l="$launches" -v size=$size '
    { element = $2; block = $3; gpu = $4 % 4294967296; bytes = int($5 / 4294967296)
      if (element < size / 2 - 32 || element >= size / 2 + 32) { print "element " element " outside the range"; bad = 1 }
      if (block != int(element / 256) || gpu != int(block / 1024) || bytes != 4) { print "record " $0 " wrong"; bad = 1 }
      seen[element "," $5 % 4294967296]++; n++; on[gpu]++ }
    END {
      for (k in seen) if (seen[k] != 1) { print "element,launch " k " recorded " seen[k] " times"; bad = 1 }
      if (n != l * 64 || on[1] != l * 32 || on[2] != l * 32) { print n " records (GPU 1 " on[1] ", GPU 2 " on[2] ") for " l " launches"; bad = 1 }
      exit bad }' || fail "address-watch's records"
pass "example probes: blocks-per-sm (no match: the error), warp-time ($warps warps), block-records ($kept kept, $dropped dropped), address-watch (each watched write once, by its block and GPU)"

[ $failures -eq 0 ] || exit 1
