#!/bin/sh
# What make install leaves, in a staging directory (DESTDIR): the tools,
# mgpu's libraries where mgpu-run looks for them, the headers under
# include/mgpu/, mgpu.pc for pkg-config (a program built with its flags
# calls mgpu_version()), the man pages (where help2man was found) that man
# can show, the license, and the examples and topology samples under
# share/mgpu/; and the installed mgpu-run runs a program on the fake GPU.
# No GPU needed.
. "$(dirname "$0")/common.sh"
prefix=$(sed -n 's/^prefix = //p' Makefile)
root="$work/root"
make install DESTDIR="$root" > "$work/install.log" 2>&1 ||
  { tail -30 "$work/install.log"; fail "make install DESTDIR=$root"; }
p="$root$prefix"
for f in bin/mgpu-run bin/mgpu-info bin/mgpu-ptx lib/mgpu/libcuda.so.1 lib/mgpu/mgpu_audit.so \
         lib/mgpu/libmgpu-blas.so include/mgpu/mgpu.h include/mgpu/probe.h lib/pkgconfig/mgpu.pc \
         share/doc/mgpu/README.md share/doc/mgpu/LICENSE share/mgpu/examples/vector_add.cu \
         share/mgpu/topology/nvswitch-8gpu.xml; do
  [ -e "$p/$f" ] || fail "make install left no $f under the prefix"
done
pass "make install: the tools, the libraries, include/mgpu/, mgpu.pc, the license, share/mgpu/"

if command -v pkg-config > /dev/null 2>&1; then
  flags=$(PKG_CONFIG_PATH="$p/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" pkg-config --cflags --libs mgpu) ||
    fail "pkg-config --cflags --libs mgpu"
  printf '#include <mgpu/mgpu.h>\n#include <stdio.h>\nint main(void) { printf("%%s\\n", mgpu_version()); return 0; }\n' > "$work/v.c"
  ${CC:-cc} "$work/v.c" -o "$work/v" $flags -Wl,-rpath,"$p/lib" > "$work/cc.log" 2>&1 ||
    { cat "$work/cc.log"; fail "a program built with pkg-config's flags for mgpu"; }
  "$work/v" > "$work/v.out" 2>&1 || { cat "$work/v.out"; fail "the program built against the installed libmgpu"; }
  expect_in "$work/v.out" "$(sed -n 's/^PACKAGE_VERSION = //p' Makefile)"
  pass "pkg-config --cflags --libs mgpu builds a program that calls mgpu_version()"
else
  echo "skipped: pkg-config is not installed"
fi

if grep -q '^HELP2MAN = .' Makefile; then
  for t in mgpu-run mgpu-info mgpu-ptx; do
    [ -s "$p/share/man/man1/$t.1" ] || fail "no man page $t.1"
    if command -v man > /dev/null 2>&1; then
      MANWIDTH=80 man -l "$p/share/man/man1/$t.1" > "$work/man.out" 2> /dev/null ||
        fail "man -l $t.1"
      expect_in "$work/man.out" "$t -"
    fi
  done
  pass "man pages of mgpu-run, mgpu-info and mgpu-ptx, shown by man -l"
else
  echo "skipped: the man pages (configure found no help2man)"
fi

# The installed tools run a program: the staged mgpu-run (told where its
# libraries were staged, which installed it finds under its prefix) runs
# the fake GPU's test client split over two entries, as the README's first
# command runs an example on a GPU.
use_fake_driver
LD_LIBRARY_PATH="$p/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" MGPU_LIBDIR="$p/lib/mgpu" \
  MGPU_SPLIT=always "$p/bin/mgpu-run" --gpus 0x2 --report \
  tests/fake/fake_gpu_client > "$work/run.out" 2>&1 ||
  { cat "$work/run.out"; fail "the installed mgpu-run running the fake GPU's test client"; }
expect_in "$work/run.out" "results correct"
expect_match "$work/run.out" "^slices run: [1-9][0-9]*, on 2 GPUs$"
pass "the installed mgpu-run runs a program over two entries, with its report"
