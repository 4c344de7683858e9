#!/bin/sh
# Seed corpora for the fuzzers, from nvcc's output for the test kernels
# (tests/ptx/*.cu): PTX for every harness; for the image reader also cubins,
# fatbins in every compression mode nvcc offers and a host object that
# embeds a fatbin; PTX of the test programs (tests/programs) too; and NVML
# answers as mgpu-run keeps them, for their reader; settings, traces and
# the links' kept bandwidths. Writes DIR/image, DIR/ptx, DIR/nvml,
# DIR/settings, DIR/trace, DIR/links.
#   fuzz/make-seeds.sh SRCDIR DIR [NVCC=nvcc] [ARCH=sm_90]
set -eu
srcdir=$1 dir=$2 nvcc=${3:-nvcc} arch=${4:-sm_90}
compute=$(echo "$arch" | sed 's/^sm_/compute_/')
mkdir -p "$dir/image" "$dir/ptx" "$dir/nvml" "$dir/settings" "$dir/trace" "$dir/links"
for cu in "$srcdir"/tests/ptx/*.cu; do
  name=$(basename "$cu" .cu)
  "$nvcc" -ptx -arch="$compute" -o "$dir/ptx/$name.ptx" "$cu"
  cp "$dir/ptx/$name.ptx" "$dir/image/$name.ptx"
  "$nvcc" -cubin -arch="$arch" -o "$dir/image/$name.cubin" "$cu"
  for mode in default size speed balance none; do
    "$nvcc" -fatbin -gencode arch="$compute",code="[$arch,$compute]" --compress-mode=$mode \
      -o "$dir/image/$name.$mode.fatbin" "$cu"
  done
  "$nvcc" -c -gencode arch="$compute",code="[$arch,$compute]" -o "$dir/image/$name.o" "$cu"
done
# More PTX in the styles of other people's code: the test programs.
for cu in "$srcdir"/tests/programs/*.cu; do
  "$nvcc" -ptx -arch="$compute" -I"$srcdir/tests/programs" -o "$dir/ptx/$(basename "$cu" .cu).ptx" "$cu"
done
# NVML's answers (partition/nvml_answers_text.c): a count alone, and four
# GPUs whose pairs differ.
printf 'mgpu-nvml-answers 1\ncount 8\nmig -1\ngpus 0\nend\n' > "$dir/nvml/count"
{ printf 'mgpu-nvml-answers 1\ncount 4\nmig -1\ngpus 1 1\n'
  for b in 18 2a 3b 4c; do printf 'gpu 0000:%s:00.0 150754820096 NVIDIA H200\n' $b; done
  for w in peer nvlink atomics; do printf '%s 0111\n%s 1011\n%s 1101\n%s 1110\n' $w $w $w $w; done
  printf 'end\n'; } > "$dir/nvml/four"
# Settings, a command line, MPI variables (fuzz/fuzz_settings.c).
printf 'MGPU_GPUS=0,1x2\nMGPU_SPLIT=auto\nMGPU_REPORT=1\n--\n-n\n2\n--report\n./app\n-x\n' > "$dir/settings/run"
printf 'OMPI_COMM_WORLD_LOCAL_RANK=1\nOMPI_COMM_WORLD_LOCAL_SIZE=4\nMGPU_MEMORY=driver\n--\n--gpus\n0x8\n--probe\nfootprint-check\n-v\n--\nprog\n' > "$dir/settings/mpi"
printf 'SLURM_LOCALID=0\nSLURM_TASKS_PER_NODE=2(x3),1\nSLURM_NODEID=3\nMGPU_BLAS_MIN=1024\n--\n--topology\nnode.xml\n-vv\nprog\n' > "$dir/settings/slurm"
printf 'MGPU_TRY_BUDGET=2.5%%+20ms\nMGPU_MIRROR_BUDGET=25%%\nMGPU_SPREAD_MIN=64M\n--\n-n\n4\nprog\n' > "$dir/settings/budgets"
# Two ranks' trace files, cut by a NUL (fuzz/fuzz_trace_merge.c).
{ printf '{"displayTimeUnit":"ms","traceEvents":[\n{"name":"k","ph":"X","pid":0,"tid":1,"ts":1.0,"dur":2.5}\n,{"name":"k","ph":"X","pid":0,"tid":2,"ts":4.0,"dur":1.0}\n]}\n'
  printf '\0'
  printf '{"displayTimeUnit":"ms","traceEvents":[\n{"name":"m","ph":"X","pid":1,"tid":1,"ts":1.5,"dur":2.0}\n]}\n'; } > "$dir/trace/two"
# The links' kept bandwidths (partition/link_cache_text.c), the first byte
# the count of devices less one, as fuzz/fuzz_link_cache.c reads it.
{ printf '\001mgpu links 1\nkey 0123456789abcdef\ndevices %032x %032x\nmeasurements 1\n' 1 2
  printf '1790.4 370.2\n369.8 1816.0\n'; } > "$dir/links/two"
{ printf '\003mgpu links 1\nkey 0123456789abcdef\ndevices %032x %032x %032x %032x\nmeasurements 3\n' 1 2 3 4
  printf '1790.4 370.2 370.1 369.9\n370.0 1816.0 370.3 370.2\n'
  printf '369.8 370.0 1802.7 370.4\n370.1 369.9 370.2 1811.1\n'; } > "$dir/links/four"
