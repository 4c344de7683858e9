#!/bin/sh
# Runs every fuzzer for SECONDS each on its corpus (CORPUS/NAME, grown from
# the seeds in SEEDS/image or SEEDS/ptx) and fails if any finds anything:
# a crash, a sanitizer report, a broken promise, an input slower than 10 s
# or one that needs more than 2 GiB. Findings are kept as FINDINGS/NAME-*,
# each a file to rerun with `fuzz/NAME FILE`.
#   fuzz/run-fuzzers.sh SECONDS BINDIR SEEDS CORPUS FINDINGS [NAME...]
set -u
seconds=$1 bindir=$2 seeds=$3 corpus=$4 findings=$5
shift 5
names=${*:-"fuzz_image fuzz_ptx_roundtrip fuzz_rewrite fuzz_analysis fuzz_nvml_answers fuzz_settings fuzz_trace_merge fuzz_link_cache"}
mkdir -p "$findings"
failed=""
for name in $names; do
  case $name in fuzz_image) seed=$seeds/image ;; fuzz_nvml_answers) seed=$seeds/nvml ;; fuzz_settings) seed=$seeds/settings ;; fuzz_trace_merge) seed=$seeds/trace ;; fuzz_link_cache) seed=$seeds/links ;; *) seed=$seeds/ptx ;; esac
  mkdir -p "$corpus/$name"
  log=$findings/$name.log
  "$bindir/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/$name-" "$corpus/$name" "$seed" > "$log" 2>&1
  status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  if [ $status -eq 0 ]; then
    echo "$name: ${runs:-?} runs in ${seconds} s, no findings"
  else
    echo "$name: FINDING (exit $status) after ${runs:-?} runs; see $log:"
    grep -m 4 -E "ERROR|runtime error|broken:|SUMMARY" "$log" | sed 's/^/  /'
    failed="$failed $name"
  fi
done
[ -z "$failed" ] || { echo "run-fuzzers.sh: findings in$failed (inputs in $findings)" >&2; exit 1; }
