#!/bin/sh
# One call on the H100 machine (about 4 minutes): the engines that take their formulas from
# nbody.h's shared block (BEGIN SHARED FORMULAS), on the GPU. Builds with nvcc -O3 -arch=sm_90,
# runs the CUDA tests in double and float, the OpenCL tests in double and float on NVIDIA's
# OpenCL driver, then the dense CUDA figures (bench_gpu_float quick) to set beside earlier runs.
# Prints the RESULT lines; logs go to $OUT (or out/).
#   mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd && sh bench/device_formulas.sh
OUT=${OUT:-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.." || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; git rev-parse --short HEAD 2>/dev/null; } | tee "$OUT/device.txt"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

# OpenCL headers and loader: the system's, else the ones the CUDA toolkit ships
cuda=${CUDA_HOME:-/usr/local/cuda}
extra=""
if ! printf '#define CL_TARGET_OPENCL_VERSION 120\n#include <CL/cl.h>\nint main(void){cl_uint n; return (int)clGetPlatformIDs(0, 0, &n);}\n' |
        ${CC:-cc} -x c - -o /dev/null -lOpenCL >/dev/null 2>&1; then
    extra="-I$cuda/include -L$cuda/lib64"
    export LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "using OpenCL headers and loader from $cuda"
fi

make -s -j16 WITH_CUDA=1 NVFLAGS="-O3 -arch=sm_90" build/cuda_engines build/cuda_engines_float build/bench_gpu_float \
    > "$OUT/build.log" 2>&1 || tail -20 "$OUT/build.log"
make -s -j16 BUILD=build/device-formulas WITH_OPENCL=1 CFLAGS="-O2 $extra" \
    build/device-formulas/test_opencl build/device-formulas/test_opencl_float >> "$OUT/build.log" 2>&1 || tail -20 "$OUT/build.log"
el built

echo "== CUDA tests"
for t in cuda_engines cuda_engines_float; do
    NBODY_REQUIRE_CUDA=1 timeout 150 ./build/$t > "$OUT/$t.log" 2>&1
    echo "$t exit $?: $(grep -c '^FAIL' "$OUT/$t.log") FAIL lines, $(grep RESULT "$OUT/$t.log")"; grep '^FAIL' "$OUT/$t.log" | head -5
done
el cuda-tests

echo "== OpenCL tests on the GPU (NVIDIA's driver)"
command -v clinfo >/dev/null 2>&1 && clinfo -l
for t in test_opencl test_opencl_float; do
    NBODY_OPENCL_DEVICE=gpu NBODY_REQUIRE_OPENCL=1 timeout 60 ./build/device-formulas/$t > "$OUT/$t.log" 2>&1
    echo "$t exit $?: $(grep -c '^FAIL' "$OUT/$t.log") FAIL lines, $(grep RESULT "$OUT/$t.log")"; grep '^FAIL' "$OUT/$t.log" | head -5
done
el opencl-tests

echo "== bench_gpu_float quick (dense and tree figures)"
timeout 60 ./build/bench_gpu_float quick > "$OUT/bench_gpu_float.md" 2>&1; grep -E '^\|' "$OUT/bench_gpu_float.md" | head -12
el done
