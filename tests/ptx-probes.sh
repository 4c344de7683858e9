#!/bin/sh
# Probes on the CPU (no GPU needed; nvcc and ptxas check the output):
# - the built-in tools and the example probes compile with mgpu/probe.h;
# - linked into the split fixtures and every PTX of kernels.cu, with every
#   pass, the module assembles for sm_90, and the probes are where they
#   belong: entry glue once per probed kernel, exit glue before each ret,
#   each probe's body inlined there (its label $__mgpu_inlined_NAME_N
#   after it) with the kernel's id a constant; the entry glue after the
#   kernel's opening register computations;
# - a probe that does not compile, declares no probe, defines a kernel or
#   clashes with the program's symbols gets a one-line error naming it;
# - mgpu-run's --probe says the same before it runs anything.
. "$(dirname "$0")/common.sh"
tool="$top_builddir/src/ptx/mgpu-ptx"
NVCC="${CUDA_HOME}/bin/nvcc"
PTXAS="${CUDA_HOME}/bin/ptxas"
[ -x "$NVCC" ] && [ -x "$PTXAS" ] || fail "no nvcc or ptxas under $CUDA_HOME"
fx=tests/ptx
inc="$top_srcdir/probes/include"

compile() { # SOURCE OUT.ptx
  "$NVCC" -ptx -rdc=true -arch=compute_75 -I"$inc" -o "$2" "$1" 2> "$work/nvcc.err" ||
    { cat "$work/nvcc.err" >&2; fail "nvcc refuses $1"; }
}
for t in launch-latency block-time thread-count memory-locality footprint-check; do
  compile "$top_srcdir/probes/tools/$t.cu" "$work/$t.ptx"
done
for e in "$top_srcdir"/examples/probes/*.cu; do
  compile "$e" "$work/example-$(basename "$e" .cu).ptx"
done
pass "the built-in tools and the example probes compile"

# The timing tools run in sampled blocks (checked below); the glue's
# shape is checked first on copies of them that run in every block.
for t in launch-latency block-time; do
  sed 's/_SAMPLED(\([a-z_]*\), "\*", 32)/(\1, "*")/' "$top_srcdir/probes/tools/$t.cu" > "$work/$t-all.cu"
  grep -q SAMPLED "$work/$t-all.cu" && fail "$t-all.cu still samples blocks"
  compile "$work/$t-all.cu" "$work/$t-all.ptx"
done

# All three tools at once into the split fixtures.
"$tool" rewrite "$fx/split_kernels.ptx" -o "$work/probed.ptx" --probe "$work/launch-latency-all.ptx" \
  --probe "$work/block-time-all.ptx" --probe "$work/thread-count.ptx" > "$work/plan" ||
  { cat "$work/plan"; fail "rewrite with probes"; }
"$PTXAS" -arch=sm_90 "$work/probed.ptx" -o "$work/probed.cubin" 2> "$work/err" ||
  { cat "$work/err"; fail "ptxas refuses the probed split fixtures"; }
r="$work/probed.ptx"
entries=$(grep -c '^\.visible \.entry' "$r")
attached=$(grep -c '^  kernel [0-9]*: ' "$work/plan")
[ "$attached" -eq "$entries" ] || fail "$attached of $entries kernels probed"
# Entry glue once per kernel; every probe function defined once.
[ "$(grep -c 'setp.eq.u32 	%__mgpu_probe_first, %__mgpu_probe_w0, 0;' "$r")" -eq "$entries" ] ||
  fail "not one entry glue per kernel"
for f in launch_latency_entry launch_latency_exit block_time_entry block_time_exit thread_count_entry; do
  [ "$(grep -c "^\.visible \.func $f(" "$r")" -eq 1 ] || fail "$f is not defined once"
done
# The descriptors are metadata: left out.
grep -q '__mgpu_probe_attach_\|__mgpu_probe_map_' "$r" && fail "a probe declaration was linked in"
# Each map's address word, the clock offset and the block's words.
for m in ll_first ll_last bt_hist bt_max bt_first bt_last tc_blocks; do
  expect_in "$r" ".visible .const .align 8 .u64 __mgpu_map_$m;"
done
expect_in "$r" ".visible .const .align 8 .u64 __mgpu_probe_clock_offset;"
expect_in "$r" ".visible .const .align 8 .u64 __mgpu_probe_run_start;"
expect_in "$r" ".shared .align 4 .b8 __mgpu_probe_block[16];"
# Exit probes: a barrier after the count is zeroed, one count per ret/exit.
rets=$(awk '/^\.visible \.entry/ { k = 1 } /^\.visible \.func|^\.func/ { k = 0 }
            k && /^[[:space:]]*(@[^ ]+ )?(ret|exit);/ { n++ } END { print n + 0 }' "$r")
counts=$(grep -c '@%__mgpu_probe_go atom.acq_rel.cta.shared.add.u32 	%__mgpu_probe_x5' "$r")
[ "$counts" -eq "$rets" ] || fail "$counts exit counts for $rets ret/exit instructions of kernels"
# The tools' probes are block-level: only the edge thread calls them.
[ "$(grep -c '@!%__mgpu_probe_first bra 	$__mgpu_probe_entered;' "$r")" -eq "$entries" ] &&
  [ "$(grep -c '^\$__mgpu_inlined_thread_count_entry_[0-9]*:$' "$r")" -eq "$entries" ] &&
  [ "$(grep -c 'bar.warp.sync 	%__mgpu_probe_w0;' "$r")" -eq "$entries" ] ||
  fail "thread_count_entry is not called by the first thread only, behind a branch"
[ "$(grep -c '@!%__mgpu_probe_last bra 	\$__mgpu_inlined_block_time_exit_' "$r")" -eq "$rets" ] ||
  fail "block_time_exit is not run by the last thread only"
[ "$(grep -c '@!%__mgpu_probe_last bra 	\$__mgpu_inlined_launch_latency_exit_' "$r")" -eq "$rets" ] ||
  fail "launch_latency_exit is not run by the last thread only"
# Inlined, no probe is called; its parameter is the edge flag's register,
# its reads of the kernel's id a constant and of the launch's number
# __mgpu_grid's word, so no kernel reads them from shared memory.
awk '/^\.visible \.entry/ { k = 1 } /^\.visible \.func|^\.func/ { k = 0 } k' "$r" > "$work/kernels"
grep -q 'call.*\(thread_count_entry\|launch_latency_\|block_time_\)' "$work/kernels" &&
  fail "a kernel still calls a probe"
grep -q '\[__mgpu_probe_block\(+8\)\?\]' "$work/kernels" &&
  fail "a kernel reads or stores the launch's number or kernel's id in shared memory"
expect_in "$work/kernels" "ld.param.u32 	%r1, [__mgpu_grid+28];"
# A warp-exit probe: called by the lowest thread of each warp leaving.
cat > "$work/warp.cu" <<'CU'
#include <mgpu/probe.h>
MGPU_PROBE_COUNTER(warps_left);
MGPU_PROBE_WARP_EXIT(count_warp, "*") { mgpu_counter_add(warps_left, 1); }
CU
compile "$work/warp.cu" "$work/warp.ptx"
"$tool" rewrite "$fx/split_kernels.ptx" -o "$work/w.ptx" --probe "$work/warp.ptx" > /dev/null ||
  fail "rewrite with a warp-exit probe"
[ "$(grep -c '@!%__mgpu_probe_go bra 	\$__mgpu_inlined_count_warp_' "$work/w.ptx")" -eq "$rets" ] ||
  fail "count_warp is not run by one thread of each warp leaving"
grep -q '__mgpu_probe_block+4' "$work/w.ptx" && fail "a warp-exit probe alone counts threads"
"$PTXAS" -arch=sm_90 "$work/w.ptx" -o "$work/w.cubin" 2> "$work/err" || { cat "$work/err"; fail "ptxas refuses it"; }
# thread-count alone: block-entry only, so no count, no barrier; inlined,
# with each kernel's id in place of its loads (kernel 0 is the first).
"$tool" rewrite "$fx/split_kernels.ptx" -o "$work/tc.ptx" --probe "$work/thread-count.ptx" > /dev/null ||
  fail "rewrite with thread-count"
grep -q '__mgpu_probe_block+4' "$work/tc.ptx" && fail "thread-count alone counts threads"
[ "$(grep -c 'bar.sync 	0;' "$work/tc.ptx")" -eq "$(grep -c 'bar.sync 	0;' "$fx/split_kernels.ptx")" ] ||
  fail "thread-count alone adds a barrier"
expect_in "$work/tc.ptx" "mov.u32 	%r1, 0;"
expect_in "$work/tc.ptx" "mov.u32 	%r1, $((entries - 1));"
"$PTXAS" -arch=sm_90 "$work/tc.ptx" -o "$work/tc.cubin" 2> "$work/err" || { cat "$work/err"; fail "ptxas refuses it"; }
# The probe's atomic stays GPU-scoped (each GPU's maps are its own), named
# global (no shared-memory fallback); the program's become system-scoped.
awk '/^\.visible \.func thread_count_entry\(/,/^}/' "$work/tc.ptx" > "$work/tc_fn"
[ "$(grep -c 'red.global.add.u64' "$work/tc_fn")" -eq 1 ] && ! grep -q '\.sys' "$work/tc_fn" ||
  { cat "$work/tc_fn"; fail "thread_count_entry's atomic is not one GPU-scoped global red"; }
grep -q 'atom\.sys\.global' "$work/tc.ptx" || fail "the program's atomics were not made system-scoped"
# What is not inlined: a probe with a local array stays a call; a helper
# the probe calls (not inlined) reads the kernel's id from shared memory,
# so there the entry glue stores it.
cat > "$work/outline.cu" <<'CU'
#include <mgpu/probe.h>
MGPU_PROBE_COUNTER(outline_sum);
__device__ __noinline__ unsigned kernel_of_block(void) { return mgpu_kernel_id(); }
MGPU_PROBE_BLOCK_ENTRY(with_helper, "*") { mgpu_counter_add(outline_sum, kernel_of_block()); }
MGPU_PROBE_BLOCK_EXIT(with_local, "*")
{
    volatile unsigned scratch[8];
    for (int i = 0; i < 8; i++)
        scratch[i] = i * mgpu_sm_id();
    mgpu_counter_add(outline_sum, scratch[mgpu_sm_id() % 8]);
}
CU
compile "$work/outline.cu" "$work/outline.ptx"
grep -q '\.local' "$work/outline.ptx" || fail "the local-array probe has no local array to refuse"
"$tool" rewrite "$fx/split_kernels.ptx" -o "$work/o.ptx" --probe "$work/outline.ptx" > /dev/null ||
  fail "rewrite with probes that are not all inlined"
"$PTXAS" -arch=sm_90 "$work/o.ptx" -o "$work/o.cubin" 2> "$work/err" || { cat "$work/err"; fail "ptxas refuses it"; }
[ "$(grep -c '@%__mgpu_probe_last call 	with_local' "$work/o.ptx")" -eq "$rets" ] ||
  fail "a probe with a local array is not called (once per exit)"
[ "$(grep -c '^\$__mgpu_inlined_with_helper_[0-9]*:$' "$work/o.ptx")" -eq "$entries" ] ||
  fail "with_helper is not inlined once per kernel"
[ "$(grep -c '@%__mgpu_probe_first st.shared.u32 	\[__mgpu_probe_block+8\]' "$work/o.ptx")" -eq "$entries" ] ||
  fail "the kernel's id is not stored for the helper that reads it"
[ "$(grep -c 'bar.sync 	0;' "$r")" -ge "$entries" ] || fail "no barrier after the exit count is zeroed"
# Probes read the whole grid's block index: the block-offset pass rewrote
# %ctaid in them too (kernels copy __mgpu_grid to shared memory).
awk '/^\.visible \.func thread_count_entry\(/,/^}/' "$r" > "$work/tc"
grep -q '%ctaid' "$work/tc" && ! grep -q '__mgpu_grid_shared' "$work/tc" &&
  fail "thread_count_entry reads %ctaid unrewritten"
pass "$entries kernels probed; entry glue, $rets exit counts, maps and clock declared; ptxas assembles it"

# Guarded exits (@%p exit, @!%p ret): the count and the probe run under
# the instruction's own guard, the leaving threads found by a ballot on it.
cat > "$work/guarded.ptx" <<'PTX'
.version 8.0
.target sm_90
.address_size 64

.visible .entry guarded_exits(
	.param .u64 guarded_exits_param_0,
	.param .u32 guarded_exits_param_1
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [guarded_exits_param_0];
	ld.param.u32 	%r1, [guarded_exits_param_1];
	mov.u32 	%r2, %tid.x;
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 exit;
	setp.eq.u32 	%p2, %r2, 7;
	@!%p2 ret;
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.u32 	[%rd2], %r2;
	ret;
}
PTX
"$tool" rewrite "$work/guarded.ptx" -o "$work/g.ptx" --probe "$work/launch-latency-all.ptx" > /dev/null ||
  fail "rewrite guarded exits"
"$PTXAS" -arch=sm_90 "$work/g.ptx" -o "$work/g.cubin" 2> "$work/err" || { cat "$work/err"; fail "ptxas refuses guarded exits"; }
expect_in "$work/g.ptx" "vote.sync.ballot.b32 	%__mgpu_probe_x2, %p1, %__mgpu_probe_x1;"
expect_in "$work/g.ptx" "vote.sync.ballot.b32 	%__mgpu_probe_x2, !%p2, %__mgpu_probe_x1;"
expect_in "$work/g.ptx" "setp.eq.and.u32 	%__mgpu_probe_go, %__mgpu_probe_x3, 0, !%p2;"
[ "$(grep -c '@!%__mgpu_probe_last bra 	\$__mgpu_inlined_launch_latency_exit_' "$work/g.ptx")" -eq 3 ] ||
  fail "not one block-exit call per exit of the guarded kernel"
pass "guarded exits: the count and the calls under each exit's guard; ptxas assembles it"

# The entry glue goes after the kernel's opening statements that only
# compute registers (parameters, %ctaid, %tid, arithmetic), before the
# first that does more: a memory access, a branch or label, a read of a
# clock, an add with carry, a barrier. One kernel per stop; each line
# before the stop must come before the glue, the stop after it.
for stop in "ld.global.u32 	%r6, [%rd1];" "mov.u32 	%r6, %clock;" "add.cc.u32 	%r6, %r3, 1;" \
  "bar.sync 	0;" "@%p1 bra 	\$L_end;" "\$L_stop:"; do
  cat > "$work/prologue.ptx" << PTX
.version 8.0
.target sm_90
.address_size 64
.visible .entry prologue(
	.param .u64 prologue_param_0,
	.param .u32 prologue_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd2, [prologue_param_0];
	ld.param.u32 	%r1, [prologue_param_1];
	cvta.to.global.u64 	%rd1, %rd2;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %tid.x;
	mad.lo.u32 	%r4, %r2, 256, %r3;
	setp.ge.u32 	%p1, %r4, %r1;
	$stop
	add.u32 	%r7, %r4, 1;
	@%p1 bra 	\$L_end;
\$L_top:
	st.global.u32 	[%rd1], %r7;
\$L_end:
	ret;
}
PTX
  "$tool" rewrite "$work/prologue.ptx" -o "$work/p.ptx" --probe "$work/thread-count.ptx" > /dev/null ||
    fail "rewrite the prologue kernel stopped by $stop"
  "$PTXAS" -arch=sm_90 "$work/p.ptx" -o "$work/p.cubin" 2> "$work/err" ||
    { cat "$work/err"; fail "ptxas refuses the prologue kernel stopped by $stop"; }
  awk -v stop="$stop" '
    /^\.visible \.entry/ { k = 1 } !k { next }
    /setp.eq.u32 	%__mgpu_probe_first/ { glue = NR }
    /mad.lo.u32 	%r4, %r2, 256, %r3;|mov.u32 	%r3, %tid.x;|ld.param.u32 	%r1, \[prologue_param_1\];/ { last = NR }
    index($0, stop) == 2 || $0 == stop { if (!at) at = NR }
    END {
      if (!glue || !at || !last) { print "glue " glue ", stop " at ", prologue " last; exit 1 }
      if (last > glue || at < glue) { print "glue at line " glue ", prologue to " last ", stop at " at; exit 1 }
    }' "$work/p.ptx" || fail "the entry glue is not between the prologue and '$stop'"
done
pass "the entry glue after the kernel's opening register computations, before a load, clock, carry, barrier, branch or label"

# Block sampling: launch-latency (one block in 32) with thread-count (every
# block). Each kernel but the grid-stride one, whose loop the block-offset
# pass rewrites, runs its body twice: unsampled blocks fall through to the
# body with thread-count's glue only; sampled ones branch to a copy with
# every probe, whose labels and branches are renamed so that none leads
# back into the other copy.
"$tool" rewrite "$fx/split_kernels.ptx" -o "$work/s.ptx" --probe "$work/launch-latency.ptx" \
  --probe "$work/thread-count.ptx" > /dev/null || fail "rewrite with launch-latency sampled"
"$PTXAS" -arch=sm_90 "$work/s.ptx" -o "$work/s.cubin" 2> "$work/err" || { cat "$work/err"; fail "ptxas refuses it"; }
# The test hashes %ctaid.x, and .y and .z where the program reads them.
reads=1
grep -q '%ctaid\.y' "$fx/split_kernels.ptx" && reads=$((reads + 1))
grep -q '%ctaid\.z' "$fx/split_kernels.ptx" && reads=$((reads + 1))
awk -v reads=$reads '
  /^\.visible \.entry/ { name = $3; sub(/\(.*/, "", name); k = 1; part = "one"; delete defined; next }
  /^\.visible \.func|^\.func/ { k = 0 }
  !k { next }
  /@%__mgpu_probe_sampled bra/ { part = "plain"; tests[name]++; next }
  /^\$__mgpu_probe_sampled_body:/ { part = "sampled"; next }
  /^[$A-Za-z_][$A-Za-z0-9_]*:$/ { l = $1; if (defined[l]++) { print name ": label " l " twice"; bad = 1 } }
  /ld.param.u32 	%__mgpu_probe_t, \[__mgpu_grid\+48\];/ { threshold[name]++ }
  /setp.le.u32 	%__mgpu_probe_sampled, %__mgpu_probe_h, %__mgpu_probe_t;/ { below[name]++ }
  /mov.u32 	%__mgpu_slice_k[012], %ctaid.[xyz];/ { slice[name]++ }
  /^\$__mgpu_inlined_thread_count_entry_/ { tc[name, part]++ }
  /^\$__mgpu_inlined_launch_latency_entry_/ { lle[name, part]++ }
  /^\$__mgpu_inlined_launch_latency_exit_/ { llx[name, part]++ }
  /^[[:space:]]*(@[^ ]+ )?(ret|exit);/ { rets[name, part]++ }
  part == "sampled" && /[[:space:]]bra(\.uni)?[[:space:]]/ && !/_mgpu_sampled;$/ {
    print name ": a branch of the sampled copy leaves it: " $0; bad = 1 }
  END {
    for (n in tests) {
      copies++
      if (below[n] != 1 || threshold[n] != 1) { print n ": no test against the launch'"'"'s threshold"; bad = 1 }
      if (slice[n] != reads) { print n ": the test does not read the slice'"'"'s own %ctaid (" reads ")"; bad = 1 }
      if (tc[n, "plain"] != 1 || tc[n, "sampled"] != 1) { print n ": thread-count not in both copies"; bad = 1 }
      if (lle[n, "plain"] + llx[n, "plain"] != 0) { print n ": launch-latency in the unsampled copy"; bad = 1 }
      if (lle[n, "sampled"] != 1 || llx[n, "sampled"] != rets[n, "sampled"]) {
        print n ": launch-latency not at the sampled copy'"'"'s entry and each of its " rets[n, "sampled"] " exits"; bad = 1 }
    }
    if (!("grid_stride_saxpy" in lle) && lle["grid_stride_saxpy", "one"] != 1) {
      print "grid_stride_saxpy: its probes do not run in every block"; bad = 1 }
    if ("grid_stride_saxpy" in tests) { print "grid_stride_saxpy was copied"; bad = 1 }
    print copies > "/dev/stderr"
    exit bad || copies == 0
  }' "$work/s.ptx" 2> "$work/copies" || fail "block sampling: the copies of the bodies"
[ "$(cat "$work/copies")" -eq "$((entries - 1))" ] || fail "$(cat "$work/copies") kernels copied, not $((entries - 1))"
# A body that can run off its end: the unsampled copy, which the sampled
# one follows, ends in a ret of its own.
cat > "$work/falls.ptx" <<'PTX'
.version 8.0
.target sm_90
.address_size 64

.visible .entry falls_off_end(
	.param .u64 falls_off_end_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [falls_off_end_param_0];
	mov.u32 	%r1, %tid.x;
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	$L__end;
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.u32 	[%rd2], %r1;
$L__end:
}
PTX
"$tool" rewrite "$work/falls.ptx" -o "$work/f.ptx" --probe "$work/launch-latency.ptx" > /dev/null ||
  fail "rewrite a body that runs off its end"
"$PTXAS" -arch=sm_90 "$work/f.ptx" -o "$work/f.cubin" 2> "$work/err" || { cat "$work/err"; fail "ptxas refuses it"; }
grep -B 2 '^\$__mgpu_probe_sampled_body:' "$work/f.ptx" | tr -d '\t' | tr '\n' ' ' | grep -q '^ret; } ' ||
  { grep -B 3 '^\$__mgpu_probe_sampled_body:' "$work/f.ptx"; fail "the unsampled copy of falls_off_end runs on into the sampled one"; }
# A module that never reads %ctaid.y or .z: its blocks are hashed by x only.
[ "$(grep -c 'mov.u32 	%__mgpu_slice_k' "$work/f.ptx")" -eq 1 ] &&
  expect_in "$work/f.ptx" "mov.u32 	%__mgpu_slice_k0, %ctaid.x;" ||
  fail "falls_off_end's blocks are not hashed by their x alone"
cat > "$work/badblocks.cu" <<'CU'
#include <mgpu/probe.h>
MGPU_PROBE_BLOCK_EXIT_SAMPLED(blocks_zero, "*", 0) { }
CU
compile "$work/badblocks.cu" "$work/badblocks.ptx"
one_line_error 1 "probe blocks_zero samples one block in 1 to 1048576, not \"0:*\"" "$tool" rewrite "$fx/split_kernels.ptx" -o "$work/x.ptx" --probe "$work/badblocks.ptx"
pass "block sampling: $(cat "$work/copies") kernels run launch-latency in one block in 32 from a copy of their body (labels renamed), thread-count in both, the grid-stride loop's in every block; a body without a last ret gets one; a bad sampling one line"

# Memory probes: memory-locality (sampled, one access in 16) before every
# global access of the kernels, with the access's size, kind and the
# parameter it reaches; the page map's word declared; ptxas assembles it.
"$tool" rewrite "$fx/split_kernels.ptx" -o "$work/ml.ptx" --probe "$work/memory-locality.ptx" > /dev/null ||
  fail "rewrite with memory-locality"
"$PTXAS" -arch=sm_90 "$work/ml.ptx" -o "$work/ml.cubin" 2> "$work/err" || { cat "$work/err"; fail "ptxas refuses memory-locality"; }
accesses=$(awk '/^\.visible \.entry/ { k = 1 } /^\.visible \.func|^\.func/ { k = 0 }
  k && /^[[:space:]]*(@[^ ]+ )?(ld|ldu|st|atom|red)(\.global)?\.[a-z0-9.:_]*[[:space:]]/ &&
  !/\.(param|shared|local|const)/ { n++ } END { print n + 0 }' "$fx/split_kernels.ptx")
calls=$(grep -c 'call 	memory_locality, ' "$work/ml.ptx")
[ "$accesses" -gt 0 ] && [ "$calls" -eq "$accesses" ] || fail "$calls memory_locality calls for $accesses global accesses"
[ "$(grep -c 'rem.u32 	%__mgpu_probe_tick_16, %__mgpu_probe_s1, 16;' "$work/ml.ptx")" -eq "$entries" ] ||
  fail "not one count of accesses started per kernel"
[ "$(grep -c 'setp.ge.and.u32 	%__mgpu_probe_fire_16, %__mgpu_probe_tick_16, 16, %__mgpu_probe_on;' "$work/ml.ptx")" -eq "$accesses" ] ||
  fail "not one sampling check per access"
expect_in "$work/ml.ptx" ".visible .const .align 8 .u64 __mgpu_pool_map;"
# grid_stride_saxpy(a, x, y, n): loads of x (parameter 1) and y (2), a store to y, 4 bytes each.
awk '/^\.visible \.entry grid_stride_saxpy\(/ { k = 1; next } /^\.visible \.(entry|func)/ { k = 0 } k' "$work/ml.ptx" |
  sed -n 's/.*st.param.b32 	\[__mgpu_probe_access\], \([0-9]*\);/\1/p' | tr '\n' ' ' > "$work/words"
[ "$(cat "$work/words")" = "$(( 4 | 2 << 16 )) $(( 4 | 3 << 16 )) $(( 4 | 1 << 8 | 3 << 16 )) " ] ||
  fail "grid_stride_saxpy's access words are $(cat "$work/words")"
# address-watch reads the kernel's parameters: every thread of vector_add
# (the kernel it watches) stores their addresses.
"$tool" extract "$top_builddir/examples/vector_add" -o "$work/va" > "$work/written" ||
  fail "extract examples/vector_add"
"$tool" rewrite "$(grep '\.ptx$' "$work/written" | head -n 1)" -o "$work/aw.ptx" \
  --probe "$work/example-address-watch.ptx" > "$work/plan" || fail "rewrite with address-watch"
expect_in "$work/plan" "vector_add"
"$PTXAS" -arch=sm_90 "$work/aw.ptx" -o "$work/aw.cubin" 2> "$work/err" || { cat "$work/err"; fail "ptxas refuses address-watch"; }
expect_in "$work/aw.ptx" ".shared .align 8 .b8 __mgpu_probe_params[128];"
[ "$(grep -c 'cvta.param.u64' "$work/aw.ptx")" -eq 4 ] || fail "address-watch: not vector_add's 4 parameter addresses stored"
# A memory probe declared by hand with a bad sampling, and one of the wrong shape.
cat > "$work/badsample.cu" <<'CU'
#include <mgpu/probe.h>
MGPU_PROBE_LOAD_SAMPLED(every_zero, "*", 0) { }
CU
cat > "$work/badshape.cu" <<'CU'
#include <mgpu/probe.h>
extern "C" __device__ const char __mgpu_probe_attach_one_arg[] = "store:*";
extern "C" __device__ __noinline__ void one_arg(unsigned edge) { }
CU
compile "$work/badsample.cu" "$work/badsample.ptx"
compile "$work/badshape.cu" "$work/badshape.ptx"
one_line_error 1 "probe every_zero samples one access in 1 to 1048576, not \"0:*\"" "$tool" rewrite "$fx/split_kernels.ptx" -o "$work/x.ptx" --probe "$work/badsample.ptx"
one_line_error 1 "one_arg is not a device function of three parameters defined here (a memory probe" "$tool" rewrite "$fx/split_kernels.ptx" -o "$work/x.ptx" --probe "$work/badshape.ptx"
pass "memory probes: memory-locality before each of $accesses global accesses, sampled, with size, kind and parameter; address-watch's parameters; bad ones one line each"

# Every PTX of kernels.cu, probed by one user example each, assembles.
n=0
for image in "$fx/kernels_default" "$fx/split_kernels.o"; do
  "$tool" extract "$image" -o "$work/objects" > "$work/written" || fail "extract $image"
  for p in $(grep '\.ptx$' "$work/written"); do
    for e in "$work"/example-*.ptx; do
      n=$((n + 1))
      "$tool" rewrite "$p" -o "$work/e.ptx" --probe "$e" > "$work/plan" 2>&1 ||
        { cat "$work/plan"; fail "rewrite $p with $e"; }
      "$PTXAS" -arch=sm_90 "$work/e.ptx" -o "$work/e.cubin" 2> "$work/err" ||
        { cat "$work/err"; fail "ptxas refuses $p probed with $e"; }
    done
  done
  rm -rf "$work/objects"
done
pass "$n fixture modules probed by the example probes assemble"

# A module of an older PTX ISA and target takes the probe's.
sed -e 's/^\.version .*/.version 7.0/' -e 's/^\.target sm_[0-9]*/.target sm_70/' \
  "$fx/kernels.ptx" > "$work/old.ptx"
"$tool" rewrite "$work/old.ptx" -o "$work/old-probed.ptx" --probe "$work/thread-count.ptx" > /dev/null ||
  fail "rewrite an old module with a probe"
expect_in "$work/old-probed.ptx" ".version 9."
expect_in "$work/old-probed.ptx" ".target sm_75"
"$PTXAS" -arch=sm_90 "$work/old-probed.ptx" -o "$work/old.cubin" 2> "$work/err" ||
  { cat "$work/err"; fail "ptxas refuses the raised module"; }
pass "an older module's .version and .target are raised to the probe's"

# Broken probes: one line each, naming the file.
cat > "$work/noprobe.cu" <<'CU'
#include <mgpu/probe.h>
__device__ int nothing;
CU
# add_to(float *, float) is a device function of the split fixtures too.
cat > "$work/clash.cu" <<'CU'
#include <mgpu/probe.h>
__device__ __noinline__ void add_to(float *p, float v) { *p += v; }
MGPU_PROBE_ENTRY(clash_probe, "*") { if (mgpu_block_edge()) add_to(nullptr, 1); }
CU
compile "$work/noprobe.cu" "$work/noprobe.ptx"
compile "$work/clash.cu" "$work/clash.ptx"
one_line_error 1 "noprobe.ptx: it declares no probe" "$tool" rewrite "$fx/split_kernels.ptx" -o "$work/x.ptx" --probe "$work/noprobe.ptx"
one_line_error 1 "its symbol _Z6add_toPff is the program's too; rename it" "$tool" rewrite "$fx/split_kernels.ptx" -o "$work/x.ptx" --probe "$work/clash.ptx"
one_line_error 1 "defines a kernel" "$tool" rewrite "$fx/split_kernels.ptx" -o "$work/x.ptx" --probe "$fx/split_kernels.ptx"
pass "a probe without probes, one that clashes and one with a kernel: one line each"

# mgpu-run compiles --probe before anything else, so this holds without a GPU
# (common.sh points it at the source tree and a cache of the test's own).
cat > "$work/broken.cu" <<'CU'
#include <mgpu/probe.h>
MGPU_PROBE_ENTRY(broken_probe, "*") { not_declared_anywhere(); }
CU
one_line_error 2 "probe $work/broken.cu does not compile: " "$MGPU_RUN" --probe "$work/broken.cu" true
expect_in "$work/err" "not_declared_anywhere"
one_line_error 2 "no built-in probe 'no-such-tool'; use launch-latency, block-time, thread-count" \
  "$MGPU_RUN" --probe no-such-tool true
one_line_error 2 "probe $work/noprobe.cu: it declares no probe" "$MGPU_RUN" --probe "$work/noprobe.cu" true
one_line_error 2 "probe $work/missing.cu: cannot read" "$MGPU_RUN" --probe "$work/missing.cu" true
MGPU_NVCC=/nonexistent/nvcc one_line_error 2 "no nvcc to compile it" "$MGPU_RUN" --probe thread-count true
# A built-in compiles once into the cache; the next run reuses it.
"$MGPU_RUN" -v --probe thread-count true > /dev/null 2> "$work/first" || true
"$MGPU_RUN" -v --probe thread-count true > /dev/null 2> "$work/second" || true
expect_in "$work/second" "compiled before"
pass "mgpu-run --probe: one-line errors for a broken, unknown, empty or missing probe and no nvcc; a cache"
