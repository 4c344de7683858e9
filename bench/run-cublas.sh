#!/bin/sh
# cuBLAS through mgpu (issues 21, 23): bench/cublas_sgemm times an N^3 SGEMM
# (TYPE sgemm) or BF16 cublasGemmEx with FP32 C (TYPE bf16)
# (events, median of its rounds) and the host cost of one small SGEMM call
# (SMALL^3, median of 200), plainly; under mgpu-run -n 1 (one entry: the
# interposer only, goal <= 1.02x plain); and under --gpus 0x2, 0x4, 0x8
# (and distinct GPUs where there are as many) with MGPU_BLAS_MIN=0 and
# MGPU_SPLIT=always (unless the caller sets MGPU_SPLIT), so that every
# call is split, the small ones too: their host cost is that of an
# intercepted, split call. With MGPU_SPLIT=auto the table gives what the
# GEMM policy chooses instead (blas/gemm_policy.h). Each configuration runs ROUNDS times,
# interleaved; the table gives the medians. MGPU_MIRROR from the caller
# applies to every mgpu run: on distinct GPUs, auto lets each part read the
# operand all parts need from a copy on its own GPU.
#   bench/run-cublas.sh [ROUNDS=3] [N=8192] [SMALL=512] [SETS="0x2 ..."] [TYPE=sgemm]
# Run from the top build directory after `make check`, or set MGPU_RUN and
# CUBLAS_SGEMM to installed copies.
set -eu
rounds=${1:-3}
n=${2:-8192}
small=${3:-512}
bench=${CUBLAS_SGEMM:-bench/cublas_sgemm}
. "$(dirname "$0")/find_mgpu_run.sh"
. "$(dirname "$0")/median.sh"
. "$(dirname "$0")/gpu_sets.sh"
[ -x "$bench" ] || { echo "run-cublas.sh: $bench is missing; run make check first (it needs the shared cuBLAS)" >&2; exit 2; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 1 ] || { echo "run-cublas.sh: needs a GPU" >&2; exit 2; }
sets=${4:-$(default_sets "$gpus")}
type=${5:-sgemm}
case $type in
  sgemm | bf16) ;;
  *) echo "run-cublas.sh: TYPE is sgemm or bf16, not $type" >&2; exit 2 ;;
esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# record NAME LINE: the line's gemm_ms and call_us into NAME's files.
record() {
  echo "$2" | sed -n 's/.*gemm_ms=\([0-9.]*\).*/\1/p' >> "$out/$1.ms"
  echo "$2" | sed -n 's/.*call_us=\([0-9.]*\).*/\1/p' >> "$out/$1.us"
  echo "$2" | grep -q 'checked=64' || { echo "run-cublas.sh: $1: $2" >&2; exit 1; }
}
for r in $(seq 1 "$rounds"); do
  record plain "$("$bench" "$n" 5 "$small" 200 "$type")"
  record one "$("$MGPU_RUN" -n 1 "$bench" "$n" 5 "$small" 200 "$type")"
  for set in $sets; do
    record "$set" "$(MGPU_BLAS_MIN=0 MGPU_SPLIT=${MGPU_SPLIT:-always} "$MGPU_RUN" --gpus "$set" "$bench" "$n" 5 "$small" 200 "$type")"
  done
  printf 'round %s of %s done\n' "$r" "$rounds" >&2
done

plain_ms=$(median "$out/plain.ms")
plain_us=$(median "$out/plain.us")
label=SGEMM
[ "$type" = bf16 ] && label="BF16 GemmEx"
echo "cublas_sgemm: ${n}^3 $label (GPU ms, events) and the host cost of one ${small}^3 call (µs); median of $rounds interleaved rounds; MGPU_MIRROR=${MGPU_MIRROR:-auto}"
echo
echo "| run | $label ms | / plain | speedup | host µs per call | added µs |"
echo "| --- | --- | --- | --- | --- | --- |"
row() {
  ms=$(median "$out/$2.ms"); us=$(median "$out/$2.us")
  printf '| %s | %.2f | %.3f | %.2f× | %.2f | %.2f |\n' "$1" "$ms" \
    "$(awk -v a="$ms" -v b="$plain_ms" 'BEGIN { print a / b }')" \
    "$(awk -v a="$ms" -v b="$plain_ms" 'BEGIN { print b / a }')" "$us" \
    "$(awk -v a="$us" -v b="$plain_us" 'BEGIN { print a - b }')"
}
row "plain (no mgpu)" plain
row "mgpu-run -n 1" one
for set in $sets; do
  row "--gpus $set, every call split" "$set"
done
