#!/bin/sh
# hermite_ab.sh - bench/bench_hermite built against the nbody.h of two commits, run alternately
# (old, new, old, new, ...) ROUNDS times in one call, so that other work on the machine slows
# both alike: each run's wall seconds, then per build the median and the best, the energy
# error and the block steps (the same bits expected where only speed changed), and the load
# average before and after.
#   OLD=rev NEW=rev ROUNDS=9 THREADS=2 sh bench/hermite_ab.sh [bench_hermite arguments]
# Defaults: OLD=main, NEW=HEAD, ROUNDS=9, THREADS=2, arguments 1024 6 0.2 block block 1 42 0.03125
# (the N = 1024 figure: order 6, eta 0.2, dt_max 1/32). Builds go to build/hermite_ab/.
# RUN is a command prefix for each run: on a machine busy with other work, RUN='chrt -f 10'
# (real-time priority, root) gives the runs the cores, as on an idle machine; a busy machine
# otherwise deschedules the threads between barriers and times ten to a hundred times longer.
set -e
OLD=${OLD:-main}; NEW=${NEW:-HEAD}; ROUNDS=${ROUNDS:-9}; THREADS=${THREADS:-2}
[ $# -gt 0 ] || set -- 1024 6 0.2 block block 1 42 0.03125
dir=build/hermite_ab
mkdir -p $dir/old $dir/new
git show "$OLD:nbody.h" > $dir/old/nbody.h
git show "$NEW:nbody.h" > $dir/new/nbody.h
for b in old new; do
    ${CC:-cc} -std=c99 -O2 -ffp-contract=off -fopenmp -I $dir/$b bench/bench_hermite.c -o $dir/bh_$b -lm
done
load0=$(cut -d ' ' -f 1-3 /proc/loadavg)
: > $dir/runs.txt
r=1
while [ $r -le "$ROUNDS" ]; do
    for b in old new; do
        OMP_NUM_THREADS=$THREADS $RUN ./$dir/bh_$b "$@" | tail -1 | sed "s/^/$b /" >> $dir/runs.txt
    done
    r=$((r + 1))
done
load1=$(cut -d ' ' -f 1-3 /proc/loadavg)
echo "old = $(git rev-parse --short "$OLD"), new = $(git rev-parse --short "$NEW"), $THREADS threads, ${RUN:+$RUN }bench_hermite $*, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average before: $load0, after: $load1"
echo
echo "| build | abs(dE/E) | block steps | wall s, rounds 1-$ROUNDS | median | best |"
echo "| --- | --- | --- | --- | --- | --- |"
for b in old new; do
    awk -F'|' -v b=$b '$1 == b " " { w[++k] = $8 + 0; de = $7; st = $9 }
        END { line = ""; for (i = 1; i <= k; ++i) line = line sprintf(" %.3f", w[i])
              for (i = 1; i <= k; ++i) for (j = i + 1; j <= k; ++j) if (w[j] < w[i]) { t = w[i]; w[i] = w[j]; w[j] = t }
              med = k % 2 ? w[(k + 1) / 2] : (w[k / 2] + w[k / 2 + 1]) / 2
              printf "| %s |%s|%s|%s | %.3f | %.3f |\n", b, de, st, line, med, w[1] }' $dir/runs.txt
done
