#!/bin/sh
# The footprint check of tests/gpu-footprints.sh over the corpus (issue 45:
# bench/corpus, built by `make corpus`): every program run with every launch
# split over GPU 0 eight times under the footprint-check probe, no byte
# touched outside its slice's footprint, the output the plain run's.
# Skipped where the corpus is not built. A test of its own, apart from the
# test programs' and examples', so that each ends within minutes.
MGPU_TEST_FOOTPRINT_PROGRAMS="bench/corpus/matvec_atax bench/corpus/matvec_bicg
  bench/corpus/kmeans bench/corpus/black_scholes bench/corpus/monte_carlo
  bench/corpus/sgemm_tiled_repeat bench/corpus/underoccupied bench/corpus/nbody_allpairs
  bench/corpus/thrust_sort bench/corpus/cub_sort_scan bench/corpus/histogram_shared
  bench/corpus/stencil3d_512 bench/corpus/lu_shrinking"
export MGPU_TEST_FOOTPRINT_PROGRAMS
exec sh "$(dirname "$0")/gpu-footprints.sh"
