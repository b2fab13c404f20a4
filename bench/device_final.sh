#!/bin/sh
# The lead's one device call after all merges: CUDA tests + compute-sanitizer on the merged
# tree, then the OpenCL engines on the H100 through NVIDIA's driver with the CUDA ratio.
OUT=${OUT:-out}; mkdir -p "$OUT"
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git rev-parse --short HEAD 2>/dev/null; } | tee "$OUT/device.txt"
rm -rf build
make -j8 WITH_CUDA=1 build/cuda_engines > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "== test-cuda"; ./build/cuda_engines 2>&1 | tee "$OUT/test-cuda.log" | grep -E "FAIL|RESULT"
for tool in memcheck racecheck; do
  NBODY_TEST_SMALL=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 ./build/cuda_engines > "$OUT/sanitizer-$tool.log" 2>&1
  echo "== compute-sanitizer $tool: exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|RESULT" "$OUT/sanitizer-$tool.log" | tail -3
done
echo "== opencl"; timeout 240 sh bench/device_opencl.sh 262144 > "$OUT/opencl.md" 2>&1; echo "exit $?"
grep -E "FAIL|passed|interactions|\|" "$OUT/opencl.md" | head -60
