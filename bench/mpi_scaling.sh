#!/bin/sh
# mpi_scaling.sh - 2 ranks x 1 thread against 1 rank x 2 threads (and the plain process, no
# MPI) for the BLOCK and TREE engines at N (default 2^15): the CPU figure of docs/scaling.md.
# Writes bench/results/scaling-<date>.md (and prints it).
# Usage: [PASSES=5] [ENGINES="block tree"] [OUT=file.md] sh bench/mpi_scaling.sh [N]
# Each pass runs the four modes of an engine back to back and prints the same-pass ratio
# 2 ranks x 1 thread / 1 rank x 2 threads; the summary gives the medians over the passes
# (a shared machine's load changes between passes more than within one).
cd "$(dirname "$0")/.." || exit 1
n=${1:-32768}
PASSES=${PASSES:-5}
ENGINES=${ENGINES:-block tree}
make -s build/mpi_scaling || exit 1
ROOT_FLAG=""; [ "$(id -u)" -eq 0 ] && ROOT_FLAG="--allow-run-as-root"
# containers: no ptrace-based single copy, no binding; a rank waiting in a collective yields
# its core (as tests/test_mpi.sh): on a machine shared with other jobs a busy-polling rank
# spends its time slices spinning while the rank it waits for is not running
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none \
    OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
out=${OUT:-bench/results/scaling-$(date +%Y-%m-%d).md}
run() { mpirun $ROOT_FLAG --oversubscribe -np "$1" build/mpi_scaling "$n" "$2" "$3" $4; }
{
    echo "# CPU: ranks x threads, N = $n ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "Command: PASSES=$PASSES ENGINES=\"$ENGINES\" sh bench/mpi_scaling.sh $n (OMPI_MCA_mpi_yield_when_idle=$OMPI_MCA_mpi_yield_when_idle)."
    echo "Milliseconds per force evaluation (median leapfrog step of each run)."
    echo "plain: one process without MPI (BLOCK: the symmetric kernel); mpi: the distributed engine"
    echo "(BLOCK: the one-sided kernel on each slice, whose forces do not depend on the ranks)."
    echo
    echo "| mode | ranks | threads | engine | N | ms / evaluation |"
    echo "|---|---:|---:|---|---:|---:|"
    pass=0
    while [ $pass -lt "$PASSES" ]; do    # interleaved passes: the spread shows the noise of a shared machine
        pass=$((pass + 1))
        for e in $ENGINES; do
            run 1 1 $e --plain
            run 1 2 $e --plain
            a=$(run 1 2 $e); echo "$a"
            b=$(run 2 1 $e); echo "$b"
            echo "$a $b" | awk -F'|' -v p=$pass -v e=$e '{ printf "| ratio | pass %d | 2x1 / 1x2 | %s | | %.3f |\n", p, e, $14 / $7 }'
        done
    done
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out.tmp"
{
    cat "$out.tmp"
    echo
    echo "Medians over the passes, and the median of the same-pass ratios 2 ranks x 1 thread / 1 rank x 2 threads:"
    echo
    echo "| engine | passes | plain 1 x 2 | mpi 1 x 2 | mpi 2 x 1 | median same-pass 2x1 / 1x2 | min | max | mpi 2x1 / plain 1x2 (medians) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for e in $ENGINES; do
        med() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
        col() { awk -F'|' -v e="$e" -v k="$1" '{ m = $2; r = $3; t = $4; en = $5; gsub(/ /, "", m); gsub(/ /, "", r); gsub(/ /, "", t); gsub(/ /, "", en) }
                 en == e && m "/" r "x" t == k { print $7 + 0 }' "$out.tmp"; }
        ratios() { awk -F'|' -v e="$e" '$2 ~ /ratio/ { en = $5; gsub(/ /, "", en); if (en == e) print $7 + 0 }' "$out.tmp"; }
        p=$(col plain/1x2 | med); a=$(col mpi/1x2 | med); b=$(col mpi/2x1 | med)
        rm_=$(ratios | med); rmin=$(ratios | sort -n | head -n 1); rmax=$(ratios | sort -n | tail -n 1); np_=$(ratios | wc -l)
        echo "$e $np_ $p $a $b $rm_ $rmin $rmax" | awk '{ printf "| %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f |\n", $1, $2, $3, $4, $5, $6, $7, $8, $5 / $3 }'
    done
} > "$out"
rm -f "$out.tmp"
tail -n 7 "$out"
