#!/bin/sh
# One call on the H100 machine after the merges (about 9 minutes): the CUDA tests in double and
# float, compute-sanitizer memcheck and racecheck on the small pass, the headline CUDA figures
# (dense float and double, the tree at 2^20 and 2^24 with its error), then the CPU side on the
# host's AVX-512 Xeon: make test (every SIMD level) and the dispatched-against-native BLOCK line.
# Writes its logs to $OUT (or out/).
OUT=${OUT:-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.." || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep 'Model name'; date -u; git rev-parse --short HEAD 2>/dev/null; } | tee "$OUT/device.txt"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
make -s -j16 WITH_CUDA=1 build/cuda_engines build/cuda_engines_float build/bench_gpu_float build/bench_gpu > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; }
el built
echo "== test-cuda"
for t in cuda_engines cuda_engines_float; do NBODY_REQUIRE_CUDA=1 timeout 150 ./build/$t > "$OUT/$t.log" 2>&1; echo "$t exit $?: $(grep -c '^FAIL' "$OUT/$t.log") FAIL lines, $(grep RESULT "$OUT/$t.log")"; grep '^FAIL' "$OUT/$t.log" | head -5; done
el tests
for tool in memcheck racecheck; do
  NBODY_TEST_SMALL=1 timeout 75 compute-sanitizer --tool $tool --error-exitcode 9 ./build/cuda_engines > "$OUT/san-$tool.log" 2>&1
  echo "compute-sanitizer $tool: exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|RESULT' "$OUT/san-$tool.log" | tr '\n' ' ')"
done
el sanitizers
echo "== bench_gpu_float quick"
timeout 60 ./build/bench_gpu_float quick > "$OUT/bench_gpu_float.md" 2>&1; grep -E '^\|' "$OUT/bench_gpu_float.md" | head -30
echo "== test particles: 1% active against all (CUDA, N = 10^5)"
make -s -j16 WITH_CUDA=1 build/bench_steer > /dev/null 2>&1; timeout 40 ./build/bench_steer cuda 100000 1 2>&1 | tail -4
el bench
echo "== the host CPU: every SIMD level (tests/simd_levels.sh, test_simd, test_block)"
make -s -j16 build/test_simd build/test_block build/test_numeric_faults build/test_reproducible build/test_tree > /dev/null 2>&1
timeout 90 sh tests/simd_levels.sh 2>&1 | grep -E 'SIMD levels|RESULT|FAIL' | head -8
for t in test_simd test_block; do timeout 60 ./build/$t 2>&1 | grep -E '^FAIL|RESULT' | head -4; done
el cpu-tests
echo "== dispatched build against -march=native (BLOCK, 2 threads)"
timeout 50 sh bench/bench_dispatch.sh 5 2>&1 | grep -E 'BLOCK' | head -8
el done
