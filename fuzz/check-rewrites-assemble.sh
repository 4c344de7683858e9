#!/bin/sh
# Rewritten valid PTX still assembles: every file of the given directories
# that ptxas assembles as it is (the seeds, and up to MAX of the rewrite
# fuzzer's corpus) is rewritten with all of mgpu's passes and must assemble
# again. Prints how many were checked; fails naming each that did not.
#   fuzz/check-rewrites-assemble.sh DIR... (env: MGPU_PTX, PTXAS, ARCH=sm_90, MAX=200)
set -u
mgpu_ptx=${MGPU_PTX:-src/ptx/mgpu-ptx}
ptxas=${PTXAS:-ptxas}
arch=${ARCH:-sm_90}
max=${MAX:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
checked=0 skipped=0 failed=0
for dir in "$@"; do
  [ -d "$dir" ] || continue
  for f in $(ls "$dir" | head -n "$max"); do
    "$ptxas" -arch="$arch" -o "$work/plain.cubin" "$dir/$f" > /dev/null 2>&1 || { skipped=$((skipped + 1)); continue; }
    if "$mgpu_ptx" rewrite "$dir/$f" -o "$work/rewritten.ptx" > "$work/err" 2>&1 &&
       "$ptxas" -arch="$arch" -o "$work/rewritten.cubin" "$work/rewritten.ptx" >> "$work/err" 2>&1; then
      checked=$((checked + 1))
    else
      echo "FAIL: $dir/$f assembles, its rewrite does not:" >&2
      head -n 5 "$work/err" >&2
      failed=$((failed + 1))
    fi
  done
done
echo "check-rewrites-assemble: $checked rewritten files assembled ($skipped inputs ptxas refuses as they are, not checked)"
[ "$failed" -eq 0 ]
