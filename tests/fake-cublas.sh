#!/bin/sh
# The program's cuBLAS GEMMs cut over the GPUs (issue 21, blas/), on the
# fake GPU with the fake cuBLAS of tests/fake (no GPU needed). The client
# tests/blas/cublas_gemms calls every routine form and checks every element
# of each C buffer against the reference, which the fake computes with too:
# a part run on the wrong columns, rows or matrices, with the wrong
# transpose offsets, scalars or modes, or written out of place, changes the
# bits. The fake's log (FAKE_CUBLAS_LOG) says which handle ran each call
# and what device count the driver gave it: 4 for mgpu's own handles,
# whose driver calls bypass the hooks, 1 for the program's handle under
# MGPU_DEVICE_COUNT=one. Then the same with one device standing for four,
# with BLAS splitting off, on one GPU, with mirrors, at the default size
# threshold, and for a program with cuBLAS built in (as the static cuBLAS
# is), which must run correctly and unsplit, and be reported, and whose
# device 0 has one GPU's multiprocessors unless MGPU_SM_COUNT says sum.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4
export MGPU_DEVICE_COUNT=one
client=tests/fake/fake_cublas_gemms
cases=32

# run NAME PROGRAM ARGS...: PROGRAM --exact under mgpu-run ARGS --report,
# correct; its output in $work/NAME.out and .err, the fake's log in
# $work/NAME.log.
run() {
  name=$1; program=$2; shift 2
  : > "$work/$name.log"
  FAKE_CUBLAS_LOG="$work/$name.log" "$MGPU_RUN" "$@" --report "$program" --exact \
    > "$work/$name.out" 2> "$work/$name.err" || {
    cat "$work/$name.out" "$work/$name.err"; fail "$program under $* ($name)"; }
  expect_in "$work/$name.out" "cublas_gemms: $cases cases correct"
}

# lines NAME REGEX: how many lines of NAME's log match REGEX.
lines() { grep -c -E -- "$2" "$work/$1.log"; }

# count_is NAME REGEX N WHAT
count_is() {
  got=$(lines "$1" "$2")
  [ "$got" -eq "$3" ] || { cat "$work/$1.log" >&2; fail "$4: $got calls match '$2', not $3"; }
}

MGPU_SPLIT=always MGPU_MIRROR=never MGPU_BLAS_MIN=1000 run n4 "$client" -n 4
# 45 columns over 4 GPUs: 11, 11, 11 and 12, for the 9 transposes of 67x45x23.
count_is n4 '^cublasSgemm_v2 m=67 n=1[12] k=23 .*devices=4 ' 36 "the Sgemms of 67x45x23 in parts"
count_is n4 'devices=1 ' 2 "calls left to the program's handle"
count_is n4 '^cublasSgemm_v2 m=8 n=8 k=8 .*devices=1 ' 1 "the small Sgemm, whole"
count_is n4 '^cublasSgemmBatched m=31 .*batch=2 .*devices=1 ' 1 "2 pointer-array matrices, whole"
count_is n4 '^cublasSgemm_v2 m=[0-9]+ n=2 k=30 .*devices=4 ' 4 "a C of 2 columns cut by rows"
count_is n4 '^cublasSgemm_v2 m=96 n=24 k=64 .*devices=4 math=3 ' 4 "the TF32 math mode on every part"
count_is n4 '^cublasSgemm_v2 m=53 .*devices=4 .*pointer=1' 4 "device scalars on every part"
count_is n4 '^cublasSgemmStridedBatched m=21 n=19 k=11 batch=[23] .*devices=4 ' 4 \
  "10 strided matrices cut by matrix"
count_is n4 '^cublasSgemmStridedBatched m=21 n=[45] k=11 batch=3 .*devices=4 ' 4 \
  "3 strided matrices cut by columns"
count_is n4 '^cublasGemmBatchedEx m=16 n=24 k=12 batch=[23] .*devices=4 ' 4 \
  "9 pointer-array matrices cut by matrix"
count_is n4 '^cublasHgemm m=48 n=10 k=16 .*devices=4 ' 4 "Hgemm in parts"
count_is n4 '^cublasSgemm_v2_64 m=100 n=[12] k=50 .*devices=4 ' 4 "Sgemm_v2_64 in parts"
expect_in "$work/n4.err" "cuBLAS GEMMs:"
expect_match "$work/n4.err" "cublasSgemm_v2: 16 calls, 15 split \\(14 by columns\\) \\(1 by rows\\).*; 1 whole: below MGPU_BLAS_MIN"
expect_match "$work/n4.err" "cublasSgemmBatched: 2 calls, 1 split \\(1 by batch\\).*; 1 whole: nothing to cut"
expect_match "$work/n4.err" "parts per GPU: 0:[0-9]+ 1:[0-9]+ 2:[0-9]+ 3:[0-9]+"
# No mirrors (MGPU_MIRROR=never): the parts whose GPU does not hold all of the operand every
# part reads copy it first (and the results above are still exact).
expect_match "$work/n4.err" "parts per GPU: .*; 15 calls copied A or B to the GPUs first"
pass "-n 4: every routine form split (columns, rows, matrices), correct to the bit; the small and uncuttable ones whole; the shared operand copied first"

# Each part whose GPU does not hold its own slice of the cut operand (B's
# columns, A's rows: all on the home GPU here) copies it, packed, before
# its GEMM (the transposed and conjugated forms by a 2D copy), and the
# results stay exact.
MGPU_VERBOSE=2 MGPU_SPLIT=always MGPU_MIRROR=never MGPU_BLAS_MIN=1000 run slices "$client" -n 4
expect_in "$work/slices.err" "cublasSgemm_v2 67x45x23 (batch 1) split by columns into 4 parts, 3 of them copying their slice of the cut operand"
expect_in "$work/slices.err" "cublasSgemm_v2 203x2x30 (batch 1) split by rows into 4 parts, 3 of them copying their slice of the cut operand"
pass "-n 4: the parts off the home GPU copy their slices of the cut operand first, exact"

# Slices of 8 MiB (--large: B of 32 MiB cut by columns, plain and
# transposed; A of 32 MiB cut by rows) are copied in two pieces each on a
# stream of the part's own, each piece's GEMM after its copy: the three
# parts off the home GPU make two GEMMs of half their columns or rows, the
# home part one; the results stay exact.
: > "$work/large.log"
MGPU_VERBOSE=2 MGPU_SPLIT=always MGPU_MIRROR=never MGPU_BLAS_MIN=1000 FAKE_CUBLAS_LOG="$work/large.log" \
  "$MGPU_RUN" -n 4 --report "$client" --exact --large > "$work/large.out" 2> "$work/large.err" || {
  cat "$work/large.out" "$work/large.err"; fail "$client --large under -n 4"; }
expect_in "$work/large.out" "cublas_gemms: 3 large cases correct"
expect_in "$work/large.err" "cublasSgemm_v2 8x4096x2048 (batch 1) split by columns into 4 parts, 3 of them copying their slice of the cut operand, in up to 2 pieces under their GEMMs"
expect_in "$work/large.err" "cublasSgemm_v2 4096x2x2048 (batch 1) split by rows into 4 parts, 3 of them copying their slice of the cut operand, in up to 2 pieces under their GEMMs"
count_is large '^cublasSgemm_v2 m=8 n=512 k=2048 ' 12 "the column cuts' pieces"
count_is large '^cublasSgemm_v2 m=8 n=1024 k=2048 ' 2 "the column cuts' home parts"
count_is large '^cublasSgemm_v2 m=512 n=2 k=2048 ' 6 "the row cut's pieces"
count_is large '^cublasSgemm_v2 m=1024 n=2 k=2048 ' 1 "the row cut's home part"
pass "-n 4: slices of 8 MiB copied in two pieces under the parts' GEMMs, exact"

MGPU_SPLIT=always MGPU_BLAS_MIN=1000 run entries "$client" --gpus 0x4
count_is entries '^cublasSgemm_v2 m=67 n=1[12] k=23 ' 36 "the Sgemms of 67x45x23 in parts on one device"
expect_match "$work/entries.err" "cublasSgemm_v2: 16 calls, 15 split"
pass "--gpus 0x4: the same parts on one device standing for four, correct"

MGPU_SPLIT=always MGPU_BLAS_MIN=1000 MGPU_FORK_JOIN=events run events "$client" -n 4
expect_match "$work/events.err" "cublasSgemm_v2: 16 calls, 15 split"
# Mirrors are on by default (MGPU_MIRROR=auto): the shared operand is read
# from each GPU's rewritten module.
expect_match "$work/events.err" "parts per GPU: .*; 15 calls read A or B from mirrors"
# A, B and C in one allocation (a framework's allocator): the mirror is of
# A's range, not of the buffer C lies in, so all four Dgemms read mirrors,
# and the one after A was rewritten reads the new A (the client checks C).
expect_match "$work/events.err" "cublasDgemm_v2: 4 calls, 4 split"
expect_match "$work/events.err" "parts per GPU: 0:4 1:4 2:4 3:4; 4 calls read A or B from mirrors"
pass "-n 4 with events for fork and join, and mirrors by default, also of an operand's range in a buffer C shares"

MGPU_BLAS_MIN=1000 MGPU_SPLIT=always MGPU_MIRROR=always run mirrors "$client" -n 4
expect_in "$work/mirrors.err" "mirrors:"
expect_match "$work/mirrors.err" "made stale [1-9][0-9]* times"
expect_match "$work/mirrors.err" "parts per GPU: .*; 15 calls read A or B from mirrors"
pass "MGPU_MIRROR=always: the parts read A (B) from mirrors; a kernel's read after a GEMM wrote its buffer, and a GEMM's after A was rewritten, are not stale"

# MGPU_SPLIT=auto (the default) cuts a GEMM shape only once it has been
# measured whole and cut (blas/gemm_policy.h): each of these shapes is
# called once or twice, so every call runs whole, as on one GPU.
MGPU_BLAS_MIN=1000 run auto "$client" -n 4
count_is auto 'devices=4 ' 0 "MGPU_SPLIT=auto, shapes not yet measured"
expect_match "$work/auto.err" "cublasSgemm_v2: 16 calls, 0 split; .*whole: being measured"
pass "MGPU_SPLIT=auto: GEMM shapes not yet measured run whole, correct, reported"

MGPU_BLAS=never MGPU_BLAS_MIN=1000 run never "$client" -n 4
count_is never 'devices=4 ' 0 "MGPU_BLAS=never"
grep -q "cuBLAS GEMMs:" "$work/never.err" && fail "MGPU_BLAS=never still reports GEMMs"
pass "MGPU_BLAS=never: cuBLAS untouched, correct"

MGPU_BLAS_MIN=1000 run one "$client" -n 1
count_is one 'devices=4 ' 0 "-n 1"
expect_match "$work/one.err" "cublasSgemm_v2: 16 calls, 0 split; largest .*; 16 whole: one GPU"
pass "-n 1: whole, reported as one GPU"

run default "$client" -n 4
count_is default 'devices=4 ' 0 "the default threshold"
expect_in "$work/default.err" "device 0 has 400 SMs"
expect_match "$work/default.err" "cublasSgemm_v2: 16 calls, 0 split; .*16 whole: below MGPU_BLAS_MIN"
pass "the default MGPU_BLAS_MIN (2^30) keeps these small GEMMs whole"

MGPU_BLAS_MIN=1000 run static tests/fake/fake_cublas_static_gemms -n 4
count_is static 'devices=4 ' 0 "cuBLAS built into the program"
expect_in "$work/static.err" "cuBLAS: linked statically into the program"
# Its kernels run whole on one GPU: sized by that GPU's multiprocessors.
expect_in "$work/static.err" "device 0 has 100 SMs"
pass "cuBLAS linked into the program: correct, unsplit, reported; device 0 has one GPU's multiprocessors"
MGPU_SM_COUNT=sum MGPU_BLAS_MIN=1000 run static_sum tests/fake/fake_cublas_static_gemms -n 4
expect_in "$work/static_sum.err" "device 0 has 400 SMs"
pass "cuBLAS linked into the program, MGPU_SM_COUNT=sum: all GPUs' multiprocessors, as asked"
