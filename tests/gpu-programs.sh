#!/bin/sh
# The test programs (tests/programs/README.md: CUDA written the way other
# people write it) give the same output under mgpu-run as without it: each
# runs plainly and must exit 0 with its last line "NAME: PASS"; then under
# mgpu-run --gpus SET --report with MGPU_SPLIT=always for every SET of
# $entry_sets (common.sh: GPU 0 two, three and eight times, distinct GPUs
# where there are several), where it must
# exit 0 with stdout identical to the plain run's, and the report must show
# each kernel listed for it below cut into as many slices as SET has GPUs
# ("xN"; launches of one block may add "no [2]"). The cooperative kernel and
# the graph's kernels cannot be split and are checked for their output only.
# Last, each runs under --gpus 0x8 with MGPU_MIRROR=always (replicas of every
# buffer a split launch only reads), where the output must not change.
# Every failing run is shown; the test fails at the end, naming them.
# MGPU_TEST_PROGRAMS replaces the list of programs.
. "$(dirname "$0")/common.sh"
require_gpu
programs=${MGPU_TEST_PROGRAMS:-"stencil1d stencil3d gaussian bfs spmv_csr conv2d fdtd2d
  threadfence_reduction atomic_sum histogram_atomicinc pointer_chase coop_grid_sync graph_replay
  two_threads managed_memory transpose scan lookback_scan"}

# split_kernels NAME SET: the kernels of program NAME that its run under
# --gpus SET must show split (their every launch, or all but one-block ones,
# has 8 or more blocks along the dimension mgpu cuts).
split_kernels() {
  case $1 in
    # Its blocks wait for earlier blocks: split over distinct GPUs only.
    lookback_scan) repeats_a_gpu "$2" || echo "scan_lookback" ;;
    stencil1d) echo "stencil_1d" ;;
    stencil3d) echo "stencil_7pt" ;;
    gaussian) echo "Fan1 Fan2" ;;
    bfs) echo "Kernel Kernel2" ;;
    spmv_csr) echo "spmv_csr_scalar spmv_csr_vector" ;;
    conv2d) echo "conv2d_tiled" ;;
    fdtd2d) echo "fdtd_step1_kernel fdtd_step2_kernel fdtd_step3_kernel" ;;
    threadfence_reduction) echo "reduceSinglePass" ;;
    atomic_sum) echo "sum_atomic_int sum_atomic_float" ;;
    histogram_atomicinc) echo "histo_global_atomicinc histo_shared" ;;
    pointer_chase) echo "walk_sum walk_bump" ;;
    two_threads) echo "scale_offset rotate_xor" ;;
    managed_memory) echo "affine block_sums" ;;
    transpose) echo "transpose_naive transpose_coalesced" ;;
    scan) echo "scan_blocks add_offsets" ;;
    *) echo "" ;; # coop_grid_sync, graph_replay: nothing to split
  esac
}

# limited COMMAND...: COMMAND, killed after 2 minutes where timeout(1) exists
# (each program takes seconds; a hang under mgpu then fails the run instead of
# the whole test).
limited() {
  if command -v timeout > /dev/null 2>&1; then timeout 120 "$@"; else "$@"; fi
}

failures=0
failed=""
failed_run() { failures=$((failures + 1)); failed="$failed $1"; }

for prog in $programs; do
  bin=tests/programs/$prog
  limited "$bin" > "$work/$prog.plain.out" 2> "$work/$prog.plain.err"
  status=$?
  if [ "$status" -ne 0 ] || [ "$(tail -n 1 "$work/$prog.plain.out")" != "$prog: PASS" ]; then
    echo "FAIL: $prog without mgpu exited $status without passing:" >&2
    cat "$work/$prog.plain.out" "$work/$prog.plain.err" >&2
    failed_run "$prog"
    continue
  fi
  cat "$work/$prog.plain.out"
  for set in $entry_sets; do
    n=$(entries_in "$set")
    label=$prog.$(echo "$set" | tr ',' '_')
    limited env MGPU_SPLIT=always "$MGPU_RUN" --gpus "$set" --report "$bin" \
      > "$work/$label.out" 2> "$work/$label.err"
    status=$?
    if [ "$status" -ne 0 ]; then
      echo "FAIL: $prog under --gpus $set exited $status:" >&2
      cat "$work/$label.out" "$work/$label.err" >&2
      failed_run "$prog/$set"
      continue
    fi
    if ! diff "$work/$prog.plain.out" "$work/$label.out" > "$work/$label.diff"; then
      echo "FAIL: $prog under --gpus $set differs from the plain run (< plain, > mgpu):" >&2
      cat "$work/$label.diff" "$work/$label.err" >&2
      failed_run "$prog/$set"
      continue
    fi
    unsplit=""
    for kernel in $(split_kernels "$prog" "$set"); do
      grep -Eq "^$kernel\(.*\) +[0-9]+ .* x$n( |$)" "$work/$label.err" || unsplit="$unsplit $kernel"
    done
    # A kernel whose blocks wait for earlier ones runs whole where its
    # slices would share a device (they could wait for ever there).
    if [ "$prog" = lookback_scan ] && repeats_a_gpu "$set" &&
      grep -Eq "^scan_lookback\(.*\) .* x[0-9]+( |$)" "$work/$label.err"; then
      echo "FAIL: $prog under --gpus $set: scan_lookback was split over entries of one device" >&2
      cat "$work/$label.err" >&2
      failed_run "$prog/$set"
      continue
    fi
    if [ -n "$unsplit" ]; then
      echo "FAIL: $prog under --gpus $set: not split into $n slices:$unsplit" >&2
      cat "$work/$label.err" >&2
      failed_run "$prog/$set"
      continue
    fi
    pass "$prog under --gpus $set: $n slices, output matched"
  done
  # Every buffer a split launch only reads replicated on each of 8 entries
  # of GPU 0: the output must not change.
  label=$prog.mirror
  limited env MGPU_SPLIT=always MGPU_MIRROR=always "$MGPU_RUN" --gpus 0x8 --report "$bin" \
    > "$work/$label.out" 2> "$work/$label.err"
  status=$?
  if [ "$status" -ne 0 ] || ! diff "$work/$prog.plain.out" "$work/$label.out" > "$work/$label.diff"; then
    echo "FAIL: $prog under --gpus 0x8 with MGPU_MIRROR=always exited $status or differs (< plain, > mgpu):" >&2
    cat "$work/$label.diff" "$work/$label.err" >&2
    failed_run "$prog/mirror"
    continue
  fi
  pass "$prog under --gpus 0x8 with MGPU_MIRROR=always: output matched;$(grep -E '^  mirrors: ' "$work/$label.err" | sed 's/^  mirrors://')"
done
[ "$failures" -eq 0 ] || fail "$failures program runs failed or differ from the plain run:$failed"
