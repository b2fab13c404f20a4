#!/bin/sh
# orbital_openmp.sh - no overhead at small N: bench_orbital's few-body runs (3 and 5 bodies,
# `bench_orbital small`) from a build with -fopenmp and from the same build without it, run
# alternately ROUNDS times (default 5); per run the smallest wall time and the smallest
# processor time of each build and their ratios (-fopenmp / without). On a shared machine
# the processor times are the steadier figure (neither build starts a thread for these).
# Threads: the OpenMP default (OMP_NUM_THREADS if set).
# Usage: sh bench/orbital_openmp.sh [ROUNDS]   (make bench-omp-small)
set -e
rounds=${1:-5}
cc=${CC:-cc}
mkdir -p build
flags="-std=c99 -O2 -ffp-contract=off -I."
$cc $flags -fopenmp bench/bench_orbital.c -o build/bench_orbital_omp -lm
$cc $flags bench/bench_orbital.c -o build/bench_orbital_noomp -lm
tmp=$(mktemp -d)
i=1
while [ "$i" -le "$rounds" ]; do
    build/bench_orbital_omp small >>"$tmp/omp"
    build/bench_orbital_noomp small >>"$tmp/noomp"
    i=$((i + 1))
done
echo "| run ($rounds rounds, min) | wall s -fopenmp | wall s without | ratio | cpu s -fopenmp | cpu s without | ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
awk 'FNR == NR { if (!($1 in a) || $2 + 0 < a[$1] + 0) a[$1] = $2; if (!($1 in c) || $3 + 0 < c[$1] + 0) c[$1] = $3
                 if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }; next }
     { if (!($1 in b) || $2 + 0 < b[$1] + 0) b[$1] = $2; if (!($1 in d) || $3 + 0 < d[$1] + 0) d[$1] = $3 }
     END { for (i = 1; i <= n; ++i) { k = order[i]
             printf "| %s | %.4f | %.4f | %.3f | %.4f | %.4f | %.3f |\n", k, a[k], b[k], (b[k] > 0 ? a[k] / b[k] : 0),
                    c[k], d[k], (d[k] > 0 ? c[k] / d[k] : 0) } }' "$tmp/omp" "$tmp/noomp"
rm -rf "$tmp"
