#!/bin/sh
# mpi_scaling.sh - 2 ranks x 1 thread against 1 rank x 2 threads (and the plain process, no
# MPI) for the BLOCK and TREE engines at N (default 2^15): the CPU figure of docs/scaling.md.
# Writes bench/results/scaling-<date>.md (and prints it). Usage: sh bench/mpi_scaling.sh [N]
cd "$(dirname "$0")/.." || exit 1
n=${1:-32768}
make -s build/mpi_scaling || exit 1
ROOT_FLAG=""; [ "$(id -u)" -eq 0 ] && ROOT_FLAG="--allow-run-as-root"
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none
out="bench/results/scaling-$(date +%Y-%m-%d).md"
run() { mpirun $ROOT_FLAG --oversubscribe -np "$1" build/mpi_scaling "$n" "$2" "$3" $4; }
{
    echo "# CPU: ranks x threads, N = $n ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "Command: sh bench/mpi_scaling.sh $n. Milliseconds per force evaluation (median leapfrog step)."
    echo "plain: one process without MPI (BLOCK: the symmetric kernel); mpi: the distributed engine"
    echo "(BLOCK: the one-sided kernel on each slice, whose forces do not depend on the ranks)."
    echo
    echo "| mode | ranks | threads | engine | N | ms / evaluation |"
    echo "|---|---:|---:|---|---:|---:|"
    for pass in 1 2 3; do    # three times, interleaved: the spread shows the noise of a shared machine
        for e in block tree; do
            run 1 1 $e --plain
            run 1 2 $e --plain
            run 1 2 $e
            run 2 1 $e
        done
    done
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out.tmp"
{
    cat "$out.tmp"
    echo
    echo "Best of the passes (the least disturbed), and the ratio 2 ranks x 1 thread / 1 rank x 2 threads:"
    echo
    echo "| engine | plain 1 x 2 | mpi 1 x 2 | mpi 2 x 1 | mpi 2x1 / mpi 1x2 | mpi 2x1 / plain 1x2 |"
    echo "|---|---:|---:|---:|---:|---:|"
    awk -F'|' '$2 ~ /plain|mpi/ && $3+0 >= 1 { k = $5 "/" $2 "/" $3 "x" $4; gsub(/ /, "", k); v = $7 + 0;
        if (!(k in best) || v < best[k]) best[k] = v }
        END { split("block tree", es, " "); for (i = 1; i <= 2; ++i) { e = es[i];
            p = best[e "/plain/1x2"]; a = best[e "/mpi/1x2"]; b = best[e "/mpi/2x1"];
            printf "| %s | %.1f | %.1f | %.1f | %.2f | %.2f |\n", e, p, a, b, b / a, b / p } }' "$out.tmp"
} > "$out"
rm -f "$out.tmp"
tail -n 6 "$out"
