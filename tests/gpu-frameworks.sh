#!/bin/sh
# PyTorch, CuPy and JAX under mgpu-run, as their users run them. Each
# client of tests/frameworks checks its own results against the CPU:
# PyTorch's matrix products (fp32, bf16; cuBLAS, split at the API),
# nn.Linear forward and backward, elementwise chains and reductions;
# CuPy's ElementwiseKernel, RawKernel and a reduction compiled to PTX
# (CUPY_COMPILE_WITH_PTX=1, so mgpu can split them); a JAX jitted
# function (XLA's machine code, whole). Each runs plainly, under -n 1 (the
# pass-through case), under --gpus 0x4 with MGPU_SPLIT=always (every
# multi-GPU path on one device), and on the machine's distinct GPUs where
# it has several. A client whose framework is missing is skipped with a
# line saying which module.
. "$(dirname "$0")/common.sh"
require_gpu
python=${PYTHON:-python3}
command -v "$python" > /dev/null 2>&1 || { echo "skipped: no $python"; exit 77; }
export CUPY_COMPILE_WITH_PTX=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# CuPy keeps compiled kernels in a cache of its own: the test's.
export CUPY_CACHE_DIR="$work/cupy-cache"
distinct=$(first_distinct_set)
ran=0

# client MODULE SCRIPT: the script's checks plain and under each mgpu-run.
client() {
  module=$1; script="$top_srcdir/tests/frameworks/$2"; name=${2%.py}
  if ! "$python" -c "import $module" > /dev/null 2>&1; then
    echo "skipped: $name (no Python module $module)"
    return
  fi
  timeout 600 "$python" "$script" > "$work/$name.plain" 2>&1 ||
    { cat "$work/$name.plain" >&2; fail "$name without mgpu"; }
  expect_match "$work/$name.plain" "^$name: [0-9]+ checks passed"
  for how in "-n 1" "--gpus 0x4" ${distinct:+"--gpus $distinct"}; do
    label=$(echo "$how" | tr -dc '0-9a-z')
    envs=""
    [ "$how" = "--gpus 0x4" ] && envs="MGPU_SPLIT=always"
    env $envs timeout 900 "$MGPU_RUN" $how --report "$python" "$script" \
      > "$work/$name.$label" 2>&1 || { cat "$work/$name.$label" >&2; fail "$name under mgpu-run $how"; }
    expect_match "$work/$name.$label" "^$name: [0-9]+ checks passed"
    if grep -q "behind mgpu's" "$work/$name.$label"; then
      cat "$work/$name.$label" >&2; fail "$name under $how: a BLAS call found no library"
    fi
    pass "$name under mgpu-run $how${envs:+ ($envs)}: every check passed"
  done
  ran=$((ran + 1))
}

client torch torch_client.py
client cupy cupy_client.py
client jax jax_client.py
[ "$ran" -gt 0 ] || { echo "skipped: none of torch, cupy, jax can be imported"; exit 77; }
