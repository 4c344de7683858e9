#!/bin/sh
# The program's cuBLAS GEMMs cut over the GPUs (issue 21, blas/) with the
# real cuBLAS: tests/blas/cublas_gemms calls every routine form (all
# transposes, odd sizes, strided and batched, scalars on the host and the
# device, the TF32 math mode, a stream set on the handle, a C inside a
# buffer a kernel reads before and after) and checks every element of each
# C buffer, guards and padding included, within the kind's tolerance. It
# runs plainly (the test itself is right), then under mgpu-run on each of
# the test's GPU sets (GPU 0 repeated; distinct GPUs where there are
# several) with MGPU_BLAS_MIN low enough to split them all: correct, and
# the report shows the calls split, the parts on every GPU and the trace
# the parts on the GPUs' tracks. Then with mirrors (the kernel's second
# read must not be stale), on one GPU, and with splitting off. Last, where
# the toolkit has the static cuBLAS, the same client with cuBLAS built in:
# correct under mgpu-run (its kernels run whole), and the report says that
# its calls could not be seen.
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/blas/cublas_gemms
[ -x "$prog" ] || { echo "no $prog: configure found no shared cuBLAS"; exit 77; }
cases=32

timeout 120 $prog > "$work/plain" 2>&1 || { cat "$work/plain" >&2; fail "without mgpu"; }
expect_in "$work/plain" "cublas_gemms: $cases cases correct"
pass "without mgpu: every case within tolerance"

# run NAME ENV... -- MGPU-RUN ARGS...
run() {
  name=$1; shift
  envs=""
  while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
  shift
  env $envs timeout 180 "$MGPU_RUN" "$@" --report $prog > "$work/$name.out" 2> "$work/$name.err" ||
    { cat "$work/$name.out" "$work/$name.err" >&2; fail "under mgpu-run $* with$envs ($name)"; }
  expect_in "$work/$name.out" "cublas_gemms: $cases cases correct"
}

for gpus in $entry_sets; do
  label=$(echo "$gpus" | tr ',' '_')
  run "$label" MGPU_SPLIT=always MGPU_MIRROR=never MGPU_BLAS_MIN=1000 -- --gpus "$gpus" --trace "$work/$label.json"
  expect_match "$work/$label.err" "cublasSgemm_v2: 16 calls, 15 split .*; 1 whole: below MGPU_BLAS_MIN"
  expect_match "$work/$label.err" "cublasGemmStridedBatchedEx: 1 calls, 1 split"
  n=$(entries_in "$gpus")
  last=$((n - 1))
  expect_match "$work/$label.err" "parts per GPU: 0:[0-9]+ .*$last:[0-9]+"
  # Without mirrors (MGPU_MIRROR=never), the parts of GPUs that do not hold all of the shared
  # operand read a copy made for the call (blas/gemm_split.c).
  expect_match "$work/$label.err" "parts per GPU: .*; [1-9][0-9]* calls copied A or B to the GPUs first"
  expect_in "$work/$label.json" '"name":"cublasSgemm_v2"'
  pass "--gpus $gpus: every form split, within tolerance; parts on all $n GPUs and on the trace; the shared operand copied first"
done

# Slices of 8 MiB copied in pieces under the parts' GEMMs (--large; blas/gemm_split.c's
# run_pieces), within tolerance, at four entries of GPU 0 and on distinct GPUs where there are.
for gpus in 0x4 $(first_distinct_set); do
  MGPU_VERBOSE=2 MGPU_SPLIT=always MGPU_MIRROR=never MGPU_BLAS_MIN=1000 timeout 180 \
    "$MGPU_RUN" --gpus "$gpus" --report $prog --large > "$work/large.out" 2> "$work/large.err" ||
    { cat "$work/large.out" "$work/large.err" >&2; fail "--large under --gpus $gpus"; }
  expect_in "$work/large.out" "cublas_gemms: 3 large cases correct"
  expect_match "$work/large.err" "split by columns into [0-9]+ parts, [1-9][0-9]* of them copying their slice of the cut operand, in up to [2-4] pieces under their GEMMs"
  pass "--gpus $gpus: slices copied in pieces under the parts' GEMMs, within tolerance"
done

run mirrors MGPU_BLAS_MIN=1000 MGPU_SPLIT=always MGPU_MIRROR=always -- --gpus 0x4
expect_match "$work/mirrors.err" "made stale [1-9][0-9]* times"
expect_match "$work/mirrors.err" "parts per GPU: .*; 15 calls read A or B from mirrors"
pass "MGPU_MIRROR=always: the parts read A (B) from mirrors; nothing read stale"

run one MGPU_BLAS_MIN=1000 -- -n 1
expect_match "$work/one.err" "cublasSgemm_v2: 16 calls, 0 split; .*16 whole: one GPU"
pass "-n 1: cuBLAS runs whole, reported"

run never MGPU_BLAS=never MGPU_BLAS_MIN=1000 -- --gpus 0x4
grep -q "cuBLAS GEMMs:" "$work/never.err" && fail "MGPU_BLAS=never still intercepts"
pass "MGPU_BLAS=never: cuBLAS untouched"

static=tests/blas/cublas_static_gemms
if [ -x "$static" ]; then
  set=$(first_distinct_set)
  for gpus in 0x4 $set; do
    MGPU_SPLIT=always MGPU_BLAS_MIN=1000 timeout 180 "$MGPU_RUN" --gpus "$gpus" --report $static > "$work/static.out" 2> "$work/static.err" ||
      { cat "$work/static.out" "$work/static.err" >&2; fail "the static cuBLAS client under --gpus $gpus"; }
    expect_in "$work/static.out" "cublas_gemms: $cases cases correct"
    expect_in "$work/static.err" "cuBLAS: linked statically into the program"
    grep -q "cuBLAS GEMMs:" "$work/static.err" && fail "the static cuBLAS's calls were reported as intercepted"
    pass "cuBLAS linked statically, --gpus $gpus: correct, unsplit, reported"
  done
else
  echo "note: no static cuBLAS client (configure found no libcublas_static.a that links)"
fi
