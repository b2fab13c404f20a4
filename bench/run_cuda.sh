#!/bin/sh
# One device call: build, test, sanitizers, SASS counts, benchmarks; logs under $OUT.
# Usage: sh bench/run_cuda.sh [quick]
OUT=${OUT:-out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; nvcc --version | tail -2; date; } 2>&1 | tee "$OUT/device.txt"
rm -rf build
make -j8 WITH_CUDA=1 build/cuda_engines build/bench_gpu build/bench_gpu_float > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "== test-cuda"; make -s test-cuda 2>&1 | tee "$OUT/test.log"
for tool in memcheck racecheck; do
  echo "== compute-sanitizer $tool (NBODY_TEST_SMALL=1)"
  NBODY_TEST_SMALL=1 timeout $([ $tool = racecheck ] && echo 200 || echo 120) compute-sanitizer --tool $tool --error-exitcode 9 ./build/cuda_engines > "$OUT/sanitizer-$tool.log" 2>&1
  echo "exit $?"; tail -4 "$OUT/sanitizer-$tool.log"
done
for o in build/nbody_cuda.o build/nbody_cuda_float.o; do
  echo "== SASS per dense kernel ($o)"
  cuobjdump -sass "$o" | awk '/Function :/ {f=$3} /Function :/ || /MUFU|DFMA|DMUL|DADD|FFMA|FMUL|FADD|LDS/ {for(i=1;i<=NF;i++) if ($i ~ /^(MUFU|DFMA|DMUL|DADD|FFMA|FMUL|FADD|LDS)/) {split($i,a,"."); c[f" "a[1]]++}} END {for (k in c) print k, c[k]}' | grep cu_dense | sort
done > "$OUT/sass.txt" 2>&1
echo "== bench"; timeout ${BENCH_TIMEOUT:-330} make -s bench-cuda BENCH_ARGS=$1 2>&1 | tee "$OUT/bench.md"
