#!/bin/sh
# mgpu-run's command line: help, version, one-line errors naming the fix,
# the program's exit status, and running the program without mgpu when there
# is no driver or no GPU. Uses the fake driver; no GPU needed.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4

expect_status 0 "$MGPU_RUN" --help
expect_in "$work/out" "Usage: mgpu-run [OPTION]... [--] PROGRAM [ARG]..."
expect_in "$work/out" "MGPU_TOPOLOGY"
expect_in "$work/out" "MGPU_SM_COUNT"
expect_status 0 "$MGPU_RUN" --version
expect_in "$work/out" "mgpu-run "
pass "--help and --version"

one_line_error 2 "unknown option --bogus; see mgpu-run --help" "$MGPU_RUN" --bogus true
one_line_error 2 "-n 9 asks for 9 GPUs but this machine has 4; use -n 4 or fewer" "$MGPU_RUN" -n 9 true
one_line_error 2 "-n 0 is not a GPU count" "$MGPU_RUN" -n 0 true
one_line_error 2 "--gpus lists GPU 7 but this machine has GPUs 0 to 3" "$MGPU_RUN" --gpus 0,7 true
one_line_error 2 "--gpus 0x0 is not a GPU list; give device indices such as 0,2,5 (0,0,0,0 or 0x4: GPU 0 four times)" \
  "$MGPU_RUN" --gpus 0x0 true
one_line_error 2 "-n 8 asks for 8 GPUs but this machine has 4; use -n 4 or fewer, or --gpus 0x8 to run 8 slices on GPU 0" \
  "$MGPU_RUN" -n 8 true
one_line_error 2 "no program given" "$MGPU_RUN" -n 2
one_line_error 127 "cannot find program 'no-such-program-xyz' in PATH; give its path" \
  "$MGPU_RUN" no-such-program-xyz
one_line_error 127 "cannot run './no/such/file'" "$MGPU_RUN" ./no/such/file
one_line_error 126 "not an executable file" "$MGPU_RUN" "$top_srcdir/README.md"
MGPU_SM_COUNT=all one_line_error 2 "use MGPU_SM_COUNT=sum or home" "$MGPU_RUN" true
MGPU_PLACEMENT=spread one_line_error 2 "use MGPU_PLACEMENT=distributed, home, interleave or auto" "$MGPU_RUN" true
MGPU_SPREAD_MIN=64MB one_line_error 2 "MGPU_SPREAD_MIN=64MB is not valid; use a size such as 64M" "$MGPU_RUN" true
MGPU_NGPUS=8 one_line_error 2 "MGPU_NGPUS=8 asks for 8 GPUs but this machine has 4" "$MGPU_RUN" true
MGPU_LIBDIR=/nonexistent one_line_error 2 "reinstall mgpu" "$MGPU_RUN" true
pass "bad requests give one line naming the fix"

# Past MGPU_MAX_GPUS, the message names the limit (it said only "not a GPU
# count" or "not a GPU list").
one_line_error 2 "-n 65 is more GPUs than mgpu supports; give at most 64" "$MGPU_RUN" -n 65 true
MGPU_NGPUS=65 one_line_error 2 "MGPU_NGPUS=65 is more GPUs than mgpu supports; give at most 64" \
  "$MGPU_RUN" true
one_line_error 2 "--gpus 0x65 lists more GPUs than mgpu supports; list at most 64" \
  "$MGPU_RUN" --gpus 0x65 true
one_line_error 2 "--gpus 0x33,1x32 lists more GPUs than mgpu supports; list at most 64" \
  "$MGPU_RUN" --gpus 0x33,1x32 true
expect_status 0 "$MGPU_RUN" --gpus 0x64 sh -c 'echo "$MGPU_ENTRIES"'
[ "$(tr ',' '\n' < "$work/out" | wc -l)" -eq 64 ] || fail "--gpus 0x64 did not give 64 entries"
pass "-n and --gpus past 64 GPUs: one line naming the limit; 64 taken"

# A --trace file that cannot be written is a request error, said before
# the program runs (it was said only at the end, with the program's
# status), and leaves no file behind; a writable one is not created early.
one_line_error 2 "cannot write the trace file $work/no/such/dir/run.json (--trace): No such file or directory" \
  "$MGPU_RUN" --trace "$work/no/such/dir/run.json" sh -c 'echo ran'
[ ! -s "$work/out" ] || fail "the program ran with an unwritable --trace"
MGPU_TRACE="$work" one_line_error 2 "cannot write the trace file $work (MGPU_TRACE): Is a directory" \
  "$MGPU_RUN" true
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$work/readonly" && chmod 555 "$work/readonly"
  one_line_error 2 "cannot write the trace file $work/readonly/run.json (--trace): Permission denied" \
    "$MGPU_RUN" --trace "$work/readonly/run.json" true
  [ -z "$(ls -A "$work/readonly")" ] || fail "a failed --trace check left a file behind"
  chmod 755 "$work/readonly"
fi
expect_status 0 "$MGPU_RUN" --trace "$work/later.json" sh -c "test ! -e '$work/later.json'"
pass "an unwritable --trace or MGPU_TRACE: one line and status 2 before the program runs"

# A script without "#!": run by /bin/sh, as execvp, shells, env and nice
# run it (it failed with "Exec format error", status 126).
printf 'echo "no #! line: $0 $1"\nexit 5\n' > "$work/plain-script"
chmod +x "$work/plain-script"
expect_status 5 "$MGPU_RUN" -n 2 "$work/plain-script" one
expect_in "$work/out" "no #! line: $work/plain-script one"
PATH="$work:$PATH" expect_status 5 "$MGPU_RUN" --gpus 0 plain-script two
expect_in "$work/out" "no #! line: $work/plain-script two"
FAKE_CUDA_GPUS=0 expect_status 5 "$MGPU_RUN" "$work/plain-script" three
expect_in "$work/out" "no #! line: $work/plain-script three"
pass "a script without #! runs under /bin/sh, with its arguments, with or without mgpu"

expect_status 7 "$MGPU_RUN" -n 2 sh -c 'exit 7'
expect_status 0 "$MGPU_RUN" -n 2 -- sh -c 'test "$MGPU_ACTIVE" = 1 && test -n "$CUDA_VISIBLE_DEVICES"'
pass "the exit status is the program's, and the program gets mgpu's environment"

FAKE_CUDA_GPUS=0 expect_status 0 "$MGPU_RUN" sh -c 'echo ran; test -z "$MGPU_ACTIVE"'
expect_in "$work/out" "ran"
expect_in "$work/err" "no usable GPU (CUDA_ERROR_NO_DEVICE); running sh without mgpu"
MGPU_DRIVER=/nonexistent/libcuda.so.1 expect_status 0 "$MGPU_RUN" sh -c 'echo ran'
expect_in "$work/out" "ran"
expect_in "$work/err" "is not the CUDA driver library"
expect_in "$work/err" "running sh without mgpu"
pass "without a driver or a GPU the program runs unchanged, and the user is told"

expect_status 0 "$MGPU_RUN" -v -n 2 true
expect_in "$work/err" "mgpu-run: GPU 0: Fake GPU 0"
expect_in "$work/err" "running true on 2 of 4 GPUs"
pass "-v says which GPUs run the program"

# A GPU listed several times: the program's driver sees each device once
# (CUDA_VISIBLE_DEVICES), and MGPU_ENTRIES says which of them each of the
# run's GPUs stands on.
expect_status 0 "$MGPU_RUN" --gpus 1,1 sh -c 'echo "$CUDA_VISIBLE_DEVICES $MGPU_ENTRIES"'
expect_in "$work/out" "$(printf 'GPU-fa000000-0000-0000-0000-0000000000%02x' 1) 0,0"
expect_status 0 "$MGPU_RUN" -v --gpus 2,0x2,2 sh -c 'echo "$CUDA_VISIBLE_DEVICES $MGPU_ENTRIES"'
expect_in "$work/out" "$(printf 'GPU-fa000000-0000-0000-0000-0000000000%02x' 2),$(printf 'GPU-fa000000-0000-0000-0000-0000000000%02x' 0) 0,1,1,0"
expect_in "$work/err" "mgpu-run: GPU 0 (device 2): Fake GPU 2, home"
expect_in "$work/err" "mgpu-run: GPU 2 (device 0): Fake GPU 0"
expect_in "$work/err" "running sh on 4 GPUs standing on 2 of 4 devices"
MGPU_GPUS=3x8 expect_status 0 "$MGPU_RUN" sh -c 'echo "$MGPU_ENTRIES"'
expect_in "$work/out" "0,0,0,0,0,0,0,0"
pass "--gpus and MGPU_GPUS take a GPU several times"

# Where NVML counts the GPUs and no topology is needed (a list, or one
# GPU), mgpu-run checks the request without initialising the driver; the
# program initialises it once. A fake NVML and the fake driver, found on
# LD_LIBRARY_PATH as the system's would be. (quick_run COMMAND...: COMMAND
# with them and without MGPU_DRIVER.)
mkdir -p "$work/system"
cp "$top_builddir/tests/fake/.libs/libfakecuda.so" "$work/system/libcuda.so.1"
cp "$top_builddir/tests/fake/.libs/libfakenvml.so" "$work/system/libnvidia-ml.so.1"
quick_run() {
  env -u MGPU_DRIVER LD_LIBRARY_PATH="$work/system${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    FAKE_CUDA_INIT_LOG="$work/inits" "$@"
}
rm -f "$work/inits"
FAKE_NVML_GPUS=1 FAKE_CUDA_GPUS=1 expect_status 0 quick_run "$MGPU_RUN" -v --gpus 0x4 \
  sh -c 'echo "$CUDA_VISIBLE_DEVICES $MGPU_ENTRIES"'
expect_in "$work/out" "0 0,0,0,0"
expect_in "$work/err" "mgpu-run: GPU 3 (device 0): device 0"
expect_in "$work/err" "counted with NVML"
[ ! -e "$work/inits" ] || { cat "$work/inits"; fail "mgpu-run initialised the driver for --gpus 0x4"; }
FAKE_NVML_GPUS=1 FAKE_CUDA_GPUS=1 one_line_error 2 \
  "-n 2 asks for 2 GPUs but this machine has 1; use -n 1 or fewer, or --gpus 0x2" quick_run "$MGPU_RUN" -n 2 true
FAKE_NVML_GPUS=2 FAKE_CUDA_GPUS=2 one_line_error 2 \
  "--gpus lists GPU 2 but this machine has GPUs 0 to 1" quick_run "$MGPU_RUN" --gpus 0,2 true
[ ! -e "$work/inits" ] || { cat "$work/inits"; fail "mgpu-run initialised the driver to refuse a request"; }
# A GPU in MIG mode makes mgpu-run ask the driver.
FAKE_NVML_MIG=1 FAKE_CUDA_GPUS=1 expect_status 0 quick_run "$MGPU_RUN" --gpus 0 true
[ "$(wc -l < "$work/inits")" -eq 1 ] || fail "a GPU in MIG mode did not make mgpu-run ask the driver"
pass "a list, or one GPU, is checked with NVML's count without initialising the driver"

# -n on a machine of several GPUs asks the topology: NVML's where the GPUs
# are alike (the driver numbers them in bus order, as the topology does,
# whatever order NVML lists them in), without initialising the driver;
# the driver's where they differ.
rm -f "$work/inits"
FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 FAKE_NVML_REVERSED=1 FAKE_CUDA_NVLINK=2-3 expect_status 0 \
  quick_run "$MGPU_RUN" -v -n 2 sh -c 'echo "$CUDA_VISIBLE_DEVICES $MGPU_ENTRIES"'
expect_in "$work/out" "2,3 0,1"
expect_in "$work/err" "mgpu-run: GPUs 2,3, chosen and ordered from the topology of this machine (NVML)"
expect_in "$work/err" "mgpu-run: GPU 0: Fake GPU (0000:fa:02.0), home"
# -v says where the launcher's time went (issue 46: -n against a list).
expect_match "$work/err" "^mgpu-run: [0-9.]+ ms so far: NVML's answers asked in [0-9.]+, its topology [0-9.]+ \\(hwloc's places [0-9.]+\\)$"
FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 FAKE_CUDA_NO_PEER=0-1 expect_status 0 \
  quick_run "$MGPU_RUN" -n 2 sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "0,2"
# Where NVLink joins every pair, hwloc does not read the PCI devices: each
# GPU's place comes from the CPUs the kernel lists near it (local_cpus; a
# sysfs of the test's here, MGPU_SYSFS). The fake GPUs' bus ids exist only
# there, so a place read means that path was taken; without it, the note.
all_pairs=0-1,0-2,0-3,1-2,1-3,2-3
for i in 0 1 2 3; do
  mkdir -p "$work/sysfs/bus/pci/devices/0000:fa:0$i.0"
  echo 1 > "$work/sysfs/bus/pci/devices/0000:fa:0$i.0/local_cpus"
done
MGPU_SYSFS="$work/sysfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 FAKE_CUDA_NVLINK=$all_pairs \
  expect_status 0 quick_run "$MGPU_RUN" -v -n 2 true
! grep -q "topology:" "$work/err" || { cat "$work/err"; fail "-n 2 on GPUs joined by NVLink: no place read from local_cpus"; }
MGPU_SYSFS="$work/no-sysfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 FAKE_CUDA_NVLINK=$all_pairs \
  expect_status 0 quick_run "$MGPU_RUN" -v -n 2 true
expect_in "$work/err" "mgpu-run: topology: the kernel lists no CPUs near the PCI device of 4 GPU(s) (GPU 0, 0000:fa:00.0); their place is unknown"
# Where one pair lacks NVLink, hwloc reads the PCI devices for their paths,
# and NVML is asked each ordered pair's peer access, NVLink and atomics.
rm -f "$work/p2p"
MGPU_SYSFS="$work/sysfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 FAKE_CUDA_NVLINK=0-1,0-2,0-3,1-2,1-3 \
  FAKE_NVML_P2P_LOG="$work/p2p" expect_status 0 quick_run "$MGPU_RUN" -v -n 2 true
expect_in "$work/err" "hwloc does not see the PCI device of 4 GPU(s)"
[ "$(grep -c . "$work/p2p")" -ge 36 ] || { cat "$work/p2p"; fail "-n 2 with a pair lacking NVLink: NVML not asked every question of every pair"; }
# Where NVLink joins every pair, NVML is asked that once per pair (6 for 4
# GPUs; each question takes 1.7 ms on an H200); and where the kernel lists
# the same CPUs near every GPU (local_cpulist), no GPU is nearer than
# another and hwloc is not loaded at all: the GPUs then go in index order.
rm -f "$work/p2p"
MGPU_SYSFS="$work/sysfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 FAKE_CUDA_NVLINK=$all_pairs \
  FAKE_NVML_P2P_LOG="$work/p2p" expect_status 0 quick_run "$MGPU_RUN" -v -n 2 true
[ "$(grep -c . "$work/p2p")" -eq 6 ] && ! grep -qv '^2 ' "$work/p2p" ||
  { cat "$work/p2p"; fail "-n 2 on GPUs all joined by NVLink: NVML asked more than NVLink once per pair"; }
expect_in "$work/err" "(hwloc's places"
for i in 0 1 2 3; do
  echo 0-3 > "$work/sysfs/bus/pci/devices/0000:fa:0$i.0/local_cpulist"
done
MGPU_SYSFS="$work/sysfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 FAKE_CUDA_NVLINK=$all_pairs \
  expect_status 0 quick_run "$MGPU_RUN" -v -n 4 sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "0,1,2,3"
expect_match "$work/err" "^mgpu-run: [0-9.]+ ms so far: .*\\(places alike in sysfs [0-9.]+, no hwloc\\)$"
! grep -q "topology:" "$work/err" || { cat "$work/err"; fail "-n 4 with places alike in sysfs: a note"; }
echo 2-3 > "$work/sysfs/bus/pci/devices/0000:fa:03.0/local_cpulist"
MGPU_SYSFS="$work/sysfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 FAKE_CUDA_NVLINK=$all_pairs \
  expect_status 0 quick_run "$MGPU_RUN" -v -n 4 true
expect_in "$work/err" "(hwloc's places"
rm -f "$work"/sysfs/bus/pci/devices/*/local_cpulist
FAKE_NVML_GPUS=2 FAKE_CUDA_GPUS=2 expect_status 0 quick_run "$MGPU_RUN" -n 2 true
[ ! -e "$work/inits" ] || { cat "$work/inits"; fail "mgpu-run initialised the driver for -n on alike GPUs"; }
FAKE_NVML_GPUS=2 FAKE_CUDA_GPUS=2 FAKE_NVML_OTHER_NAME=1 expect_status 0 \
  quick_run "$MGPU_RUN" -v -n 2 true
expect_in "$work/err" "the GPUs differ (Fake GPU and Fake GPU of another kind), so the CUDA driver's order may not be their bus order; the CUDA driver gives the topology"
[ "$(wc -l < "$work/inits")" -eq 1 ] || fail "-n 2 on two GPUs that differ did not initialise the driver once"
FAKE_NVML_GPUS=2 FAKE_CUDA_GPUS=2 FAKE_NVML_OTHER_NAME=1 CUDA_DEVICE_ORDER=PCI_BUS_ID \
  expect_status 0 quick_run "$MGPU_RUN" -n 2 true
[ "$(wc -l < "$work/inits")" -eq 1 ] || fail "under CUDA_DEVICE_ORDER=PCI_BUS_ID, mgpu-run asked the driver"
FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
  expect_status 0 quick_run "$MGPU_RUN" sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "2,3"
[ "$(wc -l < "$work/inits")" -eq 1 ] || fail "mgpu-run initialised the driver to share GPUs among ranks"
pass "-n on several GPUs, and ranks sharing a node's, choose from NVML's topology without the driver where the GPUs are alike"

# NVML's answers are kept between runs (issue 46: asking took 45 ms for a
# list and 105 ms for -n 4 on 4 x H200) under a key of the boot, the NVIDIA
# driver's version, the GPUs it lists and its MIG capabilities, read from a
# procfs of the test's (MGPU_PROCFS). (kept_run ARGS...: mgpu-run -v ARGS
# with it, NVML's starts logged in $work/nvml-inits.)
proc="$work/procfs"
mkdir -p "$proc/sys/kernel/random" "$proc/driver/nvidia/capabilities/mig"
for i in 0 1 2 3; do
  mkdir -p "$proc/driver/nvidia/gpus/0000:fa:0$i.0"
  echo 0-3 > "$work/sysfs/bus/pci/devices/0000:fa:0$i.0/local_cpulist"
done
echo 3e1c0000-boot-1 > "$proc/sys/kernel/random/boot_id"
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.00  (fake)" > "$proc/driver/nvidia/version"
kept_run() {
  rm -f "$work/nvml-inits"
  MGPU_PROCFS="${kept_procfs:-$proc}" MGPU_SYSFS="$work/sysfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 \
    FAKE_CUDA_NVLINK=$all_pairs FAKE_NVML_INIT_LOG="$work/nvml-inits" expect_status 0 \
    quick_run "$MGPU_RUN" -v "$@" sh -c 'echo "$CUDA_VISIBLE_DEVICES $MGPU_ENTRIES"'
}
asked() { [ -s "$work/nvml-inits" ] || { cat "$work/err"; fail "$1: NVML not asked"; }
  expect_match "$work/err" "NVML's answers asked in [0-9.]+"; }
kept() { [ ! -e "$work/nvml-inits" ] || { cat "$work/err"; fail "$1: NVML asked again"; }
  expect_match "$work/err" "NVML's answers kept from an earlier run, read in [0-9.]+"; }
answers="$MGPU_CACHE_DIR/nvml-answers"
rm -f "$answers"
kept_run -n 4; asked "the first -n 4"
expect_in "$work/out" "0,1,2,3 0,1,2,3"
expect_match "$answers" "^key [0-9a-f]{16}$"
expect_in "$answers" "gpu 0000:fa:03.0 "
kept_run -n 4; kept "a second -n 4"
expect_in "$work/out" "0,1,2,3 0,1,2,3"
expect_in "$work/err" "mgpu-run: GPUs 0,1,2,3, chosen and ordered from the topology of this machine (NVML)"
kept_run --gpus 1,2; kept "a list after -n 4"
expect_in "$work/out" "1,2 0,1"
# The program is told where the count came from (the runtime names that
# file if the driver's devices do not match), and only then.
rm -f "$work/nvml-inits"
MGPU_PROCFS="$proc" MGPU_SYSFS="$work/sysfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 \
  FAKE_CUDA_NVLINK=$all_pairs expect_status 0 quick_run "$MGPU_RUN" -n 2 sh -c 'echo "kept=$MGPU_NVML_KEPT"'
expect_in "$work/out" "kept=$answers"
MGPU_PROCFS="$work/no-procfs" FAKE_NVML_GPUS=4 FAKE_CUDA_GPUS=4 \
  expect_status 0 quick_run "$MGPU_RUN" -n 2 sh -c 'echo "kept=$MGPU_NVML_KEPT"'
expect_in "$work/out" "kept="
! grep -q "kept=." "$work/out" || fail "MGPU_NVML_KEPT set where NVML was asked"
# A list keeps only the count; -n then asks for the GPUs, and keeps them.
rm -f "$answers"
kept_run --gpus 0x2; asked "a first list"
expect_in "$answers" "gpus 0"
kept_run --gpus 3; kept "a second list"
kept_run -n 2; asked "-n after a list"
kept_run -n 2; kept "a second -n 2"
# A new boot, another driver, another GPU listed, a MIG instance made: asked again.
echo 3e1c0000-boot-2 > "$proc/sys/kernel/random/boot_id"
kept_run -n 2; asked "-n 2 after a reboot"
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.01  (fake)" > "$proc/driver/nvidia/version"
kept_run -n 2; asked "-n 2 after a driver update"
mkdir -p "$proc/driver/nvidia/gpus/0000:fa:04.0"
kept_run -n 2; asked "-n 2 with another GPU listed"
rmdir "$proc/driver/nvidia/gpus/0000:fa:04.0"
mkdir -p "$proc/driver/nvidia/capabilities/gpu0/mig/gi1"
kept_run -n 2; asked "-n 2 with a MIG instance made"
kept_run -n 2; kept "-n 2 after the answers were kept again"
# Another batch job or container on the node (its control groups) may see
# other GPUs through NVML: asked again.
mkdir -p "$proc/self" && echo "0::/system.slice/slurmstepd.scope/job_41/step_0" > "$proc/self/cgroup"
kept_run -n 2; asked "-n 2 in another job's control groups"
kept_run -n 2; kept "-n 2 again in that job"
# A file that is not what mgpu writes is ignored, and rewritten.
damage() {
  case $1 in
    cut) head -c 100 "$answers" ;;
    row) sed 's/^peer/pear/' "$answers" ;;
    count) sed 's/^count .*/count 70/' "$answers" ;;
    bus) sed 's/0000:fa:01.0/fa:1/' "$answers" ;;
    key) sed 's/^key .*/key 0123456789abcdef/' "$answers" ;;
  esac > "$work/damaged"
  cmp -s "$work/damaged" "$answers" && fail "damage $1 left the answers as they were"
  cp "$work/damaged" "$answers"
}
for d in cut row count bus key; do
  damage $d
  kept_run -n 2; asked "-n 2 on answers damaged ($d)"
  kept_run -n 2; kept "-n 2 after damaged answers ($d) were rewritten"
done
head -c 3000 /dev/urandom > "$answers"
kept_run -n 2; asked "-n 2 on random bytes"
# Nothing kept where the cache directory cannot be made, or without the
# NVIDIA driver's files: each run asks, and runs.
MGPU_CACHE_DIR="$answers/below" kept_run -n 2; asked "-n 2 with a cache directory that cannot be made"
MGPU_CACHE_DIR="$answers/below" kept_run -n 2; asked "-n 2 again with a cache directory that cannot be made"
# Nor in a directory others may write (/tmp is everyone's): what is kept
# there is read back into the program.
mkdir -p "$work/shared-cache" && chmod 777 "$work/shared-cache"
MGPU_CACHE_DIR="$work/shared-cache" kept_run -n 2; asked "-n 2 with a cache directory others may write"
MGPU_CACHE_DIR="$work/shared-cache" kept_run -n 2; asked "-n 2 again with a cache directory others may write"
[ ! -e "$work/shared-cache/nvml-answers" ] || fail "NVML's answers kept in a directory others may write"
rm -f "$answers"
kept_procfs="$work/no-procfs" kept_run -n 2
kept_procfs="$work/no-procfs" kept_run -n 2; asked "-n 2 without the NVIDIA driver's files"
[ ! -e "$answers" ] || fail "NVML's answers kept without a key"
rm -f "$work"/sysfs/bus/pci/devices/*/local_cpulist
pass "NVML's answers are kept between runs, asked again when the machine may have changed or the file is damaged"

expect_status 0 "$MGPU_RUN" --report true
expect_in "$work/err" "mgpu: report: true never loaded the CUDA driver; nothing to report"
pass "--report on a program that is not a CUDA program says so"

# Without --gpus, the GPUs and their order come from the topology: the
# machine's (here the fake driver's peer links) or an hwloc XML file's.
machines="$top_srcdir/tests/topology"
uuid() { printf 'GPU-fa000000-0000-0000-0000-0000000000%02x' "$1"; }
FAKE_CUDA_NVLINK=2-3 expect_status 0 "$MGPU_RUN" -v -n 2 sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "$(uuid 2),$(uuid 3)"
expect_in "$work/err" "mgpu-run: GPUs 2,3, chosen and ordered from the topology of this machine"
expect_in "$work/err" "mgpu-run: GPU 2: Fake GPU 2"
FAKE_CUDA_NVLINK=2-3 expect_status 0 "$MGPU_RUN" --gpus 1,0 sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "$(uuid 1),$(uuid 0)"
FAKE_CUDA_NO_PEER=0-1 expect_status 0 "$MGPU_RUN" -n 2 sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "$(uuid 0),$(uuid 2)"
pass "-n takes the best-linked GPUs (an NVLink pair, no pair without peer access); --gpus exactly those listed"

(cd "$top_srcdir" && FAKE_CUDA_GPUS=8 "$MGPU_RUN" -n 4 --topology tests/topology/two-socket-pcie.xml \
  sh -c 'echo "$MGPU_TOPOLOGY $CUDA_VISIBLE_DEVICES"') > "$work/out" 2> "$work/err" ||
  fail "mgpu-run --topology with a relative path"
expect_in "$work/out" "$(cd "$top_srcdir" && pwd -P)/tests/topology/two-socket-pcie.xml $(uuid 0),$(uuid 1),$(uuid 2),$(uuid 3)"
[ ! -s "$work/err" ] || { cat "$work/err"; fail "mgpu-run --topology said something"; }
if taskset -c 1 true 2> /dev/null; then
  # The XML taken for this machine: CPU 1 is on its second socket.
  FAKE_CUDA_GPUS=8 HWLOC_THISSYSTEM=1 MGPU_TOPOLOGY="$machines/two-socket-pcie.xml" \
    expect_status 0 taskset -c 1 "$MGPU_RUN" -n 2 sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
  expect_in "$work/out" "$(uuid 4),$(uuid 5)"
fi
pass "--topology and MGPU_TOPOLOGY: GPUs from an hwloc XML file, which the program is told of"

# Under MPI, the ranks on a node share its GPUs by topology: Open MPI's
# variables, two ranks on an 8-GPU node of two sockets.
for r in 0 1; do
  FAKE_CUDA_GPUS=8 OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=2 \
    OMPI_COMM_WORLD_RANK=$((r + 6)) expect_status 0 "$MGPU_RUN" -v \
    --topology "$machines/two-socket-pcie.xml" sh -c 'echo "$MGPU_RANK $CUDA_VISIBLE_DEVICES"'
  if [ $r = 0 ]; then first=0; else first=4; fi
  expect_in "$work/out" "$((r + 6)) $(uuid $first),$(uuid $((first + 1))),$(uuid $((first + 2))),$(uuid $((first + 3)))"
  expect_in "$work/err" "mgpu-run: rank $((r + 6)), local rank $r of 2 on this node (Open MPI): GPUs $first,"
done
FAKE_CUDA_GPUS=8 SLURM_LOCALID=3 SLURM_TASKS_PER_NODE="4(x2)" SLURM_NODEID=1 \
  expect_status 0 "$MGPU_RUN" -n 1 --topology "$machines/two-socket-pcie.xml" \
  sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "$(uuid 6)"
FAKE_CUDA_GPUS=8 MPI_LOCALRANKID=0 MPI_LOCALNRANKS=2 one_line_error 2 \
  "-n 5 asks for more than this rank's share: 8 GPUs on this node among 2 ranks, 4 each; give -n 4 or fewer" \
  "$MGPU_RUN" -n 5 --topology "$machines/two-socket-pcie.xml" true
FAKE_CUDA_GPUS=8 PMIX_LOCAL_RANK=x PMIX_LOCAL_SIZE=2 one_line_error 2 \
  "PMIX_LOCAL_RANK=x is not a rank or count" "$MGPU_RUN" true
FAKE_CUDA_GPUS=8 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
  expect_status 0 "$MGPU_RUN" --gpus 0,1 --topology "$machines/two-socket-pcie.xml" \
  sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "$(uuid 0),$(uuid 1)"
pass "under MPI (Open MPI, Slurm, Hydra, PMIx): each rank its share of the node's GPUs by topology; -n past it refused; --gpus as given"
if taskset -c 1 true 2> /dev/null; then
  # The XML taken for this machine: rank 1's GPUs (the second socket) are
  # near CPUs 1,3,5,7, of which it may use CPU 1 (of 0 and 1).
  FAKE_CUDA_GPUS=8 HWLOC_THISSYSTEM=1 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
    expect_status 0 taskset -c 0,1 "$MGPU_RUN" -v --topology "$machines/two-socket-pcie.xml" \
    sh -c 'grep Cpus_allowed_list /proc/self/status'
  expect_match "$work/out" "^Cpus_allowed_list:[[:space:]]+1$"
  expect_in "$work/err" "mgpu-run: the rank runs on CPUs 1, near its GPUs"
  # Allowed none of them, it stays where it is.
  FAKE_CUDA_GPUS=8 HWLOC_THISSYSTEM=1 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
    expect_status 0 taskset -c 0 "$MGPU_RUN" -v --topology "$machines/two-socket-pcie.xml" \
    sh -c 'grep Cpus_allowed_list /proc/self/status'
  expect_match "$work/out" "^Cpus_allowed_list:[[:space:]]+0$"
  expect_in "$work/err" "mgpu-run: the rank is not bound: none of the CPUs near its GPUs is allowed to it"
  pass "a rank runs on the CPUs near its GPUs that it may use"
fi

expect_status 0 "$MGPU_RUN" -n 2 --topology /nonexistent/node.xml sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
expect_in "$work/out" "$(uuid 0),$(uuid 1)"
expect_in "$work/err" "mgpu-run: cannot read the topology /nonexistent/node.xml"
expect_in "$work/err" "; taking GPUs in index order"
[ "$(wc -l < "$work/err")" -eq 1 ] || { cat "$work/err"; fail "more than one line for a missing topology"; }
expect_status 0 "$MGPU_RUN" -n 2 --topology "$machines/nvswitch-8gpu.xml" true
expect_in "$work/err" "has 8 GPUs but the driver sees 4; taking GPUs in index order"
one_line_error 2 "--topology needs a file name" "$MGPU_RUN" --topology= true
pass "a topology that cannot be used leaves index order, said in one line"

# --help's environment table lines up: every meaning on a variable's line
# starts in one column (longer values put it on the next line, in the same
# column).
"$MGPU_RUN" --help > "$work/help"
columns=$(awk '/^  MGPU_/ { if (NF > 2) { m = $0; sub(/^ *[^ ]+ +[^ ]+ +/, "", m); print length($0) - length(m) } }
               /^     +[^ ]/ && prev ~ /^  MGPU_/ { m = $0; sub(/^ +/, "", m); print length($0) - length(m) }
               { prev = $0 }' "$work/help" | sort -u | wc -l)
[ "$columns" -eq 1 ] || { cat "$work/help"; fail "--help's environment table has its meanings in $columns columns"; }
grep -q "presented as one device" "$work/help" && fail "--help says the GPUs are one device; the program sees every selected GPU"
pass "--help: the environment table lines up; the first lines say what the program sees"

# From the build tree, without MGPU_LIBDIR, mgpu-run finds its libraries in
# .libs beside it (not only where make install puts them).
(unset MGPU_LIBDIR; use_fake_driver; FAKE_CUDA_GPUS=2 "$MGPU_RUN" -n 1 true) > "$work/out" 2> "$work/err" ||
  { cat "$work/err"; fail "mgpu-run from the build tree without MGPU_LIBDIR"; }
pass "mgpu-run run from the build tree finds its libraries without MGPU_LIBDIR"
