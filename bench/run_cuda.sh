#!/bin/sh
# Device calls: build, tests (double and float), sanitizers, SASS counts, benchmarks; logs in $OUT.
# Usage: [STAGES="build test san sass bench-float bench-double"] sh bench/run_cuda.sh [quick|probe]
OUT=${OUT:-out}; mkdir -p "$OUT"
STAGES=${STAGES:-"build test san sass bench-float bench-double"}
has() { case " $STAGES " in *" $1 "*) return 0;; esac; return 1; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; nvcc --version | tail -2; date; } 2>&1 | tee "$OUT/device.txt"
if has build; then
  rm -rf build
  make -j16 WITH_CUDA=1 build/cuda_engines build/cuda_engines_float build/bench_gpu build/bench_gpu_float > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
if has test; then echo "== test-cuda"; make -s test-cuda 2>&1 | tee "$OUT/test.log" | grep -E "^==|FAIL|passed"; fi
if has san; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer $tool (NBODY_TEST_SMALL=1)"
    NBODY_TEST_SMALL=1 timeout $([ $tool = racecheck ] && echo 200 || echo 120) compute-sanitizer --tool $tool --error-exitcode 9 ./build/cuda_engines > "$OUT/sanitizer-$tool.log" 2>&1
    echo "exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^RESULT" "$OUT/sanitizer-$tool.log" | tail -3
  done
fi
if has sass; then
  for o in build/nbody_cuda.o build/nbody_cuda_float.o; do
    echo "== SASS per dense kernel ($o)"
    cuobjdump -sass "$o" | awk '/Function :/ {f=$3} /Function :/ || /MUFU|DFMA|DMUL|DADD|FFMA|FMUL|FADD|LDS/ {for(i=1;i<=NF;i++) if ($i ~ /^(MUFU|DFMA|DMUL|DADD|FFMA|FMUL|FADD|LDS)/) {split($i,a,"."); c[f" "a[1]]++}} END {for (k in c) print k, c[k]}' | grep cu_dense | sort
  done > "$OUT/sass.txt" 2>&1
fi
for p in float double; do
  has bench-$p || continue
  b=./build/bench_gpu; [ $p = float ] && b=./build/bench_gpu_float
  echo "== bench $p"; timeout ${BENCH_TIMEOUT:-300} $b $1 2>&1 | tee "$OUT/bench-$p.md"
done
