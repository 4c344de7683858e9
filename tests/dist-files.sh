#!/bin/sh
# The release tarball holds every file the repository tracks (a source
# file left out of Makefile.am builds from a checkout and fails from the
# tarball): make distdir, then every file of git ls-files must be in it,
# but for the repository's own dot files. Skipped outside a git checkout
# (a tarball's build has no list to compare with).
. "$(dirname "$0")/common.sh"
git -C "$top_srcdir" rev-parse --git-dir > /dev/null 2>&1 ||
  { echo "skipped: $top_srcdir is not a git checkout"; exit 77; }
make distdir distdir="$work/dist" > "$work/distdir.log" 2>&1 ||
  { tail -20 "$work/distdir.log"; fail "make distdir"; }
git -C "$top_srcdir" ls-files | grep -v -E '^\.(gitignore|clang-format)$' | sort > "$work/tracked"
(cd "$work/dist" && find . -type f | sed 's|^\./||' | sort) > "$work/shipped"
comm -23 "$work/tracked" "$work/shipped" > "$work/missing"
[ ! -s "$work/missing" ] ||
  { cat "$work/missing"; fail "$(wc -l < "$work/missing") tracked files are not in the tarball: add them to Makefile.am"; }
pass "the tarball holds every tracked file"
