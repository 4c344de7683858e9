#!/bin/sh
# mgpu-ptx on the images nvcc makes: every --compress-mode (zstd, LZ4, none),
# -rdc, machine code only, a cubin, a fatbin and PTX text; its PTX must be the
# PTX nvcc writes (up to comments and spacing). Corrupt input gives a one-line
# error, not a crash. No GPU needed.
. "$(dirname "$0")/common.sh"
tool="$top_builddir/src/ptx/mgpu-ptx"
fx=tests/ptx

# PTX with comments and spacing removed, one statement per line.
normalize() { sed -e 's://.*$::' "$1" | tr -s ' \t\n' ' ' | sed -e 's/ *\([;{}]\) */\1\n/g' | sed '/^ *$/d'; }
normalize "$fx/kernels.ptx" > "$work/reference"
normalize "$fx/kernels_rdc.ptx" > "$work/reference_rdc"
[ -s "$work/reference" ] && [ -s "$work/reference_rdc" ] || fail "no reference PTX"

kernels="_Z4axpyPfPKffi _Z4fillIfEvPT_S0_i _Z4fillIiEvPT_S0_i _Z12count_launchv"
check_list() { # FILE STORED
  "$tool" list "$1" > "$work/list" 2>&1 || { cat "$work/list"; fail "mgpu-ptx list $1"; }
  expect_in "$work/list" "kernels: 4"
  for k in $kernels; do expect_in "$work/list" "$k; PTX: compute_90; machine code: sm_90"; done
  expect_in "$work/list" "axpy(float*, float const*, float, int)"
  expect_in "$work/list" "PTX ISA 9.0 for compute_90"
  [ -z "$2" ] || expect_match "$work/list" "PTX ISA [0-9.]+ for compute_90, [0-9]+ bytes, stored $2"
}
check_extract() { # FILE [REFERENCE]
  rm -rf "$work/objects"
  "$tool" extract "$1" -o "$work/objects" > "$work/written" || fail "mgpu-ptx extract $1"
  ptx=$(grep '\.ptx$' "$work/written" | head -1)
  [ -n "$ptx" ] || fail "no PTX extracted from $1"
  normalize "$ptx" > "$work/extracted"
  reference=${2:-$work/reference}
  cmp -s "$reference" "$work/extracted" || {
    diff "$reference" "$work/extracted" | head -20; fail "the PTX in $1 differs from nvcc's"; }
}

for mode in default speed size none; do
  case $mode in default|size) stored=zstd ;; speed) stored=lz4 ;; none) stored=uncompressed ;; esac
  check_list "$fx/kernels_$mode" $stored
  check_extract "$fx/kernels_$mode"
  pass "--compress-mode=$mode: 4 kernels, PTX stored $stored, extracted as nvcc wrote it"
done

check_list "$fx/kernels_rdc" ""
expect_match "$work/list" "__nv_relfatbin #[0-9]+: PTX ISA"
check_extract "$fx/kernels_rdc" "$work/reference_rdc"
pass "-rdc: the PTX comes from __nv_relfatbin, as nvcc -rdc=true -ptx writes it"

"$tool" list "$fx/kernels_sass" > "$work/list" 2>&1 || fail "mgpu-ptx list kernels_sass"
expect_in "$work/list" "_Z4axpyPfPKffi; PTX: none; machine code: sm_90"
expect_in "$work/list" "cannot be split: no PTX, machine code only"
expect_in "$work/list" "0 of 4 kernels can be split"
pass "a program with machine code only: its kernels cannot be split"

"$tool" list "$fx/kernels.cubin" > "$work/list" || fail "list cubin"
expect_in "$work/list" "cubin, 1 code object"
expect_in "$work/list" "_Z12count_launchv; PTX: none; machine code: sm_90"
"$tool" list "$fx/kernels.fatbin" > "$work/list" || fail "list fatbin"
expect_in "$work/list" "fatbin, 2 code objects"
expect_in "$work/list" "_Z4axpyPfPKffi; PTX: compute_90; machine code: sm_90"
check_extract "$fx/kernels.fatbin"
"$tool" list "$fx/kernels.ptx" > "$work/list" || fail "list ptx"
expect_in "$work/list" "PTX, 1 code object"
expect_in "$work/list" "kernels: 4"
pass "a cubin, a fatbin and a PTX file"

"$tool" list examples/vector_add > "$work/list" || fail "list examples/vector_add"
expect_in "$work/list" "_Z10vector_addPKfS0_Pfm; PTX: compute_90; machine code: sm_90"
expect_in "$work/list" "can be split"
# Its fourth parameter is a size_t, not a pointer.
grep -q -x "    pointer parameters: 0 load, 1 load, 2 store" "$work/list" ||
  { cat "$work/list"; fail "the pointer parameters of vector_add are 0, 1 and 2, and no other"; }
expect_in "$work/list" "8-byte parameters not used as addresses: 3"
expect_in "$work/list" "read only, replicated with MGPU_MIRROR=always: 0, 1"
expect_in "$work/list" "1 of 1 kernel can be split"
pass "the example's kernel has PTX and can be split"

expect_status 1 "$tool" list "$top_srcdir/README.md"
expect_in "$work/err" "not GPU code"
size=$(wc -c < "$fx/kernels.fatbin")
for cut in 8 40 100 $((size / 2)) $((size - 3)); do
  head -c $cut "$fx/kernels.fatbin" > "$work/cut.fatbin"
  "$tool" list "$work/cut.fatbin" > "$work/out" 2> "$work/err"
  status=$?
  [ $status -eq 1 ] || fail "a fatbin cut at $cut bytes gave status $status"
  [ "$(wc -l < "$work/err")" -eq 1 ] || fail "a fatbin cut at $cut bytes: not one line of error"
  expect_in "$work/err" "truncated fatbin"
done
# A cubin or a program cut short is an error (status 1, one line) for list
# and extract alike, not a file listed with kernels missing.
for file in "$fx/kernels.cubin" "$fx/kernels_default"; do
  size=$(wc -c < "$file")
  for cut in 100 $((size / 2)) $((size - 1)); do
    head -c $cut "$file" > "$work/cut"
    one_line_error 1 "truncated" "$tool" list "$work/cut"
    rm -rf "$work/cut-objects"
    one_line_error 1 "truncated" "$tool" extract "$work/cut" -o "$work/cut-objects"
  done
done
# No kernels at all: an empty table to sort (qsort with a NULL base before,
# which UBSan reports in a sanitizer build of the tool).
printf '.version 8.0\n.target sm_90\n.address_size 64\n' > "$work/empty.ptx"
"$tool" list "$work/empty.ptx" > "$work/list" || fail "list a PTX file without kernels"
expect_in "$work/list" "0 of 0 kernels can be split"
expect_status 2 "$tool" frobnicate x
expect_in "$work/err" "unknown command 'frobnicate'"
expect_status 2 "$tool" extract "$fx/kernels.ptx"
pass "bad input gives one line and a status, no crash"
