# Shared by the test scripts: paths into the build, a clean MGPU_* environment,
# and small assertions. Tests run from the top build directory.
. ./tests/env.sh

MGPU_RUN="$top_builddir/src/mgpu-run"
export MGPU_LIBDIR="$top_builddir/src/.libs"
for v in MGPU_RANK MGPU_NGPUS MGPU_GPUS MGPU_REPORT MGPU_TRACE MGPU_VERBOSE MGPU_SM_COUNT MGPU_AUDIT \
         MGPU_PASSTHROUGH MGPU_DRIVER MGPU_ACTIVE MGPU_SHIM MGPU_SPLIT MGPU_CALL_LOG \
         MGPU_DEVICE_COUNT MGPU_PLACEMENT MGPU_SPREAD_MIN MGPU_MEMORY MGPU_TOPOLOGY MGPU_ENTRIES MGPU_FORK_JOIN \
         MGPU_MIRROR MGPU_NCCL MGPU_NVML_KEPT MGPU_PROBES MGPU_PROBE_OUT MGPU_NVCC MGPU_BLAS MGPU_BLAS_MIN MGPU_HOST_BLAS_MIN MGPU_CUBLAS; do
  unset "$v"
done
# An MPI launcher's variables would make mgpu-run a rank: tests set them.
for v in OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE MPI_LOCALRANKID MPI_LOCALNRANKS \
         PMIX_LOCAL_RANK PMIX_LOCAL_SIZE SLURM_LOCALID SLURM_TASKS_PER_NODE; do
  unset "$v"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/mgpu-test.XXXXXX")
# The driver's JIT compiles mgpu's rewritten modules into the test's own cache,
# not the user's.
unset CUDA_CACHE_DISABLE CUDA_CACHE_MAXSIZE
export CUDA_CACHE_PATH="$work/jit-cache"
trap 'rm -rf "$work"' EXIT
# Probes come from the source tree and compile into the test's own cache.
export MGPU_PROBE_INCLUDE="$top_srcdir/probes/include" MGPU_PROBE_DIR="$top_srcdir/probes/tools"
export MGPU_CACHE_DIR="$work/mgpu-cache"
# No NVIDIA driver in this procfs: mgpu-run keeps no NVML answers between
# runs (src/run/machine_cache.h), so a fake NVML's answers, which change
# from one run to the next, are asked each time (tests/launcher-cli.sh
# gives the cache a procfs of its own).
export MGPU_PROCFS="$work/no-procfs"

# use_fake_driver: the programs run on the fake GPU of tests/fake. NCCL
# cannot run on it (it calls driver functions the fake lacks), so mirrors,
# on by default (MGPU_MIRROR=auto), refresh by device copies and combine
# privatised reductions with mgpu's own kernels there.
use_fake_driver() {
  export MGPU_DRIVER="$top_builddir/tests/fake/.libs/libfakecuda.so" MGPU_NCCL=0
}

# run_fake_client NAME ARGS...: $client under mgpu-run ARGS --report on the
# fake GPU, its output in $work/NAME.out and .err, the fake's counts at exit
# in $work/NAME.leaks: it must say its results are correct and leave no
# physical memory, mapping, reservation, allocation or module behind.
run_fake_client() {
  name=$1; shift
  FAKE_CUDA_LEAK_REPORT="$work/$name.leaks" "$MGPU_RUN" "$@" --report "$client" \
    > "$work/$name.out" 2> "$work/$name.err" || {
    cat "$work/$name.out" "$work/$name.err"; fail "$client under $* ($name)"; }
  expect_in "$work/$name.out" "fake_gpu_client: results correct"
  for kind in physical mappings reservations device_allocations modules; do
    expect_match "$work/$name.leaks" "^$kind 0\$"
  done
}

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# readme_commands OUT: the commands of README.md's code blocks that run
# one of mgpu's tools (mgpu-run, mgpu-ptx, mgpu-info), comments cut, one a
# line, into OUT (tests/fake-readme.sh, tests/gpu-readme.sh).
readme_commands() {
  awk '/^    [^ ]/ || /^```/ { print }' "$top_srcdir/README.md" |
    sed -n 's/^    //p' | grep -E '(^| )(\$HOME/mgpu/bin/)?mgpu-(run|ptx|info)( |$)' |
    sed -e 's/  *#.*$//' > "$1"
}

# expect_in FILE TEXT: FILE contains the fixed string TEXT.
expect_in() {
  grep -F -q -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "'$2' not in $1"; }
}

# expect_match FILE REGEX: a line of FILE matches the extended REGEX.
expect_match() {
  grep -E -q -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "no line of $1 matches '$2'"; }
}

# expect_status N COMMAND...: COMMAND exits with status N.
expect_status() {
  want=$1; shift
  "$@" > "$work/out" 2> "$work/err"
  got=$?
  [ "$got" -eq "$want" ] || { cat "$work/out" "$work/err" >&2; fail "'$*' exited $got, not $want"; }
}

# one_line_error STATUS TEXT COMMAND...: COMMAND exits with STATUS and says
# TEXT on stderr, in one line.
one_line_error() {
  want=$1; text=$2; shift 2
  expect_status "$want" "$@"
  expect_in "$work/err" "$text"
  [ "$(wc -l < "$work/err")" -eq 1 ] || { cat "$work/err"; fail "'$*' printed more than one line"; }
}

# entries_in SET: how many of the run's GPUs the --gpus list SET names.
entries_in() {
  echo "$1" | tr ',' '\n' | awk -F x '{ n += (NF > 1 ? $2 : 1) } END { print n }'
}

# repeats_a_gpu SET: the list names some GPU more than once, so its GPUs
# share devices: correct results prove something there, speed does not.
repeats_a_gpu() {
  [ "$(echo "$1" | tr ',' '\n' | sed 's/x.*//' | sort -u | wc -l)" -lt "$(entries_in "$1")" ]
}

# devices_in SET: how many distinct GPUs the --gpus list SET names.
devices_in() {
  echo "$1" | tr ',' '\n' | sed 's/x.*//' | sort -u | wc -l
}

# first_distinct_set: the first set of $entry_sets that repeats no GPU (two
# or more distinct GPUs), or nothing on a machine of one GPU.
first_distinct_set() {
  for set in $entry_sets; do
    repeats_a_gpu "$set" || { echo "$set"; return; }
  done
}

# require_gpu: skip (77) unless the real driver sees a GPU; then wait until
# no other GPU test of this user runs on the machine. Several tests check
# timings (a copy as fast as the program's module, a loop cut by iterations
# faster than plain) and decisions the cost model takes from timings; under
# make -j they shared the GPUs with each other and failed now and then.
require_gpu() {
  if ! "$top_builddir/tests/have_gpu" > "$work/have_gpu" 2>&1; then
    cat "$work/have_gpu"
    exit 77
  fi
  gpu_count=$(sed -n 's/^gpus=//p' "$work/have_gpu")
  # The --gpus lists the multi-GPU cases run with: GPU 0 two, three (uneven
  # cuts) and eight times, on any machine, and where there are several
  # GPUs, distinct ones too. MGPU_TEST_GPU_SETS replaces the list.
  entry_sets="0x2 0x3 0x8"
  [ "$gpu_count" -ge 2 ] && entry_sets="$entry_sets 0,1"
  [ "$gpu_count" -ge 4 ] && entry_sets="$entry_sets 0,1,2,3"
  entry_sets=${MGPU_TEST_GPU_SETS:-$entry_sets}
  if command -v flock > /dev/null 2>&1; then
    exec 9> "${TMPDIR:-/tmp}/mgpu-gpu-tests-$(id -u).lock"
    flock 9
  else
    echo "no flock(1): this GPU test may share the GPUs with others under make -j"
  fi
}
