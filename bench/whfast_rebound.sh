#!/bin/sh
# whfast_rebound.sh - NBODY_WHFAST against REBOUND's WHFast (pip's rebound, a benchmark tool
# only) on the outer solar system, the rows of bench_orbital's whfast table, in alternating
# rounds: ROUNDS times (default 3) nbody.h then REBOUND, each row the smallest of R runs
# (default 5), wall and processor seconds. Usage: sh bench/whfast_rebound.sh [ROUNDS] [R]
set -e
ROUNDS=${1:-3}
R=${2:-5}
make -s build/bench_orbital
IC=$(mktemp)
trap 'rm -f "$IC"' EXIT
build/bench_orbital outer-ic > "$IC"
i=1
while [ "$i" -le "$ROUNDS" ]; do
    echo "round $i: $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
    build/bench_orbital whfast "$R"
    python3 bench/rebound_whfast.py "$IC" "$R"
    i=$((i + 1))
done
