#!/bin/sh
# What an MPI rank's run says of itself (issue 22), on the fake GPU (no GPU
# or MPI needed: the launcher's variables are set by hand, as Open MPI
# would): two ranks of one node, each on its share of the four fake GPUs,
# with --report -v --trace. Each must run right; its report must name its
# rank and node, its messages its rank, and its trace go to t.rankN.json
# with the rank as the process; `mgpu-info --merge-traces` must put the two
# files side by side and refuse a file twice or a file that is no trace.
. "$(dirname "$0")/common.sh"
use_fake_driver
export FAKE_CUDA_GPUS=4
client=tests/fake/fake_gpu_client
info="$top_builddir/src/mgpu-info"
host=$(hostname)
for r in 0 1; do
  OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_COMM_WORLD_RANK=$((r + 4)) \
    OMPI_COMM_WORLD_SIZE=8 "$MGPU_RUN" --report -v --trace "$work/t.json" $client \
    > "$work/rank$r.out" 2> "$work/rank$r.err" ||
    { cat "$work/rank$r.out" "$work/rank$r.err" >&2; fail "rank $r exited $?"; }
  expect_in "$work/rank$r.out" "fake_gpu_client: results correct"
  expect_in "$work/rank$r.err" "mgpu report: rank $((r + 4)) on $host"
  expect_match "$work/rank$r.err" "^mgpu\\[rank $((r + 4))\\]: "
  expect_in "$work/rank$r.err" "mgpu-run: rank $((r + 4)), local rank $r of 2 on this node (Open MPI): GPUs $((2 * r)),$((2 * r + 1))"
  [ -f "$work/t.rank$((r + 4)).json" ] || fail "rank $r wrote no t.rank$((r + 4)).json"
  expect_in "$work/t.rank$((r + 4)).json" "\"pid\":$((r + 4)),\"args\":{\"name\":\"mgpu rank $((r + 4)) on $host\"}"
done
[ ! -e "$work/t.json" ] || fail "a rank wrote t.json itself"
pass "each rank: its GPUs, its report, messages and trace file name it"

expect_status 0 "$info" --merge-traces "$work/all.json" "$work/t.rank4.json" "$work/t.rank5.json"
expect_in "$work/out" "merged 2 traces into $work/all.json"
expect_in "$work/all.json" '"name":"mgpu rank 4 on'
expect_in "$work/all.json" '"name":"mgpu rank 5 on'
expect_in "$work/all.json" '"merged_files":2'
events=$(grep -c '"ph":"X"' "$work/all.json")
[ "$events" -eq $(($(grep -c '"ph":"X"' "$work/t.rank4.json") + $(grep -c '"ph":"X"' "$work/t.rank5.json"))) ] ||
  fail "the merge kept $events of the ranks' events"
# One event per line, separated by single commas, the list closed.
if grep -q ',,' "$work/all.json" || ! tail -n 1 "$work/all.json" | grep -q '^\],"otherData"'; then
  cat "$work/all.json" >&2
  fail "the merged file is not well-formed"
fi
if command -v python3 > /dev/null 2>&1; then
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/all.json" ||
    fail "the merged file is not JSON"
fi
one_line_error 1 "are both process 4: merge the files of different ranks" \
  "$info" --merge-traces "$work/twice.json" "$work/t.rank4.json" "$work/t.rank4.json"
[ ! -e "$work/twice.json" ] || fail "a refused merge left its output"
one_line_error 1 "is not an mgpu trace (written with --trace)" \
  "$info" --merge-traces "$work/bad.json" "$work/rank0.out"
one_line_error 2 "--merge-traces needs OUT.json and the ranks' files" "$info" --merge-traces "$work/x.json"
pass "mgpu-info --merge-traces: one process per rank; a rank twice, a file that is no trace, refused"

MGPU_RANK=-3 one_line_error 2 "MGPU_RANK=-3 is not a rank; mgpu-run sets it under MPI" "$MGPU_RUN" true
pass "a bad MGPU_RANK is one line naming the fix"
