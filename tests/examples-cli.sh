#!/bin/sh
# The examples' command lines, without a GPU: an unknown argument, a missing
# or bad number, or a size the example cannot run gives a usage line on
# stderr and status 2, and --help the usage on stdout and status 0, all before
# any CUDA call. (tests/gpu-examples.sh checks their results on GPUs.)
. "$(dirname "$0")/common.sh"
examples="vector_add saxpy jacobi2d sgemm histogram reduction nbody driver_api"

# driver_api is linked with -lcuda; where no driver is installed the toolkit's
# stub library lets it start (it makes no driver call here).
mkdir "$work/stubs"
for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/lib/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs"; do
  if [ -f "$d/libcuda.so" ]; then ln -s "$d/libcuda.so" "$work/stubs/libcuda.so.1"; break; fi
done
LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$work/stubs"
export LD_LIBRARY_PATH

for ex in $examples; do
  prog=examples/$ex
  expect_status 0 "$prog" --help
  expect_in "$work/out" "usage: $ex [--quick] [--size N] [--iterations N] [--repeats N]"
  for args in "--bogus" "--size" "--size 0" "--size 12x" "--iterations 0" "--repeats -1" \
              "--repeats 1001" "--quick extra"; do
    # shellcheck disable=SC2086 # the words of $args are separate arguments
    expect_status 2 "$prog" $args
    expect_in "$work/err" "usage: $ex "
  done
  pass "$ex: --help, and status 2 with the usage for bad arguments"
done

expect_status 2 examples/sgemm --size 100
expect_in "$work/err" "multiple of 32"
expect_status 2 examples/jacobi2d --size 2
expect_status 2 examples/nbody --size 20000000
expect_status 2 examples/saxpy --iterations 1000 --repeats 1000
expect_status 2 examples/reduction --size 1000000000000 --iterations 1000 --repeats 1000
pass "sizes an example cannot run are refused with status 2"
