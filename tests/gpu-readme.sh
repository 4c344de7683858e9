#!/bin/sh
# The README's commands run as written, on a GPU: every command of its code
# blocks that runs one of mgpu's tools (mgpu-run, mgpu-ptx, mgpu-info) is
# taken from README.md and run from the build directory, with the build's
# tools for the installed ones and examples/vector_add for the README's
# ./app; each must exit 0. A command that asks for more GPUs (-n N) than
# the machine has is left out, and said so.
. "$(dirname "$0")/common.sh"
require_gpu
readme_commands "$work/commands"
[ -s "$work/commands" ] || fail "no mgpu commands found in README.md"
ran=0
while IFS= read -r command; do
  n=$(echo "$command" | sed -n 's/.*-n \([0-9][0-9]*\).*/\1/p')
  if [ -n "$n" ] && [ "$n" -gt "$gpu_count" ]; then
    echo "left out (asks for $n GPUs, this machine has $gpu_count): $command"
    continue
  fi
  run=$(echo "$command" | sed -E -e "s#\\\$HOME/mgpu/bin/mgpu-run#$MGPU_RUN#g" \
    -e "s#(^| )mgpu-run #\\1$MGPU_RUN #g" -e "s#(^| )mgpu-ptx #\\1src/ptx/mgpu-ptx #g" \
    -e "s#(^| )mgpu-info#\\1src/mgpu-info#g" -e "s#\\./app#./examples/vector_add#g")
  if ! timeout 300 sh -c "$run" > "$work/out" 2>&1; then
    cat "$work/out" >&2
    fail "the README's command failed: $command (run as: $run)"
  fi
  ran=$((ran + 1))
  pass "the README's command: $command"
done < "$work/commands"
[ "$ran" -gt 0 ] || fail "none of the README's commands could run here"
