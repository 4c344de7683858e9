#!/bin/sh
# mgpu's libcuda.so.1 exports every function the toolkit's driver stub
# exports, and has the driver's soname.
. "$(dirname "$0")/common.sh"
stub=$(sed -n 's/^CUDA_STUB_LIBCUDA = //p' Makefile)
shim="$top_builddir/src/.libs/libcuda.so.1"
[ -f "$stub" ] || fail "no driver stub at '$stub'"
[ -f "$shim" ] || fail "no shim at $shim"
nm -D --defined-only "$stub" | awk '$2 == "T" { print $3 }' | sort -u > "$work/stub"
nm -D --defined-only "$shim" | awk '$2 == "T" { print $3 }' | sort -u > "$work/shim"
missing=$(comm -23 "$work/stub" "$work/shim")
[ -z "$missing" ] || fail "the shim does not export: $missing"
extra=$(comm -13 "$work/stub" "$work/shim" | grep '^cu' || true)
[ -z "$extra" ] || fail "the shim exports driver-like names the stub does not: $extra"
pass "all $(wc -l < "$work/stub") driver functions are exported"
readelf -d "$shim" | grep -q 'Library soname: \[libcuda.so.1\]' || fail "the shim's soname is not libcuda.so.1"
pass "the shim's soname is libcuda.so.1"
