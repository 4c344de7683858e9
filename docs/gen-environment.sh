#!/bin/sh
# Writes docs/environment.md on stdout: the "Environment variables" table of
# `mgpu-run --help` as a Markdown table (variable | values | meaning).
#
#   sh docs/gen-environment.sh src/mgpu-run > docs/environment.md
#
# The help's table is one line per variable: two spaces, the name, the values
# (one word) and the meaning; a line indented further continues the meaning.
# tests/docs.sh fails when docs/environment.md differs from this output.
set -e
LC_ALL=C
export LC_ALL

if [ $# -ne 1 ]; then
  echo "usage: gen-environment.sh PATH/TO/mgpu-run > docs/environment.md" >&2
  exit 2
fi
help=$("$1" --help) || { echo "gen-environment.sh: '$1 --help' failed" >&2; exit 1; }

cat <<'EOF'
# Environment variables

Generated from `mgpu-run --help` by `docs/gen-environment.sh`; do not edit
this file. After changing the help text, run
`sh docs/gen-environment.sh src/mgpu-run > docs/environment.md` from the
build directory (`make check` fails while the two differ).

Every option of `mgpu-run` has a variable; an option wins over its
variable. `mgpu-run` passes the variables on to the program, where mgpu's
runtime reads them. [tuning.md](tuning.md) says which ones matter for
speed and what they trade.

EOF

printf '%s\n' "$help" | awk '
# esc(s): s with the characters Markdown would take as syntax in a table
# cell (| and *) escaped.
function esc(s,   out, i, c) {
  out = ""
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c == "|" || c == "*")
      out = out "\\"
    out = out c
  }
  return out
}
# names(s): the MGPU_ names in s, with a value given to them, as code.
function names(s,   out) {
  out = ""
  while (match(s, /MGPU_[A-Z_]+(=[a-z0-9]+)?/)) {
    out = out substr(s, 1, RSTART - 1) "`" substr(s, RSTART, RLENGTH) "`"
    s = substr(s, RSTART + RLENGTH)
  }
  return out s
}
# values(v): each alternative of v (split at the | outside brackets) as code.
function values(v,   out, item, depth, i, c) {
  out = ""; item = ""; depth = 0
  for (i = 1; i <= length(v); i++) {
    c = substr(v, i, 1)
    if (c == "[") depth++
    if (c == "]") depth--
    if (c == "|" && depth == 0) {
      out = out (out == "" ? "" : ", ") "`" esc(item) "`"
      item = ""
    } else
      item = item c
  }
  return out (out == "" ? "" : ", ") "`" esc(item) "`"
}
function flush() {
  if (name != "")
    print "| `" name "` | " values(vals) " | " names(esc(meaning)) " |"
  name = ""
}
/Environment variables/ { table = 1; next }
!table { next }
/^  MGPU_[A-Z_0-9]+ / {
  flush()
  name = $1; vals = $2
  meaning = $0
  sub(/^ *[^ ]+ +[^ ]+ */, "", meaning)
  if (++rows == 1) {
    print "| variable | values | meaning |"
    print "| --- | --- | --- |"
  }
  next
}
name != "" && /^    +[^ ]/ {
  line = $0
  sub(/^ +/, "", line)
  meaning = meaning (meaning == "" ? "" : " ") line
  next
}
{ flush(); table = 0 }
END {
  flush()
  if (rows == 0) {
    print "gen-environment.sh: no environment variables in the help" > "/dev/stderr"
    exit 1
  }
}
'

cat <<'EOF'

## Not in the help

| variable | meaning |
| --- | --- |
| `MGPU_LIBDIR` | where `mgpu-run` finds mgpu's `libcuda.so.1`, `mgpu_audit.so`, `libmgpu-blas.so` and `libmgpu-hostblas.so` (default: `.libs` beside an `mgpu-run` of a build tree, else the installed package library directory) |
| `MGPU_NVCC` | the `nvcc` that compiles `--probe FILE.cu` (default: `CUDA_HOME`'s, `CUDA_PATH`'s, `/usr/local/cuda`'s, then the one on `PATH`) |
| `MGPU_CACHE_DIR` | where compiled probes, NVML's answers about the machine (`nvml-answers`: its GPUs, bus ids, names, memory, peer links) and the links' measured bandwidths (`links-HASH`, one file per ordered set of devices) are kept between runs (default `$XDG_CACHE_HOME/mgpu`, else `~/.cache/mgpu`; a directory of another user, or one others may write, is not used); both are asked or measured again after a reboot, a driver change, a GPU added or removed or a MIG instance made, in another batch job or container (control group), and where the file is damaged; delete the files to have them asked and measured again |
| `MGPU_PROBE_DIR`, `MGPU_PROBE_INCLUDE` | the built-in probes' sources and the directory that holds `mgpu/probe.h` (default: where `make install` put them) |
| `MGPU_ENTRIES`, `MGPU_SHIM`, `MGPU_ACTIVE`, `MGPU_NCCL_SEEN` | set by `mgpu-run` for the program: the device each GPU of the run stands on, the shim's path, the mark that the program already runs under `mgpu-run` (a nested `mgpu-run` runs its program as it is), and the mark that the program made an NCCL communicator |
| `MGPU_LAUNCHER_NS` | set by `mgpu-run`: its own time before it ran the program, for the report's start-up line |
| `MGPU_NVML_KEPT` | set by `mgpu-run` where it counted the GPUs from NVML's kept answers: that file, which the runtime names if the driver's devices do not match |
| `MGPU_PROCFS` | for the tests: where mgpu reads what keys NVML's kept answers and the links' bandwidths (`sys/kernel/random/boot_id`, `driver/nvidia/version`, `driver/nvidia/gpus`, `driver/nvidia/capabilities`, `self/cgroup`; default `/proc`); without the NVIDIA driver's files there nothing is kept |
| `MGPU_SYSFS` | for the tests: where `mgpu-run -n` reads the CPUs near each GPU (`bus/pci/devices/ID/local_cpus` and `local_cpulist`) when NVLink joins every pair of GPUs (default `/sys`) |

The driver's JIT cache holds mgpu's compiled rewritten modules:
`CUDA_CACHE_PATH` (default `~/.nv/ComputeCache`), `CUDA_CACHE_MAXSIZE`,
`CUDA_CACHE_DISABLE=1` (see [how-it-works.md](how-it-works.md)).
EOF
