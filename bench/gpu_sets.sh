# Sourced by the bench/run-*.sh scripts that compare GPU sets: default_sets
# GPUS prints GPU 0 two, four and eight times, then the first 2, 4 and 8
# distinct GPUs where there are that many.
default_sets() {
  sets="0x2 0x4 0x8"
  for k in 2 4 8; do
    [ "$k" -le "$1" ] && sets="$sets $(seq -s, 0 $((k - 1)))"
  done
  echo "$sets"
}
