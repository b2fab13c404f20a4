#!/bin/sh
# bench_wasm.sh - the BLOCK engine compiled to WebAssembly, run under node: bench/bench_wasm.c
# built twice with emcc -O2 (with -msimd128: the simd128 level and the portable loop of that
# module; without: the portable loop a plain wasm build has), float and double, one thread.
# usage: sh bench/bench_wasm.sh [N] [reps]      (N = 4096, reps = 7; EMCC, NODE override)
cd "$(dirname "$0")/.." || exit 1
EMCC=${EMCC:-emcc}
NODE=${NODE:-node}
n=${1:-4096}; reps=${2:-7}
command -v "$EMCC" >/dev/null || { echo "bench_wasm: $EMCC not found (Debian: emscripten)"; exit 1; }
# Debian's emscripten finds its node modules there; node 18+ needs fetch off for its loader
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "$($EMCC --version | head -n 1); node $($NODE --version); N = $n, best of $reps"
for real in float double; do
    for simd in -msimd128 ""; do
        "$EMCC" -std=c99 -O2 $simd -I. -DNBODY_REAL=$real -sALLOW_MEMORY_GROWTH=1 bench/bench_wasm.c -o "$tmp/b.js" || exit 1
        "$NODE" --no-experimental-fetch "$tmp/b.js" "$n" "$reps" | sed "s/^/${simd:-no -msimd128}: /"
    done
done
