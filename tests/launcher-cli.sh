#!/bin/sh
# mgpu-run's command line: help, version, one-line errors naming the fix,
# the program's exit status, and running the program without mgpu when there
# is no driver or no GPU. Uses the fake driver; no GPU needed.
. "$(dirname "$0")/common.sh"
export MGPU_DRIVER="$top_builddir/tests/fake/.libs/libfakecuda.so"
export FAKE_CUDA_GPUS=4

expect_status 0 "$MGPU_RUN" --help
expect_in "$work/out" "Usage: mgpu-run [-n N | --gpus 0,2,5] [--report] [--trace FILE] [-v]"
expect_in "$work/out" "MGPU_SM_COUNT"
expect_status 0 "$MGPU_RUN" --version
expect_in "$work/out" "mgpu-run "
pass "--help and --version"

one_line_error 2 "unknown option --bogus; see mgpu-run --help" "$MGPU_RUN" --bogus true
one_line_error 2 "-n 9 asks for 9 GPUs but this machine has 4; use -n 4 or fewer" "$MGPU_RUN" -n 9 true
one_line_error 2 "-n 0 is not a GPU count" "$MGPU_RUN" -n 0 true
one_line_error 2 "--gpus lists GPU 7 but this machine has GPUs 0 to 3" "$MGPU_RUN" --gpus 0,7 true
one_line_error 2 "--gpus 1,1 names a GPU twice" "$MGPU_RUN" --gpus 1,1 true
one_line_error 2 "no program given" "$MGPU_RUN" -n 2
one_line_error 127 "cannot find program 'no-such-program-xyz' in PATH; give its path" \
  "$MGPU_RUN" no-such-program-xyz
one_line_error 127 "cannot run './no/such/file'" "$MGPU_RUN" ./no/such/file
one_line_error 126 "not an executable file" "$MGPU_RUN" "$top_srcdir/README.md"
MGPU_SM_COUNT=all one_line_error 2 "use MGPU_SM_COUNT=sum or home" "$MGPU_RUN" true
MGPU_PLACEMENT=spread one_line_error 2 "use MGPU_PLACEMENT=distributed, home or interleave" "$MGPU_RUN" true
MGPU_NGPUS=8 one_line_error 2 "MGPU_NGPUS=8 asks for 8 GPUs but this machine has 4" "$MGPU_RUN" true
MGPU_LIBDIR=/nonexistent one_line_error 2 "reinstall mgpu" "$MGPU_RUN" true
pass "bad requests give one line naming the fix"

expect_status 7 "$MGPU_RUN" -n 2 sh -c 'exit 7'
expect_status 0 "$MGPU_RUN" -n 2 -- sh -c 'test "$MGPU_ACTIVE" = 1 && test -n "$CUDA_VISIBLE_DEVICES"'
pass "the exit status is the program's, and the program gets mgpu's environment"

FAKE_CUDA_GPUS=0 expect_status 0 "$MGPU_RUN" sh -c 'echo ran; test -z "$MGPU_ACTIVE"'
expect_in "$work/out" "ran"
expect_in "$work/err" "no usable GPU (CUDA_ERROR_NO_DEVICE); running sh without mgpu"
MGPU_DRIVER=/nonexistent/libcuda.so.1 expect_status 0 "$MGPU_RUN" sh -c 'echo ran'
expect_in "$work/out" "ran"
expect_in "$work/err" "is not the CUDA driver library"
expect_in "$work/err" "running sh without mgpu"
pass "without a driver or a GPU the program runs unchanged, and the user is told"

expect_status 0 "$MGPU_RUN" -v -n 2 true
expect_in "$work/err" "mgpu-run: GPU 0: Fake GPU 0"
expect_in "$work/err" "running true on 2 of 4 GPUs"
pass "-v says which GPUs run the program"

expect_status 0 "$MGPU_RUN" --report true
expect_in "$work/err" "mgpu: report: true never loaded the CUDA driver; nothing to report"
pass "--report on a program that is not a CUDA program says so"
