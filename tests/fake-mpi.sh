#!/bin/sh
# MPI ranks under mgpu-run (issue 22) with Open MPI's mpirun, on the fake
# GPU with 8 GPUs (no GPU needed): 1, 2, 4 and 8 ranks of
# tests/fake/mpi_client, each rank on its group of the node's GPUs. Every
# rank must move device memory right (a ring through host memory, through
# device pointers where the MPI is CUDA-aware, and rank 0's buffer opened
# by the others through an IPC handle); each rank's GPUs, as its
# `mgpu-run -v` line says, must number 8 / ranks, and the ranks' groups
# must not meet and must cover the 8. A rank asking for more than its
# share is refused in one line. The same on the XML machines of
# tests/topology/, whose groups must be those mgpu-info --ranks gives.
. "$(dirname "$0")/common.sh"
client=tests/fake/mpi_client
[ -x "$client" ] || { echo "skip: no $client (configure found no MPI)"; exit 77; }
command -v mpirun > /dev/null 2>&1 || { echo "skip: no mpirun"; exit 77; }
mpirun="mpirun --oversubscribe"
[ "$(id -u)" -eq 0 ] && mpirun="mpirun --allow-run-as-root --oversubscribe"
# No cross-memory attach between the ranks (containers forbid ptrace).
export OMPI_MCA_btl_vader_single_copy_mechanism=none
$mpirun -np 2 true > "$work/probe" 2>&1 || { cat "$work/probe"; echo "skip: mpirun does not start here"; exit 77; }
use_fake_driver
export FAKE_CUDA_GPUS=8

for ranks in 1 2 4 8; do
  # A rank of one GPU allocates from the driver, and the fake driver has no
  # IPC of plain allocations (a GPU's does: tests/gpu-ipc.sh).
  ipc=1
  [ "$ranks" -eq 8 ] && ipc=0
  MPI_CLIENT_IPC=$ipc timeout 120 $mpirun -np $ranks -x MPI_CLIENT_IPC "$MGPU_RUN" -v $client \
    > "$work/$ranks.out" 2> "$work/$ranks.err" ||
    { cat "$work/$ranks.out" "$work/$ranks.err" >&2; fail "$ranks ranks"; }
  right=$(grep -c "^mpi_client: rank [0-9]* of $ranks: right bytes" "$work/$ranks.out")
  [ "$right" -eq "$ranks" ] || { cat "$work/$ranks.out" >&2; fail "$right of $ranks ranks moved their bytes right"; }
  if [ "$ranks" -gt 1 ]; then
    # grep -o: the ranks' lines may run into one another on stderr.
    grep -o "local rank [0-9]* of $ranks on this node (Open MPI): GPUs [0-9,]*[0-9]" "$work/$ranks.err" |
      sed 's/.*GPUs //' > "$work/$ranks.groups"
    [ "$(wc -l < "$work/$ranks.groups")" -eq "$ranks" ] ||
      { cat "$work/$ranks.err" >&2; fail "$ranks ranks: not every rank said its GPUs"; }
    per=$((8 / ranks))
    while read -r group; do
      [ "$(echo "$group" | tr ',' '\n' | grep -c .)" -eq "$per" ] ||
        fail "$ranks ranks: a rank got GPUs $group, not $per"
    done < "$work/$ranks.groups"
    tr ',' '\n' < "$work/$ranks.groups" | sort -n > "$work/$ranks.all"
    [ "$(sort -u "$work/$ranks.all" | wc -l)" -eq 8 ] && [ "$(wc -l < "$work/$ranks.all")" -eq 8 ] ||
      { cat "$work/$ranks.groups" >&2; fail "$ranks ranks: the groups meet or miss GPUs"; }
  fi
  [ "$ipc" -eq 0 ] || [ "$(grep -c "right bytes (ring, IPC)" "$work/$ranks.out")" -eq "$ranks" ] ||
    fail "$ranks ranks: not every rank read rank 0's buffer through IPC"
  pass "$ranks rank(s): disjoint groups of $((8 / ranks)) GPU(s), device memory moved right (ring$([ "$ipc" -eq 1 ] && echo ", IPC"))"
done

# On the XML machines of tests/topology/ (the fake GPU standing for their
# GPUs): each rank's group as mgpu-info --ranks says for that machine.
for case in "two-socket-pcie 8 2" "two-socket-pcie 8 4" "nvswitch-8gpu 8 2" "nvswitch-8gpu 8 4" \
            "nvlink-pairs 4 2"; do
  set -- $case
  xml="$top_srcdir/tests/topology/$1.xml"
  "$top_builddir/src/mgpu-info" --ranks "$3" --topology "$xml" |
    sed -n 's/^  local rank \([0-9]*\): GPUs \([0-9,]*\).*/\1 \2/p' | sort > "$work/$1.$3.want"
  FAKE_CUDA_GPUS=$2 timeout 120 $mpirun -np "$3" -x FAKE_CUDA_GPUS "$MGPU_RUN" --topology "$xml" -v \
    $client > "$work/$1.$3.out" 2> "$work/$1.$3.err" ||
    { cat "$work/$1.$3.out" "$work/$1.$3.err" >&2; fail "$3 ranks on $1"; }
  grep -o "local rank [0-9]* of $3 on this node (Open MPI): GPUs [0-9,]*[0-9]" "$work/$1.$3.err" |
    sed 's/local rank \([0-9]*\) of .*GPUs \(.*\)/\1 \2/' | sort > "$work/$1.$3.got"
  [ -s "$work/$1.$3.want" ] && cmp -s "$work/$1.$3.want" "$work/$1.$3.got" ||
    { paste "$work/$1.$3.want" "$work/$1.$3.got" >&2; fail "$3 ranks on $1: not mgpu-info's groups"; }
  [ "$(grep -c "right bytes" "$work/$1.$3.out")" -eq "$3" ] || fail "$3 ranks on $1: wrong bytes"
  pass "$3 ranks on $1.xml: the groups mgpu-info --ranks $3 gives, bytes right"
done

timeout 60 $mpirun -np 4 "$MGPU_RUN" -n 3 $client > "$work/toomany.out" 2> "$work/toomany.err" &&
  fail "4 ranks of 3 GPUs each on 8 GPUs ran"
expect_match "$work/toomany.err" "mgpu-run: .*-n 3"
pass "-n 3 for each of 4 ranks on 8 GPUs: refused"
