#!/bin/sh
# hermite_kernel_ab.sh - NBODY_HERMITE's BLOCK kernels of two commits' nbody.h timed call by call
# in alternation in one process (bench/hermite_kernel_ab.c): robust to the load of a shared
# machine, where whole runs of bench_hermite spread by 20-50 %.
#   OLD=rev NEW=rev sh bench/hermite_kernel_ab.sh [calls]   (defaults: main, the working tree, 20000)
# NEW=. takes the working tree's nbody.h. One row per kernel: tile, lanes and predict at order 4
# and 6, chunk 512 (the chunk of N = 1024's many-body steps), at the AVX-512 and AVX2 levels this CPU
# runs. RUN is a command prefix for the driver (e.g. 'chrt -f 10 taskset -c 1').
set -e
OLD=${OLD:-main}; NEW=${NEW:-.}; CALLS=${1:-20000}
dir=build/hermite_kernel_ab
mkdir -p $dir/a $dir/b
git show "$OLD:nbody.h" > $dir/a/nbody.h
if [ "$NEW" = . ]; then cp nbody.h $dir/b/nbody.h; else git show "$NEW:nbody.h" > $dir/b/nbody.h; fi
for s in a b; do
    ${CC:-cc} -std=c99 -O2 -ffp-contract=off -fopenmp -fPIC -shared -fvisibility=hidden -DKAB_SIDE=$s -I $dir/$s \
        bench/hermite_kernel_ab.c -o $dir/libkab_$s.so -lm
done
${CC:-cc} -std=c99 -O2 bench/hermite_kernel_ab.c -o $dir/driver -L$dir -lkab_a -lkab_b -Wl,-rpath,"$(pwd)/$dir"
echo "a = $(git rev-parse --short "$OLD"), b = $([ "$NEW" = . ] && echo "working tree" || git rev-parse --short "$NEW"), $CALLS calls each, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d ' ' -f 1-3 /proc/loadavg)"
echo
echo "| kernel | level | order | chunk | a: fastest / median ns per source | b: fastest / median | b / a: fastest / median | bits | tile vs portable a / b |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for level in 3 2; do
    grep -q "avx512f" /proc/cpuinfo || [ $level = 2 ] || continue
    for what in tile lanes predict; do
        for order in 4 6; do $RUN ./$dir/driver $level $order $what 512 "$CALLS"; done
    done
done
