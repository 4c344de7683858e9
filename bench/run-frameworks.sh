#!/bin/sh
# What a framework user gets: the --bench mode of tests/frameworks'
# PyTorch and CuPy clients (torch.mm 8192^2 fp32 and bf16, nn.Linear bf16
# forward and backward of a 16384x4096 batch, an elementwise chain over
# 2^28 floats, a CuPy ElementwiseKernel over 2^28 floats and a RawKernel
# Jacobi sweep over 16384^2), each plain and under mgpu-run -n 2 and -n 4
# (those the machine has), ROUNDS interleaved rounds; GPU times are CUDA
# events around each call, median of 10 in the client, then the median of
# the rounds. Prints a Markdown table with the ratios to plain.
#   bench/run-frameworks.sh [ROUNDS=3]
set -eu
rounds=${1:-3}
python=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/find_mgpu_run.sh"
. "$here/median.sh"
export CUPY_COMPILE_WITH_PTX=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gpus=$(nvidia-smi -L 2> /dev/null | wc -l)
configs="plain"
[ "$gpus" -ge 2 ] && configs="$configs n2"
[ "$gpus" -ge 4 ] && configs="$configs n4"
clients=""
for m in torch cupy; do
  "$python" -c "import $m" > /dev/null 2>&1 && clients="$clients $m" ||
    echo "run-frameworks.sh: no Python module $m; its rows are left out" >&2
done

for r in $(seq 1 "$rounds"); do
  for c in $configs; do
    for m in $clients; do
      case $c in
        plain) set -- ;;
        n*) set -- "$MGPU_RUN" -n "${c#n}" ;;
      esac
      "$@" "$python" "$here/../tests/frameworks/${m}_client.py" --bench > "$out/last" 2>&1 ||
        { cat "$out/last" >&2; echo "run-frameworks.sh: $m under $c failed" >&2; exit 1; }
      grep -q "WRONG" "$out/last" && { cat "$out/last" >&2; echo "run-frameworks.sh: $m under $c: a wrong result" >&2; exit 1; }
      awk -v c="$c" -v o="$out" '$1 == "bench" { print $3 >> (o "/" $2 "." c) }' "$out/last"
    done
  done
  echo "round $r of $rounds done" >&2
done

printf '| what (GPU ms) |'
for c in $configs; do printf ' %s |' "$c"; done
for c in $configs; do [ "$c" = plain ] || printf ' %s speedup |' "$c"; done
printf '\n|---|'
for c in $configs; do printf -- '---|'; done
for c in $configs; do [ "$c" = plain ] || printf -- '---|'; done
printf '\n'
for f in "$out"/*.plain; do
  [ -e "$f" ] || continue
  name=$(basename "$f" .plain)
  base=$(median "$f")
  printf '| %s |' "$name"
  for c in $configs; do
    [ -e "$out/$name.$c" ] && printf ' %.3f |' "$(median "$out/$name.$c")" || printf ' – |'
  done
  for c in $configs; do
    [ "$c" = plain ] && continue
    [ -e "$out/$name.$c" ] && awk -v b="$base" -v t="$(median "$out/$name.$c")" 'BEGIN { printf " %.2fx |", b / t }' || printf ' – |'
  done
  printf '\n'
done
