#!/bin/sh
# mgpu-info on the hand-written machines of tests/topology/ (the GPUs, links,
# NUMA placement and the decisions for each GPU count), on the fake driver's
# GPUs, and its one-line errors. No GPU needed.
. "$(dirname "$0")/common.sh"
MGPU_INFO="$top_builddir/src/mgpu-info"
machines="$top_srcdir/tests/topology"

expect_status 0 "$MGPU_INFO" --help
expect_in "$work/out" "Usage: mgpu-info [--topology FILE.xml] [-n N | --gpus LIST]"
expect_status 0 "$MGPU_INFO" --version
expect_in "$work/out" "mgpu-info "
pass "--help and --version"
# --ranks L: the groups of L MPI ranks on a node, by topology.
expect_status 0 "$MGPU_INFO" --ranks 4 --topology "$machines/two-socket-pcie.xml"
expect_in "$work/out" "4 MPI ranks on this node ($machines/two-socket-pcie.xml): 2 GPUs each, in local-rank order"
expect_in "$work/out" "  local rank 1: GPUs 2,3"
expect_in "$work/out" "  local rank 3: GPUs 6,7"
expect_status 0 "$MGPU_INFO" --ranks 3 --topology "$machines/two-socket-pcie.xml"
expect_in "$work/out" "  left out: 6,7 (8 GPUs do not divide among 3 ranks)"
expect_status 2 "$MGPU_INFO" --ranks 9 --topology "$machines/two-socket-pcie.xml"
expect_in "$work/err" "9 ranks on a node of 8 GPUs: each rank needs one; run at most 8 ranks per node"
pass "--ranks: each local rank's GPUs, a socket or a switch together; more ranks than GPUs refused"
# --bandwidth measures this machine's GPUs: not another machine's XML.
expect_status 2 "$MGPU_INFO" --bandwidth --topology "$machines/nvswitch-8gpu.xml"
expect_in "$work/err" "--bandwidth measures this machine's GPUs; leave out --topology"

# Under Open MPI's mpirun hwloc reads XML with its minimal parser, not
# libxml2 (tests/fake-mpi.sh loads these machines there): each must load so.
for xml in "$machines"/*.xml; do
  expect_status 0 env HWLOC_LIBXML_IMPORT=0 "$MGPU_INFO" --topology "$xml"
done
pass "every machine of tests/topology/ loads with hwloc's minimal XML parser"

expect_status 0 "$MGPU_INFO" --topology "$machines/two-socket-pcie.xml"
expect_in "$work/out" "topology: $machines/two-socket-pcie.xml; 8 GPUs, 2 sockets, 2 NUMA nodes"
expect_match "$work/out" "^0 +0000:03:00.0 +NVIDIA L40S +142 +2520 MHz +45.0 GiB +0 +0 +0,2,4,6$"
expect_match "$work/out" "^7 +0000:87:00.0 +NVIDIA L4 +58 +2040 MHz +22.5 GiB +1 +1 +1,3,5,7$"
expect_match "$work/out" "^GPU0 +X +PIX +PHB +PHB +SYS +SYS +SYS +SYS$"
expect_match "$work/out" "^GPU5 +SYS +SYS +SYS +SYS +PIX +X +PHB +PHB$"
expect_in "$work/out" "node 1 (socket 1): CPUs 1,3,5,7; GPUs 4,5,6,7"
expect_in "$work/out" "this process: not on this topology (the XML of another machine)"
expect_match "$work/out" "^  -n 2  GPUs 0,1 .* worst link PIX$"
expect_match "$work/out" "^  -n 4  GPUs 0,1,2,3 .* weights 0.250,0.250,0.250,0.250 .* worst link PHB$"
expect_match "$work/out" "^  -n 8  GPUs 0,1,2,3,4,5,6,7 .* weights 0.136,0.136,0.136,0.136,0.136,0.136,0.136,0.045 .*SYS$"
pass "two sockets of PCIe switches: one switch pair for -n 2, one socket for -n 4, GPU 7 weighs less"

expect_status 0 "$MGPU_INFO" --topology "$machines/nvswitch-8gpu.xml"
expect_match "$work/out" "^GPU3 +NV18 +NV18 +NV18 +X +NV18 +NV18 +NV18 +NV18$"
expect_match "$work/out" "^  -n 5  GPUs 0,1,2,3,4 .* weights 0.200,0.200,0.200,0.200,0.200 .* worst link NV18$"
pass "an NVSwitch box: NV18 everywhere, index order, equal weights"

MGPU_TOPOLOGY="$machines/nvlink-pairs.xml" expect_status 0 "$MGPU_INFO"
expect_match "$work/out" "^GPU1 +NV12 +X +NODE +NODE$"
expect_match "$work/out" "^  -n 2  GPUs 0,1 .* worst link NV12$"
expect_status 0 "$MGPU_INFO" --topology="$machines/nvlink-pairs.xml" -n 3
[ "$(wc -l < "$work/out")" -eq 1 ] || { cat "$work/out"; fail "-n 3 printed more than its decision"; }
expect_match "$work/out" "^  -n 3  GPUs 0,1,2 .* worst link NODE$"
pass "NVLink pairs (MGPU_TOPOLOGY), and -n shows one decision"

# A list that names a GPU several times: each device's share split among
# its GPUs (GPU 7, a third of GPU 0, keeps its smaller share whole).
expect_status 0 "$MGPU_INFO" --topology "$machines/nvswitch-8gpu.xml" --gpus 0x4
expect_match "$work/out" "^  --gpus GPUs 0,0,0,0  weights 0.250,0.250,0.250,0.250  worst link X$"
expect_in "$work/out" "4 GPUs on 1 device: each GPU its own slice of every launch"
expect_status 0 "$MGPU_INFO" --topology "$machines/two-socket-pcie.xml" --gpus 0,0,7
expect_match "$work/out" "^  --gpus GPUs 0,0,7  weights 0.376,0.376,0.248  worst link SYS$"
expect_in "$work/out" "3 GPUs on 2 devices"
expect_status 0 "$MGPU_INFO" --topology "$machines/nvlink-pairs.xml" --gpus 1,0
[ "$(wc -l < "$work/out")" -eq 1 ] || { cat "$work/out"; fail "--gpus 1,0 printed more than its decision"; }
expect_match "$work/out" "^  --gpus GPUs 1,0  weights 0.500,0.500  worst link NV12$"
one_line_error 2 "--gpus lists GPU 9 but the topology ($machines/nvlink-pairs.xml) has no such GPU; list GPUs from 0 to 3" \
  "$MGPU_INFO" --topology "$machines/nvlink-pairs.xml" --gpus 0,9
one_line_error 2 "-n and --gpus both choose GPUs; give one of them" \
  "$MGPU_INFO" --topology "$machines/nvlink-pairs.xml" --gpus 0 -n 2
pass "--gpus shows the decision for a list, GPUs repeated or not"

MGPU_DRIVER="$top_builddir/tests/fake/.libs/libfakecuda.so" FAKE_CUDA_GPUS=4 \
  FAKE_CUDA_NVLINK=1-3 FAKE_CUDA_NO_PEER=0-2 expect_status 0 "$MGPU_INFO"
expect_in "$work/out" "topology: this machine; 4 GPUs"
expect_match "$work/out" "^GPU0 +X +PCI +none +PCI$"
expect_match "$work/out" "^GPU1 +PCI +X +PCI +NV$"
expect_match "$work/out" "^  -n 2  GPUs 1,3 "
pass "this machine: the driver's GPUs, peer access and native peer atomics (as NVLink)"

printf 'not XML at all\n' > "$work/corrupt.xml"
one_line_error 1 "is not an hwloc XML topology (hwloc cannot parse it); make it again with lstopo --of xml" \
  "$MGPU_INFO" --topology "$work/corrupt.xml"
one_line_error 1 "cannot read the topology $work/none.xml: No such file or directory" \
  "$MGPU_INFO" --topology "$work/none.xml"
one_line_error 2 "-n 9 asks for 9 GPUs but the topology ($machines/nvlink-pairs.xml) has 4; use -n 4 or fewer" \
  "$MGPU_INFO" --topology "$machines/nvlink-pairs.xml" -n 9
one_line_error 2 "-n 0 is not a GPU count" "$MGPU_INFO" -n 0
one_line_error 2 "unknown option --bogus; see mgpu-info --help" "$MGPU_INFO" --bogus
one_line_error 2 "--topology needs a value" "$MGPU_INFO" --topology
MGPU_DRIVER=/nonexistent/libcuda.so.1 one_line_error 1 \
  "no GPU to show: " "$MGPU_INFO"
expect_in "$work/err" "give an hwloc XML topology with --topology FILE.xml"
MGPU_DRIVER="$top_builddir/tests/fake/.libs/libfakecuda.so" FAKE_CUDA_GPUS=0 one_line_error 1 \
  "no GPU to show: the CUDA driver does not start (CUDA_ERROR_NO_DEVICE)" "$MGPU_INFO"
pass "bad input: one line naming the fix"
