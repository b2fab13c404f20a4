#!/bin/sh
# radau_rebound.sh - NBODY_RADAU against REBOUND's IAS15 (pip's rebound, a benchmark tool only)
# on the outer solar system to 10^4 yr, in alternating rounds: ROUNDS times (default 3)
# nbody.h then REBOUND, R runs each (default 3), wall and processor seconds a run. nbody.h is
# built as `make` builds (-O2, without and with -fopenmp) and with -march=native added.
# Usage: sh bench/radau_rebound.sh [ROUNDS] [R]
set -e
ROUNDS=${1:-3}
R=${2:-3}
cc=${CC:-cc}
flags="-std=c99 -O2 -ffp-contract=off -I."
mkdir -p build
$cc $flags bench/bench_orbital.c -o build/bench_orbital_noomp -lm
$cc $flags -fopenmp bench/bench_orbital.c -o build/bench_orbital_omp -lm
$cc $flags -march=native bench/bench_orbital.c -o build/bench_orbital_native -lm
IC=$(mktemp)
trap 'rm -f "$IC"' EXIT
build/bench_orbital_noomp outer-ic > "$IC"
i=1
while [ "$i" -le "$ROUNDS" ]; do
    echo "round $i: $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "-O2:"; build/bench_orbital_noomp radau "$R"
    echo "-O2 -fopenmp:"; build/bench_orbital_omp radau "$R"
    echo "-O2 -march=native:"; build/bench_orbital_native radau "$R"
    python3 bench/rebound_ias15.py "$IC" "$R"
    i=$((i + 1))
done
