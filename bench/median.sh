# Sourced by the bench/run-*.sh scripts: median FILE prints the median of
# the numbers in FILE, one per line.
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# spread FILE prints the smallest and largest as "min–max".
spread() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s–%s\n", lo, hi }'; }
