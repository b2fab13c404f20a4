#!/bin/sh
# The BLOCK engine built with plain `cc -O2` (run-time SIMD dispatch) beside the same program
# built with `-O2 -march=native`, double and float, 2 threads: one line per N with both
# figures and their ratio. Best of REPS (default 7) per figure: run it a few times on a
# shared machine. Usage: sh bench/bench_dispatch.sh [reps]   (make bench-dispatch)
cd "$(dirname "$0")/.." || exit 1
CC=${CC:-cc}; REPS=${1:-7}
OMP=$(printf 'int main(void){return 0;}' | $CC -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for real in double float; do
    $CC -std=c99 -O2 -ffp-contract=off $OMP -I. -DNBODY_REAL=$real bench/bench_block.c -o "$tmp/disp" -lm || exit 1
    $CC -std=c99 -O2 -march=native -ffp-contract=off $OMP -I. -DNBODY_REAL=$real bench/bench_block.c -o "$tmp/native" -lm || exit 1
    "$tmp/disp" "$REPS" > "$tmp/d.txt"; "$tmp/native" "$REPS" > "$tmp/n.txt"
    paste -d '|' "$tmp/d.txt" "$tmp/n.txt" | awk -F'|' '{
        split($1, a, " "); split($2, b, " ");
        printf "BLOCK %s %s: cc -O2 (dispatch, %s) %s /s, -O2 -march=native %s /s, dispatch/native %.3f\n",
               a[2], a[4], a[3], a[6], b[6], a[6] / b[6] }'
done
