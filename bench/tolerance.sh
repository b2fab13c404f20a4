#!/bin/sh
# The tree's tolerance advice, measured: build/bench_tolerance into bench/results/tolerance-tree.md
# (a few minutes on 2 cores).   sh bench/tolerance.sh [n] [t_end]
cd "$(dirname "$0")/.." || exit 1
make --no-print-directory build/bench_tolerance >/dev/null || exit 1
out=bench/results/tolerance-tree.md
{
    echo "# Adaptive tolerance on the tree engine (\`sh bench/tolerance.sh $*\`)"
    echo
    echo "$(uname -m), $(nproc) cores, $(date -u +%Y-%m-%d)"
    echo
    ./build/bench_tolerance "$@"
} > "$out"
rc=$?
cat "$out"
exit $rc
