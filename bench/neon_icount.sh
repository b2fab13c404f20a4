#!/bin/sh
# neon_icount.sh - the NEON level's instructions per interaction, read from the compiler's
# output (no ARM machine is needed): nbody.h compiled for AArch64 as the Makefile compiles it
# (-O2 -ffp-contract=off -fopenmp), disassembled, and the steady inner loop of each kernel
# counted by bench/icount.py, in double and float, beside the portable loop's and the tree's
# bucket sums. usage: sh bench/neon_icount.sh   (CC_A64, OBJDUMP_A64 override the tools)
cd "$(dirname "$0")/.." || exit 1
CC_A64=${CC_A64:-aarch64-linux-gnu-gcc}
OBJDUMP_A64=${OBJDUMP_A64:-aarch64-linux-gnu-objdump}
command -v "$CC_A64" >/dev/null || { echo "neon_icount: $CC_A64 not found (Debian: gcc-aarch64-linux-gnu)"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
printf '#define NBODY_IMPLEMENTATION\n#include "nbody.h"\n' > "$tmp/k.c"
echo "compiler: $($CC_A64 --version | head -n 1); flags: -std=c99 -O2 -ffp-contract=off -fopenmp"
echo "one interaction = the pull of one body on one other (the symmetric kernel's pass computes each pair once"
echo "for both bodies: 2 interactions per pair)"
for real in double float; do
    "$CC_A64" -std=c99 -O2 -ffp-contract=off -fopenmp -I. -DNBODY_REAL=$real -c "$tmp/k.c" -o "$tmp/k.o" || exit 1
    echo "== $real"
    "$OBJDUMP_A64" -d --no-show-raw-insn "$tmp/k.o" > "$tmp/k.s" || exit 1
    python3 bench/icount.py "NEON one-sided tile" nbody__v128_tile frsqrte \
        "portable loop" 'nbody__accel_block_portable_range*' fsqrt \
        "tree bucket, NEON" nbody__tree_visit fsqrt "tree bucket, generic" nbody__tree_visit fsqrt:scalar < "$tmp/k.s"
    python3 bench/icount.py "NEON symmetric rows" nbody__v128_sym_pair frsqrte < "$tmp/k.s" |
        awk '{ n = $4; p = $6; printf "%-34s %4d instructions, %2d pairs per pass: %5.2f per interaction\n", "NEON symmetric rows", n, p, n / (2 * p) }'
done
