#!/bin/sh
# device_hermite.sh - bench_hermite on a GPU host's CPU: the 2-core figures on 2 pinned cores
# (taskset -c 0,1, two OpenMP threads), and the block/shared pair-interaction counts (counts
# only, on all cores). Writes $OUT/hermite-device.md. Run from the repository root.
set -e
OUT=${OUT:-out}
mkdir -p "$OUT"
cc -std=c99 -O2 -ffp-contract=off -fopenmp -I. bench/bench_hermite.c -o "$OUT/bench_hermite" -lm
B="$OUT/bench_hermite"
R="$OUT/hermite-device.md"
{
    echo "# bench_hermite on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(date -u +%F), $(nproc) cores"
    echo
    echo "## 2 cores (taskset -c 0,1, OMP_NUM_THREADS=2), Plummer (seed 42), no softening, t = 1"
    echo
    OMP_NUM_THREADS=2 taskset -c 0,1 $B 1024 4 0 block block 1 42
    OMP_NUM_THREADS=2 taskset -c 0,1 $B 1024 6 0 block block 1 42 | tail -1
    OMP_NUM_THREADS=2 taskset -c 0,1 timeout 150 $B 16384 4 0 block block 1 42 | tail -1
    echo
    echo "## block against shared steps, N = 16384, t = 1/32 (pair interactions; all cores, times not comparable)"
    echo
    $B scan 16384 4 0.03125 0.02 0.005
    STEPPING=shared timeout 60 $B scan 16384 4 0.03125 0.02 | tail -1
} > "$R" 2>&1
cat "$R"
