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
  NBODY_TEST_SMALL=1 timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 ./build/cuda_engines > "$OUT/san-$tool.log" 2>&1
  echo "compute-sanitizer $tool: exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|RESULT' "$OUT/san-$tool.log" | tr '\n' ' ')"
done
el sanitizers
echo "== bench_gpu quick (float, double)"
timeout 90 ./build/bench_gpu_float quick > "$OUT/bench_gpu_float.md" 2>&1; grep -E 'interactions|^\|' "$OUT/bench_gpu_float.md" | head -24
timeout 60 ./build/bench_gpu quick > "$OUT/bench_gpu.md" 2>&1; grep -E '^\|' "$OUT/bench_gpu.md" | head -12
el bench
echo "== make test on the host CPU (every SIMD level)"
NBODY_REQUIRE_OPENCL=0 timeout 240 make -s -j16 test > "$OUT/make-test.log" 2>&1; echo "exit $?"
grep -E 'SIMD levels tested|passed,|^FAIL' "$OUT/make-test.log" | head -12
el make-test
echo "== dispatched build against -march=native (BLOCK, 2 threads)"
timeout 60 make -s bench-dispatch > "$OUT/dispatch.log" 2>&1; grep -E 'BLOCK' "$OUT/dispatch.log" | head -8
el done
