#!/bin/sh
# The runtime's layers hold (HACKING.md and docs/ARCHITECTURE.md): folders lowest
# first, base/ < ptx/ and partition/ < memory/ < mirror/ < probes/ <
# modules/ < sched/ < blas/ < src/. A file includes only from its own
# folder or a lower layer (ptx/ and partition/ are peers, the folders of
# src/ one layer); every include of a header of the tree names its folder
# ("memory/memory_pool.h"); only src/hooks/ defines driver hooks; and no
# two files reach each other through their headers, directly or round a
# longer loop. Checked on the source tree, then on a copy with an upward
# include planted, which must fail and name it.
#   tests/layers.sh [TREE]   (default: the source tree)
. "$(dirname "$0")/common.sh"

# layer_check TREE: prints one line per broken rule; exits 1 if any.
layer_check() {
  (
    cd "$1" || exit 2
    for f in $(find base ptx partition memory mirror probes modules sched blas src \
                 -name '*.[ch]' -not -path 'probes/include/*' | sort); do
      sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
        while read -r inc; do echo "$f $inc"; done
    done > "$work/includes"
    find base ptx partition memory mirror probes modules sched blas src -name '*.[ch]' \
      -not -path 'probes/include/*' | sort > "$work/files"
    # Hooks: hook_cuX functions and MGPU_DECLARE_HOOK outside src/hooks/.
    grep -l -E '^(static )?CUresult CUDAAPI hook_cu|MGPU_DECLARE_HOOK\(' $(cat "$work/files") |
      grep -v '^src/hooks/' | sed 's/^/hook outside src\/hooks: /'
    awk -v files="$work/files" '
      function layer(path,   top) {
        split(path, part, "/"); top = part[1]
        if (top == "base") return 0
        if (top == "ptx" || top == "partition") return 1
        if (top == "memory") return 2
        if (top == "mirror") return 3
        if (top == "probes") return 4
        if (top == "modules") return 5
        if (top == "sched") return 6
        if (top == "blas") return 7
        if (top == "src") return 8
        return -1
      }
      function folder(path) { sub(/\/[^\/]*$/, "", path); return path }
      function unit(path) { sub(/\.[ch]$/, "", path); return path }
      BEGIN {
        while ((getline line < files) > 0) { known[line] = 1; n = split(line, p, "/"); byname[p[n]] = line }
      }
      {
        from = $1; inc = $2
        if (!(inc in known)) {
          n = split(inc, p, "/")
          if (index(inc, "/") == 0 && (p[n] in byname))
            printf "%s: includes \"%s\" without its folder (\"%s\")\n", from, inc, byname[p[n]]
          next
        }
        lf = layer(from); li = layer(inc)
        if (li > lf || (li == lf && lf != 8 && folder(from) != folder(inc)))
          printf "%s: includes %s, which is not below it\n", from, inc
        a = unit(from); b = unit(inc)
        if (a != b && !((a, b) in edge)) { edge[a, b] = 1; out[a] = out[a] " " b }
      }
      # A loop: a unit that reaches itself through the units its files include.
      function visit(u,   list, k, i, v) {
        state[u] = 1; stack[++depth] = u
        k = split(out[u], list, " ")
        for (i = 1; i <= k; i++) {
          v = list[i]
          if (state[v] == 1) {
            for (j = depth; j >= 1 && stack[j] != v; j--) ;
            msg = stack[j]; for (j++; j <= depth; j++) msg = msg " -> " stack[j]
            printf "loop: %s -> %s\n", msg, v
          } else if (state[v] == 0) visit(v)
        }
        state[u] = 2; depth--
      }
      END { for (u in out) if (state[u] == 0) visit(u) }
    ' "$work/includes"
  ) > "$work/broken"
  [ ! -s "$work/broken" ]
}

if ! layer_check "${1:-$top_srcdir}"; then
  cat "$work/broken"
  fail "the layers do not hold ($(wc -l < "$work/broken") broken rules)"
fi
pass "every include names its folder and comes from its own folder or a lower layer; hooks only in src/hooks; no loops between files"

# The check itself: a copy of the tree with base/log.c including a header of
# sched/ must fail, naming that include.
mkdir "$work/tree"
(cd "${1:-$top_srcdir}" && tar cf - base ptx partition memory mirror probes modules sched blas src) |
  (cd "$work/tree" && tar xf -)
printf '#include "sched/split_launch.h"\n' >> "$work/tree/base/log.c"
layer_check "$work/tree" && fail "an upward include planted in base/log.c went unseen"
grep -q 'base/log.c: includes sched/split_launch.h, which is not below it' "$work/broken" ||
  { cat "$work/broken"; fail "the planted include was not named"; }
pass "an upward include planted in base/log.c is found and named"

# Every folder of the layers has a README whose table names each of its
# source files (a header by its own name or by its .c's), so that a reader
# finds what a file owns from its folder.
readme_check() {
  (
    cd "$1" || exit 2
    for d in base ptx partition memory mirror probes modules sched blas src src/hooks src/report \
             src/shim src/run src/info src/ptx; do
      [ -f "$d/README.md" ] || { echo "$d/ has no README.md"; continue; }
      for f in "$d"/*.c "$d"/*.h "$d"/*.sh; do
        [ -f "$f" ] || continue
        b=$(basename "$f"); stem=${b%.*}
        pair=$b
        case $b in *.h) [ -f "$d/$stem.c" ] && pair=$stem.c ;; esac
        grep -q -e "\`$b\`" -e "\`$pair\`" "$d/README.md" ||
          echo "$f is not named in $d/README.md"
      done
    done
  ) > "$work/unnamed"
  [ ! -s "$work/unnamed" ]
}
readme_check "${1:-$top_srcdir}" || { cat "$work/unnamed"; fail "folders' READMEs miss files"; }
: > "$work/tree/partition/unnamed_file.c"
readme_check "$work/tree" && fail "a file planted in partition/ went unseen by the README check"
grep -q 'partition/unnamed_file.c is not named in partition/README.md' "$work/unnamed" ||
  { cat "$work/unnamed"; fail "the planted file was not named"; }
pass "every folder of the layers has a README naming each of its files"
