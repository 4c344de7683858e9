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
params=$(grep -c '\.param \.align 8 \.b8 __mgpu_grid\[48\]' "$r")
[ "$entries" -eq 19 ] && [ "$params" -eq 19 ] || fail "$params of $entries kernels got __mgpu_grid"
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
expect_in "$work/plan" "constant kept per GPU, refreshed from the home copy: coefficients (64 bytes)"
pass "block offset, scope, device ordinal and module globals did their work"

# The analysis, kernel by kernel: one line each, "name | verdict | ...".
"$tool" list "$fx/split_kernels.ptx" > "$work/list" || fail "list split_kernels.ptx"
awk '/^kernels:/ { on = 1; next }
     !on { next }
     /^  [^ ]/ { if (k) print k; k = substr($0, 3); next }
     /^    [^ ]*; PTX:/ { next }
     /^    / { sub(/^    /, ""); k = k " | " $0; next }
     END { if (k) print k }' "$work/list" | sort > "$work/verdicts"
diff "$top_srcdir/$fx/split_kernels.expected" "$work/verdicts" ||
  fail "the analysis differs from $fx/split_kernels.expected"
expect_in "$work/list" "16 of 19 kernels can be split"
"$tool" list "$fx/split_kernels_rdc.o" > "$work/list" || fail "list the -rdc object"
expect_in "$work/list" "16 of 19 kernels can be split"
pass "the analysis gives each fixture kernel its expected verdict, with and without -rdc"

expect_status 1 "$tool" rewrite "$fx/kernels_default" -o "$work/x.ptx"
expect_in "$work/err" "is not PTX text; 'mgpu-ptx extract' gets the PTX out"
expect_status 2 "$tool" rewrite "$fx/kernels.ptx" -o "$work/x.ptx" --passes scope,frob
expect_in "$work/err" "unknown pass in 'scope,frob'"
expect_status 2 "$tool" rewrite "$fx/kernels.ptx"
expect_in "$work/err" "usage: mgpu-ptx rewrite IN.ptx -o OUT.ptx"
pass "bad input to rewrite gives one line and a status"
