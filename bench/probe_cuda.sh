#!/bin/sh
# One exploratory device call (kernel work): build, tests (double and float), the probe
# tables (bench_gpu probe), SM clocks during them, SASS of the dense kernel, an ncu profile.
# Logs under $OUT: log.txt, clocks.txt, sass.txt, ncu.txt.
OUT=${OUT:-out}; mkdir -p "$OUT"
exec > "$OUT/log.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
rm -rf build
make -j16 WITH_CUDA=1 build/cuda_engines build/cuda_engines_float build/bench_gpu build/bench_gpu_float > build.log 2>&1 || { tail -30 build.log; exit 1; }
echo "== test double"; ./build/cuda_engines 2>&1 | grep -E "FAIL|RESULT|tree n|: \|dE"
echo "== test float"; ./build/cuda_engines_float 2>&1 | grep -E "FAIL|RESULT|tree n|: \|dE"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 500 > "$OUT/clocks.txt" 2>&1 &
MON=$!
echo "== probe float"; timeout ${PROBE_F:-150} ./build/bench_gpu_float probe
echo "== probe double"; timeout ${PROBE_D:-90} ./build/bench_gpu probe
kill $MON
cuobjdump -sass -fun '_Z15nbody__cu_denseIfLi4ELb0EEvPK9nbody__v4IT_EPS1_mmmmS1_S1_' build/nbody_cuda_float.o > "$OUT/sass.txt" 2>&1
cuobjdump -sass -fun '_Z14nbody__cu_walkIfLb1EEvPK9nbody__v4IT_EPKS1_PKjPS1_jjS1_S1_' build/nbody_cuda_float.o >> "$OUT/sass.txt" 2>&1
if command -v ncu >/dev/null; then
  timeout 90 ncu --clock-control none -k regex:cu_dense -c 1 --section SpeedOfLight --section SchedulerStats \
    --section WarpStateStats --section Occupancy --section InstructionStats ./build/bench_gpu_float one 262144 256 4 u > "$OUT/ncu.txt" 2>&1
  tail -5 "$OUT/ncu.txt"
fi
echo "== done"; date -u
