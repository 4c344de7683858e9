#!/bin/sh
# mgpu's multi-GPU paths on the fake GPU (tests/fake/, no GPU needed): the
# driver-API client fake_gpu_client allocates from mgpu's pool, loads a PTX
# module that mgpu rewrites for every GPU, and launches kernels that mgpu
# splits; the fake runs each slice as the rewritten PTX would, so the
# results are right only if the split is. Under -n 4, --gpus 0x4 and -n 1,
# with MGPU_SPLIT=always and auto, with flags and events for fork and join.
# Every run must end with correct results, and at exit no physical memory,
# mapping or reserved range of the fake may be left.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4
client=tests/fake/fake_gpu_client

# run NAME ARGS...: common.sh's run_fake_client.
run() { run_fake_client "$@"; }

# split_in NAME N: both kernels' launches were all split N ways.
split_in() {
  expect_match "$work/$1.err" "^mgpu_test_axpy +2 +[0-9]+\\* +256 +x$2 "
  expect_match "$work/$1.err" "^mgpu_test_fill +1 +97 +256 +x$2 "
  expect_in "$work/$1.err" "module 1 (cuModuleLoadData): rewritten for $2 GPUs"
}

# spread NAME: the pool holds the buffers on several GPUs.
spread() {
  expect_in "$work/$1.err" "one address range on 4 GPUs"
  peaks=$(grep -c -E '^  GPU [0-9].*[1-9][0-9.]* MiB at peak' "$work/$1.err")
  [ "$peaks" -ge 2 ] || fail "the pool held memory on $peaks GPU(s) in $1"
}

# The client's buffers are of a few MiB: MGPU_SPREAD_MIN=1 spreads them.
MGPU_SPREAD_MIN=1 MGPU_SPLIT=always run n4 -n 4
split_in n4 4
spread n4
# Where mgpu's start-up went, in the report: the launcher, the pool, the
# other GPUs' contexts, peer access, the rewritten modules; the driver's own
# initialisation apart.
awk '/^start-up:/ { s = $0; while ((getline n) > 0 && n ~ /^    /) s = s " " substr(n, 5); print s; exit }' \
  "$work/n4.err" > "$work/n4.startup"
expect_match "$work/n4.startup" "^start-up: [0-9.]+ ms in mgpu \\(launcher [0-9.]+, library [0-9.]+, pool [0-9.]+, contexts [0-9.]+, peer access [0-9.]+, rewritten modules [0-9.]+(, link measurement [0-9.]+)?\\); the driver's own initialisation [0-9.]+ ms$"
pass "-n 4, MGPU_SPLIT=always: split four ways, correct, nothing left mapped"

# MGPU_VERBOSE=2 names each slice's part: the grid-stride fill (2200001
# elements, 2 MiB granules spread one or two per GPU in order) by iterations,
# cut where the owner changes.
MGPU_SPREAD_MIN=1 MGPU_SPLIT=always MGPU_VERBOSE=2 run slices -n 4
expect_in "$work/slices.err" "split launch of 97 x 1 x 1 blocks along x: GPU 0: iterations 0..524287 (23 blocks), GPU 1: iterations 524288..1048575 (23 blocks), GPU 2: iterations 1048576..2097151 (46 blocks), GPU 3: iterations 2097152..2200000 (5 blocks)"
expect_in "$work/slices.err" "split launch of 2344 x 1 x 1 blocks along x: GPU 0: 0..585,"
# and each slice's footprint (ptx/ptx_footprint.h): the axpy over 600000
# floats, y = a x + y, reads x and y and writes y in its own quarter.
expect_in "$work/slices.err" "footprint of GPU 1's slice: param 1 reads [600064, 1200128), param 0 reads [600064, 1200128), param 0 writes [600064, 1200128)"
pass "-n 4, MGPU_VERBOSE=2: the slices' blocks and footprints, and a grid-stride loop's iterations"

# MGPU_STRIDE_BLOCKS=fill: each iteration slice walks its range with as
# many blocks as fill its GPU (the fake's: more than the grid), correct.
MGPU_SPREAD_MIN=1 MGPU_SPLIT=always MGPU_VERBOSE=2 MGPU_STRIDE_BLOCKS=fill run fill -n 4
expect_in "$work/fill.err" "split launch of 97 x 1 x 1 blocks along x: GPU 0: iterations 0..524287 (97 blocks), GPU 1: iterations 524288..1048575 (97 blocks), GPU 2: iterations 1048576..2097151 (97 blocks), GPU 3: iterations 2097152..2200000 (97 blocks)"
pass "-n 4, MGPU_STRIDE_BLOCKS=fill: every iteration slice runs the whole grid's blocks, correct"
# A grid larger than the fake device holds (100 multiprocessors of 2048
# threads: 800 blocks of 256): each slice runs exactly 800, not one more
# (a block past a full device is a second wave on an H200).
FAKE_CLIENT_FILL_BLOCKS=1000 MGPU_SPREAD_MIN=1 MGPU_SPLIT=always MGPU_VERBOSE=2 \
  MGPU_STRIDE_BLOCKS=fill run fill_full -n 4
expect_in "$work/fill_full.err" "split launch of 1000 x 1 x 1 blocks along x: GPU 0: iterations 0..524287 (800 blocks), GPU 1: iterations 524288..1048575 (800 blocks)"
pass "-n 4, MGPU_STRIDE_BLOCKS=fill: a grid past the device's capacity runs as many blocks as it holds"

MGPU_SPREAD_MIN=1 MGPU_SPLIT=always run entries --gpus 0x4
split_in entries 4
spread entries
expect_in "$work/entries.err" "GPU 3 (device 0): 3"
pass "--gpus 0x4, MGPU_SPLIT=always: four GPUs on one device"

MGPU_SPLIT=always MGPU_FORK_JOIN=events run events -n 4
split_in events 4
pass "-n 4 with events for fork and join"

MGPU_SPLIT=always MGPU_FORK_JOIN=events run events_entries --gpus 0x4
split_in events_entries 4
pass "--gpus 0x4 with events for fork and join"

# A kernel whose blocks wait for the block before them (ptx/ptx_block_waits.h)
# is split over distinct GPUs, and runs whole over entries of one device,
# also under MGPU_SPLIT=always: there the later slices' blocks could fill
# the device while the first slice's wait to start.
FAKE_CLIENT_WAIT_KERNEL=1 MGPU_SPLIT=always run waits_distinct -n 4
expect_match "$work/waits_distinct.err" '^mgpu_test_wait +1 +64 +32 +x4 '
FAKE_CLIENT_WAIT_KERNEL=1 MGPU_SPLIT=always run waits_one_device --gpus 0x4
expect_match "$work/waits_one_device.err" '^mgpu_test_wait +1 +64 +32 +no \[[0-9]+\] '
expect_match "$work/waits_one_device.err" '^mgpu_test_fill +1 +97 +256 +x4 '
pass "a kernel whose blocks wait for earlier ones: split over 4 GPUs, whole over 4 entries of one"

MGPU_PLACEMENT=interleave MGPU_SPLIT=always run interleave -n 4
split_in interleave 4
pass "-n 4, interleaved placement"

run auto -n 4
peaks=$(grep -c -E '^  GPU [0-9].*[1-9][0-9.]* MiB at peak' "$work/auto.err")
[ "$peaks" -eq 1 ] || fail "auto: buffers under MGPU_SPREAD_MIN held on $peaks GPUs, not on the home GPU alone"
pass "-n 4, MGPU_SPLIT=auto: the buffers (under MGPU_SPREAD_MIN) on the home GPU"

# The split policy's decisions in the report: the fill launched 8 times
# (FAKE_CLIENT_FILL_REPEAT), its whole and split times and the way it went.
# The program's set-up takes 0.3 s before its launches: until the other
# GPUs' contexts are made, from 0.1 s after its first allocation, the
# policy is not asked (tests/fake-other-gpus.sh); the first launch after
# they are asks for the module's copies there and runs whole too (and so
# does any launch while a loaded machine loads them), so the policy sees 7
# of the 8, or fewer.
FAKE_CLIENT_WAIT_MS=300 FAKE_CLIENT_FILL_REPEAT=8 run auto_repeat -n 4
expect_match "$work/auto_repeat.err" '^split or whole \(MGPU_SPLIT=auto\), the shapes of most GPU time first:$'
expect_match "$work/auto_repeat.err" \
  '^  mgpu_test_fill 97x1x1 of 256x1x1, [5-8] launches: whole [0-9.]+ ms, (split [0-9.]+ ms \([12] tr(y|ies)[^)]*\)|not tried: [^:]*): (split|whole)$'
# and what the try cost beyond the whole launch it lost to.
expect_match "$work/auto_repeat.err" '^what trying cost: 1 split try [0-9.]+ ms over whole, 0 mirrored tries'
# and the budget it was charged to (MGPU_TRY_BUDGET, its line wrapped).
tr '\n' ' ' < "$work/auto_repeat.err" | tr -s ' ' |
  grep -Eq 'budget for trying \(MGPU_TRY_BUDGET=2%\+5ms\): [0-9.]+ ms charged of [0-9.]+ ms \(2 % of the [0-9.]+ ms the policies measured the kernels run, plus 5 ms\); [0-9]+ tr(y|ies) put off for it' ||
  fail "auto_repeat: the report does not give the budget for trying"
pass "-n 4, MGPU_SPLIT=auto: the report says how each kernel shape was decided, and what trying cost"

# The budget for trying (base/try_budget.h): the fill again with three more
# grids, each a shape of its own, and every split try losing 6 ms on the
# fake GPU (8 ms split, 2 ms whole). With MGPU_TRY_BUDGET=0%+1ms the first
# try overruns the budget and the other shapes' tries are put off (their
# lines say so, the report counts them); with the budget off every shape
# is tried.
FAKE_CLIENT_WAIT_MS=300 FAKE_CLIENT_FILL_REPEAT=6 FAKE_CLIENT_FILL_SHAPES=3 MGPU_TRY_BUDGET=0%+1ms \
  run budget_small -n 4
expect_match "$work/budget_small.err" '^  mgpu_test_fill (98|99|100)x1x1 of 256x1x1, [0-9]+ launches: whole [0-9.]+ ms, not tried: over the budget for trying: whole so far$'
tr '\n' ' ' < "$work/budget_small.err" | tr -s ' ' |
  grep -Eq 'budget for trying \(MGPU_TRY_BUDGET=0%\+1ms\): 6\.000 ms charged of 1\.000 ms .* [1-9][0-9]* tries put off for it' ||
  fail "budget_small: the report does not count the tries put off"
tr '\n' ' ' < "$work/budget_small.err" | tr -s ' ' | grep -Eq 'what trying cost: 1 split try ' ||
  fail "budget_small: more than one split try was made"
FAKE_CLIENT_WAIT_MS=300 FAKE_CLIENT_FILL_REPEAT=6 FAKE_CLIENT_FILL_SHAPES=3 MGPU_TRY_BUDGET=off \
  run budget_off -n 4
tr '\n' ' ' < "$work/budget_off.err" | tr -s ' ' |
  grep -Eq 'what trying cost: [2-4] split tries [0-9.]+ ms over whole.* budget for trying: none \(MGPU_TRY_BUDGET=off\)' ||
  fail "budget_off: not every shape was tried"
pass "-n 4: the budget for trying puts the tries off once one has overrun it; off, every shape is tried"

# A spread rebuilds only the chunks that move (memory/memory_pool.c): the
# fill's 8.8 MB buffer (five granules), made on the home GPU and cut where
# the distributed placement changes owner, is spread after four split
# launches; the three chunks that change GPU, 8 MiB, are all it copies,
# and the results stay correct.
FAKE_CLIENT_KEEP_FILL=1 FAKE_CLIENT_FILL_REPEAT=8 MGPU_SPLIT=always MGPU_VERBOSE=2 run moved -n 4
expect_match "$work/moved.err" 'the 8800004-byte buffer at 0x[0-9a-f]+ spread over the GPUs after 4 split launches'
expect_match "$work/moved.err" 'memory: 8\.0 MiB of a buffer moved \(3 chunks, 8\.0 MiB copied\) in [0-9.]+ ms: made and mapped'
# The report counts the move among what trying cost (its line wrapped).
tr '\n' ' ' < "$work/moved.err" | tr -s ' ' | grep -Eq 'what trying cost: 0 split tries .* 1 move [0-9.]+ ms; [0-9.]+ ms in all' ||
  fail "moved: the report's cost of trying does not count the move"
# The fill's buffer, kept to the end, is listed with the kernel that moved it.
expect_match "$work/moved.err" '^    buffer of 8\.39 MiB: spread after split launches of mgpu_test_fill; 0 whole and 8 split launches, 1 move$'
pass "-n 4: a buffer spread after split launches copies only what moves, correct, and says which kernel moved it"

# A launch does not wait for the GPU, and a move made inside one waits for
# the program's queued work at most 100 ms: with 1.5 s of work behind every
# synchronisation (FAKE_CUDA_SYNC_MS) the same spread is put off, not made
# (the work might wait for the program's own thread: a host function
# released by a semaphore posted after more launches, tests/fake-exit.sh).
FAKE_CUDA_SYNC_MS=1500 FAKE_CLIENT_KEEP_FILL=1 FAKE_CLIENT_FILL_REPEAT=8 MGPU_SPLIT=always \
  MGPU_VERBOSE=1 run put_off -n 4
expect_match "$work/put_off.err" 'placement: moving the 8800004-byte buffer at 0x[0-9a-f]+ after 4 split launches is put off: the program.s queued work did not finish within 100 ms'
expect_match "$work/put_off.err" 'placement after the kernels \(auto\): [0-9]+ moves \([^)]*\); [1-9][0-9]* put off while the program.s queued work went on'
pass "-n 4: a move inside a launch is put off while the program's queued work goes on"

# Replicas (MGPU_MIRROR=always) of the buffers the kernels only read, on
# four entries of one device and on four devices, refreshed by device
# copies (NCCL cannot run on the fake GPU): results still correct, the
# copies freed at exit.
for gpus in 0x4 0,1,2,3; do
  label=mirror_$(echo $gpus | tr ',' '_')
  MGPU_MIRROR=always MGPU_NCCL=0 MGPU_SPLIT=always run "$label" --gpus $gpus
  split_in "$label" 4
  expect_match "$work/$label.err" "^  mirrors: 2 buffers replicated, 8 copies on the GPUs"
  expect_in "$work/$label.err" "read from replicas on each GPU (MGPU_MIRROR):"
  pass "--gpus $gpus, MGPU_MIRROR=always: replicas read, correct, freed at exit"
done

# A program that starts using NCCL (makes a communicator with a libnccl*)
# after mgpu made its replicas: the audit module marks it, and the next
# read turns mirrors off rather than read a replica NCCL may have made
# stale.
FAKE_CLIENT_BIND_NCCL="$top_builddir/tests/fake/.libs/libnccl_probe.so" FAKE_CLIENT_NCCL_COMM=1 \
  MGPU_MIRROR=always MGPU_NCCL=0 MGPU_SPLIT=always run nccl_late --gpus 0x4
expect_in "$work/nccl_late.err" "mirrors off: the program uses NCCL"
# One that loads NCCL and calls it but makes no communicator (PyTorch in one
# process): NCCL cannot write its buffers, and the mirrors stay.
FAKE_CLIENT_BIND_NCCL="$top_builddir/tests/fake/.libs/libnccl_probe.so" MGPU_MIRROR=always \
  MGPU_NCCL=0 MGPU_SPLIT=always run nccl_linked --gpus 0x4
! grep -q "mirrors off" "$work/nccl_linked.err" ||
  fail "NCCL loaded and called, no communicator made: mirrors went off"
expect_match "$work/nccl_linked.err" "^  mirrors: 2 buffers replicated"
MGPU_AUDIT=0 FAKE_CLIENT_BIND_NCCL="$top_builddir/tests/fake/.libs/libnccl_probe.so" \
  FAKE_CLIENT_NCCL_COMM=1 MGPU_MIRROR=always MGPU_NCCL=0 MGPU_SPLIT=always \
  run nccl_late_unwatched --gpus 0x4
# Without the audit module nothing sees the late binding (the gap it closes).
! grep -q "mirrors off" "$work/nccl_late_unwatched.err" ||
  fail "MGPU_AUDIT=0: mirrors went off without the audit module's mark"
pass "an NCCL communicator made by the program after mgpu's first replica: mirrors off (the audit module's mark); NCCL loaded and called without one: mirrors on"

MGPU_SPLIT=always run one -n 1
expect_in "$work/one.err" "[1] only one GPU selected"
for kind in host_allocations streams events primary_retains contexts; do
  expect_match "$work/one.leaks" "^$kind 0\$"
done
pass "-n 1: the program's own module and allocations, nothing left at exit"

# Probes inside the program, on the fake (whose kernels do not run the
# probes' code, so only the loading and the bookkeeping are checked here;
# tests/gpu-probes.sh checks what they measure): the runtime reads the
# compiled probe, links it into both kernels' rewritten modules, numbers every launch
# and prints its table at exit; -n 1 makes rewritten modules too; a probe file the
# runtime cannot read is one line, and the program runs right without it.
MGPU_SPLIT=always run probed --gpus 0x2 --probe thread-count
expect_in "$work/probed.err" "mgpu probes: 1 file, 3 launches numbered"
expect_in "$work/probed.err" "thread_count_entry at block-entry of '*': 2 kernels"
expect_in "$work/probed.err" "thread-count: blocks and threads each GPU ran"
run probed_one -n 1 --probe thread-count
expect_in "$work/probed_one.err" "mgpu probes: 1 file, 3 launches numbered"
MGPU_PROBES=tc=/nonexistent/tc.ptx run unreadable --gpus 0x2
[ "$(grep -c 'probe' "$work/unreadable.err")" -eq 1 ] || { cat "$work/unreadable.err"; fail "more than one line about the unreadable probe"; }
expect_in "$work/unreadable.err" "mgpu: error: probe tc: cannot read /nonexistent/tc.ptx: No such file or directory; the program runs without probes"
pass "probes on the fake: loaded, linked into both kernels, 3 launches numbered (0x2 and -n 1); an unreadable probe file is one line"

# The footprint check's bookkeeping (its measure needs a GPU: the fake's
# kernels touch nothing, so no slice is seen to escape): each split launch
# of a kernel with a footprint recorded, and the check's lines at exit.
MGPU_SPLIT=always run fpcheck --gpus 0x2 --probe footprint-check
expect_match "$work/fpcheck.err" "^footprint-check: [1-9][0-9]* split launches checked \\([1-9][0-9]* slices\\), 0 escapes;"
expect_match "$work/fpcheck.err" "^  [a-z_A-Z0-9]+: [1-9][0-9]* launches, 0 escapes; predicted [0-9]+ bytes for 0 touched"
pass "footprint-check on the fake: split launches' predictions recorded, the check's lines at exit"

# The links' bandwidths kept between runs (partition/link_cache.h), on a
# machine with a key (a procfs of the test's: a boot id, the NVIDIA
# driver's files). The fake cannot be measured, so a run says, with -vv,
# which file would keep them for its devices, and has no cost model; with
# that file written as three earlier runs would have, the next run reads
# them instead of measuring (its -v lines say so); after two, a reboot, or
# with a broken file, it measures.
proc=$work/links-proc
mkdir -p "$proc/sys/kernel/random" "$proc/driver/nvidia/gpus/0000:18:00.0"
echo first-boot > "$proc/sys/kernel/random/boot_id"
echo "NVRM version: fake" > "$proc/driver/nvidia/version"
MGPU_PROCFS=$proc MGPU_VERBOSE=2 FAKE_CLIENT_WAIT_MS=300 run links_measured -n 4
line=$(grep "the links' bandwidths are not kept for devices" "$work/links_measured.err" | head -n 1)
devices=$(echo "$line" | sed -n 's/.* for devices \(.*\) on machine key .*/\1/p')
key=$(echo "$line" | sed -n 's/.* on machine key \([0-9a-f]*\) (.*/\1/p')
file=$(echo "$line" | sed -n 's/.* (\([^()]*\)): measuring them$/\1/p')
[ -n "$devices" ] && [ -n "$key" ] && [ -n "$file" ] || {
  cat "$work/links_measured.err"; fail "-vv does not say which file would keep the links"; }
expect_in "$work/links_measured.err" "no cost model of the links"
# kept_links KEY [MEASUREMENTS=3]: the file earlier runs on a machine of
# that key wrote.
kept_links() {
  { echo "mgpu links 1"; echo "key $1"; echo "devices $devices"; echo "measurements ${2:-3}"
    for a in 0 1 2 3; do echo "1790.0 371.5 370.0 369.5"; done; } > "$file"
}
# Two measurements are not enough: the run measures (the fake cannot).
kept_links "$key" 2
MGPU_PROCFS=$proc MGPU_VERBOSE=1 FAKE_CLIENT_WAIT_MS=300 run links_twice -n 4
expect_in "$work/links_twice.err" "no cost model of the links"
kept_links "$key"
MGPU_PROCFS=$proc MGPU_VERBOSE=1 FAKE_CLIENT_WAIT_MS=300 run links_kept -n 4
expect_in "$work/links_kept.err" "mgpu: copy bandwidths (kept from earlier runs on these devices;"
expect_in "$work/links_kept.err" "mgpu:   to GPU 1: from 0 372 GB/s, from 1 372 GB/s"
echo second-boot > "$proc/sys/kernel/random/boot_id"
MGPU_PROCFS=$proc MGPU_VERBOSE=1 FAKE_CLIENT_WAIT_MS=300 run links_rebooted -n 4
expect_in "$work/links_rebooted.err" "no cost model of the links"
echo first-boot > "$proc/sys/kernel/random/boot_id"
kept_links "$key"
sed -i 's/371.5/-371.5/' "$file"
MGPU_PROCFS=$proc MGPU_VERBOSE=1 FAKE_CLIENT_WAIT_MS=300 run links_broken -n 4
expect_in "$work/links_broken.err" "no cost model of the links"
pass "the links' bandwidths kept between runs: read instead of measured after three runs on the same machine and devices, measured after two, after a reboot or from a broken file"
