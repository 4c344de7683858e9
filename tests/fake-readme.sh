#!/bin/sh
# The README's commands run as written on the fake GPU (tests/fake): every
# command of its code blocks that runs one of mgpu's tools is taken from
# README.md and run from the build directory, each with the build's tools
# for the installed ones, and with the fake GPU's programs for the CUDA
# programs they name (the fake runs its own kernels, not nvcc's): the test
# client (tests/fake/fake_gpu_client) for ./app and examples/vector_add,
# the cuBLAS client (tests/fake/fake_cublas_gemms, on the fake cuBLAS) for
# bench/cublas_sgemm. A `make TARGET &&` before a command is left out (the
# build has made its targets). Each must exit 0 and print no "mgpu: error";
# tests/gpu-readme.sh runs the same commands with the real programs on a GPU.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=8
readme_commands "$work/commands"
[ -s "$work/commands" ] || fail "no mgpu commands found in README.md"
ran=0
while IFS= read -r command; do
  run=$(echo "$command" | sed -E -e 's#^make [^&]*&& ##' \
    -e "s#\\\$HOME/mgpu/bin/mgpu-run#$MGPU_RUN#g" \
    -e "s#(^| )mgpu-run #\\1$MGPU_RUN #g" -e "s#(^| )mgpu-ptx #\\1src/ptx/mgpu-ptx #g" \
    -e "s#(^| )mgpu-info#\\1src/mgpu-info#g" \
    -e "s#(\\./examples/vector_add|\\./app)#tests/fake/fake_gpu_client#g" \
    -e "s#bench/cublas_sgemm#tests/fake/fake_cublas_gemms#g")
  case $run in
    *"$MGPU_RUN"*|*src/ptx/mgpu-ptx*|*src/mgpu-info*) ;;
    *) fail "the README's command names no tool this test knows: $command" ;;
  esac
  if ! timeout 120 sh -c "$run" > "$work/out" 2>&1; then
    cat "$work/out" >&2
    fail "the README's command failed: $command (run as: $run)"
  fi
  if grep -q '^mgpu: error' "$work/out"; then
    cat "$work/out" >&2
    fail "the README's command printed an error: $command (run as: $run)"
  fi
  case $run in
    *"$MGPU_RUN"*fake_gpu_client*) grep -q 'results correct' "$work/out" || {
      cat "$work/out" >&2; fail "the test client's results were not right: $command"; } ;;
    *"$MGPU_RUN"*fake_cublas_gemms*) grep -q 'cases correct' "$work/out" || {
      cat "$work/out" >&2; fail "the cuBLAS client's results were not right: $command"; } ;;
  esac
  ran=$((ran + 1))
  pass "the README's command: $command (run as: $run)"
done < "$work/commands"
[ "$ran" -ge 5 ] || fail "only $ran of the README's commands ran"
pass "every command of the README runs on the fake GPU"
