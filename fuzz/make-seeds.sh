#!/bin/sh
# Seed corpora for the fuzzers, from nvcc's output for the test kernels
# (tests/ptx/*.cu): PTX for every harness; for the image reader also cubins,
# fatbins in every compression mode nvcc offers and a host object that
# embeds a fatbin; PTX of the test programs (tests/programs) too; and NVML
# answers as mgpu-run keeps them, for their reader. Writes DIR/image,
# DIR/ptx, DIR/nvml.
#   fuzz/make-seeds.sh SRCDIR DIR [NVCC=nvcc] [ARCH=sm_90]
set -eu
srcdir=$1 dir=$2 nvcc=${3:-nvcc} arch=${4:-sm_90}
compute=$(echo "$arch" | sed 's/^sm_/compute_/')
mkdir -p "$dir/image" "$dir/ptx" "$dir/nvml"
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
