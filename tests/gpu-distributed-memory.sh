#!/bin/sh
# Device memory under mgpu-run (issue 4): every allocation on device 0 has one
# address on all GPUs, its 2 MiB granules spread over them. Each mode of
# tests/gpu/distributed_memory.cu (data written on one device and read on
# every device, pitched 2D copies, 100000 small buffers, 200 MiB copies and
# memsets at unaligned offsets, pointer attributes, error codes) must pass
# without mgpu, under -n 1 and under every --gpus list of $entry_sets (GPU 0
# two, three and eight times, distinct GPUs where there are several), and
# the pointer attributes and error codes must be exactly those of the plain
# run. Under the default placement copies leave the buffers on the home
# GPU; under MGPU_PLACEMENT=distributed they are split by owner, each GPU
# holding its part. write-read and copies also run with MGPU_PLACEMENT=interleave and home and with
# MGPU_MEMORY=driver. Pages moved with mgpu_memory_migrate keep their data
# and address. A buffer of 1.5 times one GPU's memory cannot be allocated
# without mgpu or with one GPU, and can with two distinct GPUs, the report
# showing more than half a GPU's memory on each at peak (GPUs that share a
# device share its memory: not tried there).
. "$(dirname "$0")/common.sh"
require_gpu
prog=tests/gpu/distributed_memory
modes="write-read pointer-attrs pitched-2d many-small errors copies"
MiB=1048576

# One GPU's memory in bytes: device 0's, as the runtime reports it without mgpu.
tests/gpu/device_query > "$work/devices" 2>&1 || { cat "$work/devices"; fail "device_query without mgpu"; }
gpu_bytes=$(awk '/^device 0:/{ split($5, a, "="); print a[2]; exit }' "$work/devices")
if [ -z "$gpu_bytes" ]; then
  gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>/dev/null)
  [ -n "$gpu_mib" ] || fail "cannot learn one GPU's memory from device_query or nvidia-smi"
  gpu_bytes=$(awk -v m="$gpu_mib" -v u=$MiB 'BEGIN { printf "%.0f", m * u }')
fi
oversized=$(awk -v m="$gpu_bytes" 'BEGIN { printf "%.0f", m * 1.5 }')
echo "one GPU: $gpu_bytes bytes; oversubscribe asks for $oversized"

extra_env=  # VAR=value for the next runs, or empty

# run LABEL MODE [ARG]: the program in MODE, without mgpu (LABEL plain) or
# under mgpu-run --report -n 1 (LABEL n1...) or --gpus $gpus (LABEL g...),
# with $extra_env in its environment. Its stdout goes to $work/LABEL.MODE.out,
# its stderr (the report) to $work/LABEL.MODE.err; returns its exit status.
run() {
  run_label=$1; run_mode=$2; shift 2
  case $run_label in
    plain) set -- "$prog" "$run_mode" "$@" ;;
    n1*) set -- "$MGPU_RUN" -n 1 --report "$prog" "$run_mode" "$@" ;;
    g*) set -- "$MGPU_RUN" --gpus "$gpus" --report "$prog" "$run_mode" "$@" ;;
    *) fail "run: unknown label $run_label" ;;
  esac
  env $extra_env "$@" > "$work/$run_label.$run_mode.out" 2> "$work/$run_label.$run_mode.err"
}

# expect_pass LABEL MODE [ARG]: run exits 0 and prints the mode's PASS line.
expect_pass() {
  run "$@"
  status=$?
  grep -q "^distributed_memory $2: PASS\$" "$work/$1.$2.out" && [ "$status" -eq 0 ] || {
    cat "$work/$1.$2.out" "$work/$1.$2.err" >&2
    fail "$2 ($1${extra_env:+, $extra_env}) exited $status without passing"; }
}

# expect_same_as_plain LABEL MODE: the output is the plain run's, line for line.
expect_same_as_plain() {
  diff "$work/plain.$2.out" "$work/$1.$2.out" > "$work/diff" || {
    cat "$work/diff" >&2
    fail "$2 under $1 differs from the plain run (above: < plain, > $1)"; }
}

# expect_small_drop LABEL: many-small's free memory dropped by under 2 GiB.
# Free memory is the device's, which other work on the machine may also
# use: a drop over the limit is measured again, up to three times (a
# granule per buffer would be 200 GB, over it every time).
expect_small_drop() {
  for try in 1 2 3; do
    drop=$(sed -n 's/^many-small: free memory dropped by \(-*[0-9]*\) MiB$/\1/p' "$work/$1.many-small.out")
    [ -n "$drop" ] && [ "$drop" -lt 2048 ] && return 0
    echo "many-small ($1), try $try: free memory dropped by ${drop:-?} MiB" >&2
    [ "$try" -lt 3 ] && expect_pass "$1" many-small
  done
  cat "$work/$1.many-small.out" >&2; fail "many-small ($1): free memory dropped by ${drop:-?} MiB"
}

# peak_bytes LABEL MODE GPU: the bytes the report says GPU held at peak (its
# line "  GPU g: X UNIT now, Y UNIT at peak", or "  GPU g (device d): ..."),
# or nothing without that line.
peak_bytes() {
  awk -v g="$3" '$1 == "GPU" && ($2 == g ":" || $2 == g) && / at peak$/ && /^  GPU / {
      v = $(NF - 3); u = $(NF - 2)
      m = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : \
          u == "TiB" ? 1099511627776 : 1
      printf "%.0f\n", v * m; exit }' "$work/$1.$2.err"
}

# at_least A B: A >= B, as numbers too large for the shell.
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

# --- without mgpu ---------------------------------------------------------------
for mode in $modes; do
  expect_pass plain "$mode"
done
cat "$work/plain.many-small.out"
run plain oversubscribe "$oversized"
status=$?
[ "$status" -eq 2 ] || { cat "$work/plain.oversubscribe.out" "$work/plain.oversubscribe.err" >&2
  fail "oversubscribe without mgpu exited $status, not 2 (cannot allocate)"; }
expect_in "$work/plain.oversubscribe.out" "oversubscribe: cannot allocate ("
pass "every mode passes without mgpu, which cannot allocate $oversized bytes"

# --- under -n 1 -------------------------------------------------------------------
for mode in $modes; do
  expect_pass n1 "$mode"
done
for mode in pointer-attrs errors; do
  expect_same_as_plain n1 $mode
done
expect_small_drop n1
run n1 oversubscribe "$oversized"
status=$?
[ "$status" -eq 2 ] || { cat "$work/n1.oversubscribe.out" "$work/n1.oversubscribe.err" >&2
  fail "oversubscribe under -n 1 exited $status, not 2 (cannot allocate)"; }
expect_same_as_plain n1 oversubscribe
pass "under -n 1 every mode passes, with the plain run's pointer attributes, errors and failed oversized allocation"

for gpus in $entry_sets; do
  label=g$(echo "$gpus" | tr ',' '_')
  n=$(entries_in "$gpus")
  last=$((n - 1))
  for mode in $modes; do
    expect_pass "$label" "$mode"
  done
  expect_in "$work/$label.write-read.out" "device 0: checksum OK"
  if ! repeats_a_gpu "$gpus"; then
    expect_in "$work/$label.write-read.out" "device 1: checksum OK"
  fi
  pass "under --gpus $gpus every mode passes; every device reads what device 0 wrote"
  for mode in pointer-attrs errors; do
    expect_same_as_plain "$label" $mode
  done
  pass "under --gpus $gpus pointer attributes and error codes are the plain run's"
  cat "$work/$label.many-small.out"
  expect_small_drop "$label"
  pass "100000 small buffers under --gpus $gpus take under 2 GiB"
  # The default placement (auto) keeps new buffers on the home GPU until
  # a split launch pays for spreading them (DESIGN principle 6); copies
  # alone spread nothing.
  cat "$work/$label.copies.err"
  at_least "$(peak_bytes "$label" copies 0)" $((400 * MiB)) ||
    fail "copies (--gpus $gpus): GPU 0 held $(peak_bytes "$label" copies 0) bytes at peak, under the 400 MiB of the two buffers"
  # Distributed placement: two 200 MiB buffers cut into n parts, each GPU
  # holding its share of both, copies split by owner.
  dist_label=$label-placement-distributed
  extra_env=MGPU_PLACEMENT=distributed
  expect_pass "$dist_label" copies
  extra_env=
  expect_match "$work/$dist_label.copies.err" "^  GPU $last( \(device [0-9]+\))?: [0-9.]+ (B|KiB|MiB|GiB|TiB) now, [0-9.]+ (B|KiB|MiB|GiB|TiB) at peak\$"
  share=$((400 * MiB / n / 2))
  for g in $(seq 0 "$last"); do
    at_least "$(peak_bytes "$dist_label" copies "$g")" "$share" ||
      fail "copies (MGPU_PLACEMENT=distributed, --gpus $gpus): GPU $g held $(peak_bytes "$dist_label" copies "$g") bytes at peak, under $share"
  done
  expect_match "$work/$dist_label.copies.err" 'placement; [1-9][0-9]* copies and sets split by owner'
  expect_match "$work/$dist_label.copies.err" "^  [0-9.]+ (MiB|GiB) of pageable host memory copied to the GPUs through mgpu's pinned buffers\$"
  pass "copies under --gpus $gpus stay on the home GPU by default; with MGPU_PLACEMENT=distributed a part of their buffers lies on each of the $n GPUs, split by owner, pageable ones staged"

  extra_env=MGPU_PLACEMENT=distributed # the program's own migrations, none of auto's
  expect_pass "$label" migrate
  extra_env=
  expect_match "$work/$label.migrate.err" 'split by owner, 2 migrations$'
  pass "mgpu_memory_migrate moves pages between GPUs under --gpus $gpus, the data and address unchanged"

  # --- placements and driver allocations --------------------------------------
  for extra_env in MGPU_PLACEMENT=interleave MGPU_PLACEMENT=home MGPU_MEMORY=driver; do
    env_label=$label-$(echo "${extra_env#MGPU_}" | tr 'A-Z=' 'a-z-')
    for mode in write-read copies; do
      expect_pass "$env_label" "$mode"
    done
    expect_in "$work/$env_label.write-read.out" "device 0: checksum OK"
    last_peak=$(peak_bytes "$env_label" copies "$last")
    case $extra_env in
      MGPU_PLACEMENT=interleave)
        at_least "${last_peak:-0}" $((32 * MiB)) || {
          cat "$work/$env_label.copies.err" >&2; fail "copies ($extra_env, --gpus $gpus): GPU $last held under 32 MiB"; } ;;
      MGPU_PLACEMENT=home)
        at_least $((64 * MiB)) "${last_peak:-0}" || {
          cat "$work/$env_label.copies.err" >&2; fail "copies ($extra_env, --gpus $gpus): GPU $last held $last_peak bytes"; } ;;
    esac
    pass "write-read and copies pass with $extra_env under --gpus $gpus"
  done
  extra_env=
done

# --- one buffer larger than a GPU -------------------------------------------------
oversubscribed=$(first_distinct_set)
if [ -z "$oversubscribed" ]; then
  echo "skipped: a buffer larger than one GPU needs two distinct GPUs' memory (this machine has $gpu_count GPU)"
  exit 0
fi
gpus=$oversubscribed
label=g$(echo "$gpus" | tr ',' '_')
expect_pass "$label" oversubscribe "$oversized"
cat "$work/$label.oversubscribe.out" "$work/$label.oversubscribe.err"
expect_in "$work/$label.oversubscribe.out" "oversubscribe: $oversized bytes, mismatches 0"
half_gpu=$(awk -v m="$gpu_bytes" 'BEGIN { printf "%.0f", m / 2 }')
for g in 0 1; do
  peak=$(peak_bytes "$label" oversubscribe $g)
  [ -n "$peak" ] || fail "oversubscribe (--gpus $gpus): the report has no line for GPU $g"
  at_least "$peak" "$half_gpu" || fail "oversubscribe (--gpus $gpus): GPU $g held $peak bytes at peak, not above $half_gpu"
done
pass "under --gpus $gpus one buffer of $oversized bytes is written and read back, more than half a GPU on each"
