#!/bin/sh
# The PTX parser, printer, passes and analysis on PTX that nvcc makes. No GPU
# needed; ptxas checks the output:
# - printed unchanged, every PTX assembles to the same cubin as nvcc's own;
# - rewritten with every pass, it assembles for sm_90 (-c for -rdc code);
# - the passes did what they say (grid registers, scopes, globals);
# - `mgpu-ptx list` gives each fixture kernel its expected verdict.
. "$(dirname "$0")/common.sh"
tool="$top_builddir/src/ptx/mgpu-ptx"
fx=tests/ptx
PTXAS="${CUDA_HOME}/bin/ptxas"
[ -x "$PTXAS" ] || fail "no ptxas at $PTXAS"

# Every PTX object of the fixtures, as files: the compress modes and -rdc of
# kernels.cu, the split fixtures as an object file, with -rdc, and as PTX.
mkdir "$work/ptx"
n=0
for image in "$fx/kernels_default" "$fx/kernels_speed" "$fx/kernels_size" "$fx/kernels_none" \
             "$fx/kernels_rdc" "$fx/split_kernels.o" "$fx/split_kernels_rdc.o"; do
  "$tool" extract "$image" -o "$work/objects" > "$work/written" || fail "extract $image"
  for p in $(grep '\.ptx$' "$work/written"); do
    n=$((n + 1))
    case $image in *rdc*) cp "$p" "$work/ptx/$n.rdc.ptx" ;; *) cp "$p" "$work/ptx/$n.ptx" ;; esac
  done
  rm -rf "$work/objects"
done
cp "$fx/split_kernels.ptx" "$work/ptx/split.ptx"
cp "$fx/kernels_rdc.ptx" "$work/ptx/kernels.rdc.ptx"

for p in "$work"/ptx/*.ptx; do
  case $p in *.rdc.ptx) c=-c ;; *) c= ;; esac
  "$PTXAS" $c -arch=sm_90 "$p" -o "$work/original.cubin" 2> "$work/err" ||
    { cat "$work/err"; fail "ptxas refuses nvcc's own PTX $p"; }
  "$tool" rewrite "$p" -o "$work/printed.ptx" --passes none > /dev/null || fail "print $p"
  "$PTXAS" $c -arch=sm_90 "$work/printed.ptx" -o "$work/printed.cubin" 2> "$work/err" ||
    { cat "$work/err"; fail "ptxas refuses the printed $p"; }
  cmp -s "$work/original.cubin" "$work/printed.cubin" ||
    fail "$p printed unchanged assembles to different machine code"
  "$tool" rewrite "$p" -o "$work/rewritten.ptx" > /dev/null || fail "rewrite $p"
  "$PTXAS" $c -arch=sm_90 "$work/rewritten.ptx" -o "$work/rewritten.cubin" 2> "$work/err" ||
    { cat "$work/err"; fail "ptxas refuses the rewritten $p"; }
done
[ $n -ge 7 ] || fail "only $n PTX objects in the fixtures"
pass "$((n + 2)) PTX files: printed unchanged, the same cubin; rewritten, they assemble for sm_90"

# What the passes did to the split fixtures.
"$tool" rewrite "$fx/split_kernels.ptx" -o "$work/split.ptx" > "$work/plan" || fail "rewrite"
r="$work/split.ptx"
entries=$(grep -c '^\.visible \.entry' "$r")
params=$(grep -c '\.param \.align 8 \.b8 __mgpu_grid\[56\]' "$r")
[ "$entries" -eq 22 ] && [ "$params" -eq 22 ] || fail "$params of $entries kernels got __mgpu_grid"
# (The one read of %nctaid.x left on purpose: a grid-stride loop's step
# over the slice's own blocks.)
grep '%n*ctaid\.[xyz]' "$r" | grep -v 'mov\.u32[[:space:]]*%__mgpu_ctaid_[xyz], %ctaid\.[xyz];' |
  grep -v 'mov\.u32[[:space:]]*%__mgpu_nb, %nctaid\.x;' \
  > "$work/raw" && { cat "$work/raw"; fail "a read of %ctaid or %nctaid was left"; }
# grid_stride_saxpy's loop (32-bit i) runs the slice's iterations when
# __mgpu_grid says so: i from the slice's first, by the slice's threads,
# to the slice's end.
[ "$(grep -c 'mov\.u32[[:space:]]*%__mgpu_nb, %nctaid\.x;' "$r")" -eq 1 ] ||
  fail "not exactly one grid-stride loop was rewritten"
expect_in "$r" "@%__mgpu_on sub.s32 	%r"
expect_in "$r" "ld.param.u32 	%__mgpu_w, [__mgpu_grid+32];"
expect_in "$r" "@%__mgpu_on mul.lo.u32 	%r"
expect_in "$r" "ld.param.u32 	%__mgpu_end, [__mgpu_grid+40];"
expect_in "$r" "selp.b32 	%__mgpu_end, %__mgpu_end, %r"
expect_in "$r" "ld.param.u32 	%__mgpu_nctaid_x, [__mgpu_grid+12];"
# The device function reads blockIdx: its kernel copies __mgpu_grid to
# shared memory; only that kernel does.
expect_in "$r" ".shared .align 4 .b8 __mgpu_grid_shared[24];"
expect_in "$r" "ld.shared.u32 	%__mgpu_ctaid_x_offset, [__mgpu_grid_shared+0];"
[ "$(grep -c 'st.shared.u32 	\[__mgpu_grid_shared+0\]' "$r")" -eq 1 ] ||
  fail "not exactly one kernel copies the grid to shared memory"
grep -E 'membar\.gl|\.gpu\.|atom\.global|red\.global' "$r" > "$work/raw" &&
  { cat "$work/raw"; fail "a GPU-scope fence or atomic was left"; }
expect_in "$r" "membar.sys;"
expect_in "$r" "atom.sys.global.add.u32"
expect_in "$r" "atom.add.release.sys.u32"
expect_in "$r" "ld.acquire.sys.u32"
[ "$(grep -c 'launch_counter' "$r")" -eq 1 ] || fail "launch_counter is still used directly"
expect_in "$r" "ld.const.u64 	%__mgpu_global_0, [__mgpu_globals+0];"
expect_in "$r" ".const .align 8 .u64 __mgpu_globals[1];"
expect_in "$r" ".visible .const .align 4 .u32 __mgpu_device_ordinal;"
expect_in "$work/plan" "redirected to the home GPU: launch_counter"
expect_in "$work/plan" "constant kept per GPU, refreshed from the home module: coefficients (64 bytes)"
pass "block offset, scope, device ordinal and module globals did their work"

# The analysis, kernel by kernel: one line each, "name | verdict | ...".
"$tool" list "$fx/split_kernels.ptx" > "$work/list" || fail "list split_kernels.ptx"
awk '/^kernels:/ { on = 1; next }
     !on { next }
     /^  [^ ]/ { if (k) print k; k = substr($0, 3); next }
     /^    [^ ]*; PTX:/ { next }
     /^    footprint/ { next }
     /^    / { sub(/^    /, ""); k = k " | " $0; next }
     END { if (k) print k }' "$work/list" | sort > "$work/verdicts"
diff "$top_srcdir/$fx/split_kernels.expected" "$work/verdicts" ||
  fail "the analysis differs from $fx/split_kernels.expected"
expect_in "$work/list" "19 of 22 kernels can be split"
# Footprints (ptx/ptx_footprint.h): what a slice reads and writes, per pointer.
expect_in "$work/list" "    footprint of param 0: stores at s32((ctaid.y*ntid.y + tid.y)*param1 + ctaid.x*ntid.x + tid.x)*4 (4 B)"
expect_in "$work/list" "    footprint of param 0: loads at s32(ctaid.x*ntid.x + tid.x)*8 (8 B); stores at s32(ctaid.x*ntid.x + tid.x)*8 (8 B)"
expect_in "$work/list" "    footprint of param 2: loads anywhere; stores anywhere"
expect_match "$work/list" "^    footprint: every buffer whole: an access through a pointer not traced to a parameter"
expect_in "$work/list" "    footprint: every buffer whole: a call"
pass "list: each splittable kernel's footprint, per pointer; a loop's, a chased pointer's and a call's widened"
"$tool" list "$fx/split_kernels_rdc.o" > "$work/list" || fail "list the -rdc object"
expect_in "$work/list" "19 of 22 kernels can be split"
pass "the analysis gives each fixture kernel its expected verdict, with and without -rdc"

expect_status 1 "$tool" rewrite "$fx/kernels_default" -o "$work/x.ptx"
expect_in "$work/err" "is not PTX text; 'mgpu-ptx extract' gets the PTX out"
expect_status 2 "$tool" rewrite "$fx/kernels.ptx" -o "$work/x.ptx" --passes scope,frob
expect_in "$work/err" "unknown pass in 'scope,frob'"
expect_status 2 "$tool" rewrite "$fx/kernels.ptx"
expect_in "$work/err" "usage: mgpu-ptx rewrite IN.ptx -o OUT.ptx"
pass "bad input to rewrite gives one line and a status"

# The cost of `list`: 60 000 tiny kernels (6 MB) took 20 s in a sanitizer
# build when each kernel was looked up by scanning every row; now ~2 s.
# The bound is generous for 2 cores under sanitizers.
awk 'BEGIN {
  print ".version 8.0\n.target sm_90\n.address_size 64";
  for (k = 0; k < 60000; k++)
    printf ".visible .entry k%d(.param .u64 k%d_p)\n{\n.reg .b64 %%rd<2>;\nld.param.u64 %%rd1, [k%d_p];\nret;\n}\n", k, k, k }' \
  > "$work/many.ptx"
started=$(date +%s%N)
"$tool" list "$work/many.ptx" > "$work/list" || fail "list 60 000 kernels"
took_ms=$(( ($(date +%s%N) - started) / 1000000 ))
expect_in "$work/list" "60000 of 60000 kernels can be split"
[ "$took_ms" -lt 10000 ] || fail "list of 60 000 kernels took $took_ms ms"
# A kernel over the analysis's budget (6 000 tests of i before its loop,
# pairing them costs 18 million steps) is too complex to analyse, soon.
awk 'BEGIN {
  print ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry guarded(.param .u32 n_param)\n{";
  print ".reg .pred %p<8>;\n.reg .b32 %r<16>;\n$L__top:\nld.param.u32 %r1, [n_param];";
  print "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\nmad.lo.s32 %r5, %r2, %r3, %r4;";
  print "mov.u32 %r6, %nctaid.x;\nmul.lo.s32 %r7, %r6, %r3;";
  for (k = 0; k < 6000; k++) print "setp.ge.u32 %p3, %r5, %r1;\n@%p3 bra $L__top;";
  print "setp.ge.u32 %p1, %r5, %r1;\n@%p1 bra $L__done;\n$L__loop:\nadd.s32 %r5, %r5, %r7;";
  print "setp.lt.u32 %p2, %r5, %r1;\n@%p2 bra $L__loop;\n$L__done:\nret;\n}" }' > "$work/guarded.ptx"
started=$(date +%s%N)
"$tool" list "$work/guarded.ptx" > "$work/list" || fail "list the guarded kernel"
took_ms=$(( ($(date +%s%N) - started) / 1000000 ))
expect_in "$work/list" "cannot be split: too complex to analyse (its grid-stride loop search is over budget)"
[ "$took_ms" -lt 5000 ] || fail "the kernel over budget took $took_ms ms"
pass "list: 60 000 kernels, and a kernel over the analysis's budget, each in bounded time"

# Running out of memory is never a verdict. `list` once called every kernel
# unsplittable when memory ran out in the rewrite (it took the failure for
# one of the PTX's: "0 of 3000 kernels can be split" between about 48 and
# 58 MiB here): under rising limits on its address space, each run either
# gives the whole verdict or says it ran out of memory, with status 1.
awk 'BEGIN {
  print ".version 8.0\n.target sm_90\n.address_size 64";
  for (k = 0; k < 3000; k++) {
    printf ".visible .entry k%d(.param .u64 k%d_y, .param .u64 k%d_x, .param .f32 k%d_a, .param .u32 k%d_n)\n{\n", k, k, k, k, k;
    print ".reg .pred %p<2>;\n.reg .f32 %f<5>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<8>;";
    printf "ld.param.u64 %%rd1, [k%d_y];\nld.param.u64 %%rd2, [k%d_x];\nld.param.f32 %%f1, [k%d_a];\nld.param.u32 %%r2, [k%d_n];\n", k, k, k, k;
    print "mov.u32 %r3, %ctaid.x;\nmov.u32 %r4, %ntid.x;\nmov.u32 %r5, %tid.x;\nmad.lo.s32 %r1, %r3, %r4, %r5;";
    print "setp.ge.u32 %p1, %r1, %r2;\n@%p1 bra $L_end;\ncvta.to.global.u64 %rd3, %rd1;\ncvta.to.global.u64 %rd4, %rd2;";
    print "mul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd6, %rd4, %rd5;\nld.global.f32 %f2, [%rd6];\nadd.s64 %rd7, %rd3, %rd5;";
    print "ld.global.f32 %f3, [%rd7];\nfma.rn.f32 %f4, %f2, %f1, %f3;\nst.global.f32 [%rd7], %f4;\n$L_end:\nret;\n}" } }' \
  > "$work/axpys.ptx"
# Coarse steps up to the first limit that is enough, then eight steps
# between it and the last that was not, where the rewrite (a second parse)
# is what runs out.
list_under() { # list_under KIB: prints oom or verdict, fails on anything else
  (ulimit -v "$1"; exec "$tool" list "$work/axpys.ptx") > "$work/list" 2> "$work/err"
  status=$?
  if [ $status -eq 0 ]; then
    expect_in "$work/list" "3000 of 3000 kernels can be split"
    echo verdict; return
  fi
  [ $status -eq 1 ] || { cat "$work/err" >&2; fail "list under a $1 KiB limit exited $status"; }
  grep -q "out of memory" "$work/err" || { cat "$work/err" >&2; fail "list under $1 KiB failed without saying it ran out of memory"; }
  ! grep -q "can be split" "$work/list" || fail "list under $1 KiB gave a verdict after running out of memory"
  echo oom
}
low=16384
outcome=$(list_under $low) || exit 1
[ "$outcome" = oom ] || fail "list needs less than $low KiB: the test cannot reach out of memory"
high=$((low * 5 / 4))
while outcome=$(list_under $high) || exit 1; [ "$outcome" = oom ]; do
  low=$high high=$((high * 5 / 4))
  [ $high -lt 4194304 ] || fail "list ran out of memory even with $high KiB"
done
tried=0
for step in 1 2 3 4 5 6 7 8; do
  list_under $((low + (high - low) * step / 9)) > /dev/null || exit 1
  tried=$((tried + 1))
done
pass "list: out of memory is said, never taken for a verdict ($low to $high KiB in $tried steps)"

# PTX the parser refuses (blocks nested deeper than it takes) is said in
# one line, not called out of memory, and its kernel stays unanalysed.
awk 'BEGIN {
  print ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry deep()\n{";
  for (k = 0; k < 300; k++) printf "{"; for (k = 0; k < 300; k++) printf "}";
  print "\nret;\n}" }' > "$work/deep.ptx"
"$tool" list "$work/deep.ptx" > "$work/list" 2> "$work/err" || { cat "$work/err"; fail "list a deeply nested kernel"; }
expect_in "$work/err" "PTX cannot be parsed: line 6: blocks nested deeper than 256"
[ "$(wc -l < "$work/err")" -eq 1 ] || fail "more than one line about the nested PTX"
expect_in "$work/list" "cannot be split: its PTX could not be analysed"
pass "list: PTX nested too deep is named in one line, its kernel left whole"
