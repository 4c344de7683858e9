#!/bin/sh
# The documentation holds (no GPU needed): docs/environment.md is what
# docs/gen-environment.sh makes of mgpu-run --help; README.md stays at 250
# lines or fewer; every relative link of README.md, HACKING.md and docs/*.md
# names a file that exists; README.md and docs/*.md cite no issue numbers.
. "$(dirname "$0")/common.sh"
src=$top_srcdir

# The environment reference, regenerated from this build's mgpu-run.
sh "$src/docs/gen-environment.sh" "$MGPU_RUN" > "$work/environment.md" ||
  fail "docs/gen-environment.sh $MGPU_RUN failed"
if ! cmp -s "$src/docs/environment.md" "$work/environment.md"; then
  diff -u "$src/docs/environment.md" "$work/environment.md" >&2
  fail "docs/environment.md is not mgpu-run --help's table: run docs/gen-environment.sh src/mgpu-run > docs/environment.md"
fi
pass "docs/environment.md is mgpu-run --help's table"

# A short README: the rest belongs in docs/.
lines=$(wc -l < "$src/README.md")
[ "$lines" -le 250 ] || fail "README.md has $lines lines, more than 250: move sections to docs/"
pass "README.md has $lines lines"

# links FILE: the targets of FILE's Markdown links, one a line: inline
# links [text](target "title") and reference definitions [label]: target,
# outside fenced code blocks and code spans.
links() {
  awk '/^ *```/ { fenced = !fenced; next } !fenced' "$1" |
    sed 's/`[^`]*`//g' > "$work/text"
  {
    grep -o '\]([^)]*)' "$work/text" | sed 's/^](//; s/)$//'
    sed -n 's/^ \{0,3\}\[[^]]*\]: *\([^ ]*\).*/\1/p' "$work/text"
  } | sed 's/^<//; s/>$//; s/ .*//'
}

# Every relative link names a file or directory (its #anchor left out).
cd "$src" || fail "cannot enter $src"
: > "$work/broken"
for f in README.md HACKING.md docs/*.md; do
  [ -f "$f" ] || { echo "$f: missing" >> "$work/broken"; continue; }
  dir=$(dirname "$f")
  links "$f" | while read -r target; do
    case $target in
      '' | '#'* | *://* | mailto:*) continue ;;
    esac
    path=${target%%#*}
    case $path in
      /*) resolved=".$path" ;;
      *) resolved="$dir/$path" ;;
    esac
    [ -e "$resolved" ] || echo "$f: link to $target: no such file" >> "$work/broken"
  done
done
if [ -s "$work/broken" ]; then
  cat "$work/broken" >&2
  fail "broken links in the documentation"
fi
pass "every relative link of README.md, HACKING.md and docs/*.md names a file"

# The user's documents describe the program, not its history.
if grep -n -i -E 'issues? #?[0-9]' README.md docs/*.md > "$work/issues"; then
  cat "$work/issues" >&2
  fail "README.md or docs/ cite issue numbers"
fi
pass "no issue numbers in README.md and docs/"
