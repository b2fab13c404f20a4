#!/bin/sh
# The OpenCL engines on an NVIDIA GPU (written for the H100 machine; run from anywhere):
# registers NVIDIA's OpenCL driver with the ICD loader, builds the OpenCL tests and
# benchmarks (with the CUDA engine beside them when nvcc and nbody_cuda.cu are there, so the
# OpenCL/CUDA ratio is measured in one run), runs the tests on the GPU with
# NBODY_REQUIRE_OPENCL=1, then the benchmarks, which print markdown tables.
#   sh bench/device_opencl.sh [max_n]        (max_n default 1048576)
# NBODY_OPENCL_DEVICE (default: gpu, the first GPU across platforms) picks the device.
cd "$(dirname "$0")/.." || exit 1
max_n=${1:-1048576}
B=build/device-opencl
export NBODY_OPENCL_DEVICE=${NBODY_OPENCL_DEVICE:-gpu}
echo "## OpenCL on $(hostname), $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

# NVIDIA's driver ships libnvidia-opencl.so.1 but containers often lack its ICD file
if command -v nvidia-smi >/dev/null 2>&1 && [ ! -s /etc/OpenCL/vendors/nvidia.icd ]; then
    { mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd; } 2>/dev/null ||
        echo "could not write /etc/OpenCL/vendors/nvidia.icd (run as root)"
fi

# OpenCL headers and loader: the system's, else the ones the CUDA toolkit ships
cuda=${CUDA_HOME:-/usr/local/cuda}
extra=""
if ! printf '#define CL_TARGET_OPENCL_VERSION 120\n#include <CL/cl.h>\nint main(void){cl_uint n; return (int)clGetPlatformIDs(0, 0, &n);}\n' |
        ${CC:-cc} -x c - -o /dev/null -lOpenCL >/dev/null 2>&1; then
    extra="-I$cuda/include -L$cuda/lib64"
    export LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "using OpenCL headers and loader from $cuda"
fi
command -v clinfo >/dev/null 2>&1 && clinfo -l
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null

cuda_flag=""
if command -v nvcc >/dev/null 2>&1 && [ -f nbody_cuda.cu ]; then cuda_flag="WITH_CUDA=1"; fi
build() { # dir, nvcc real, targets...
    dir=$1; real=$2; shift 2
    make -s BUILD="$dir" WITH_OPENCL=1 CFLAGS="-O2 -march=native $extra" $cuda_flag \
        NVFLAGS="-O3 -arch=sm_90 -DNBODY_REAL=$real" "$@"
}
if ! build "$B/d" double "$B/d/test_opencl" "$B/d/bench_opencl" ||
   ! build "$B/f" float "$B/f/test_opencl_float" "$B/f/bench_opencl_float"; then
    if [ -n "$cuda_flag" ]; then
        echo "build with CUDA failed; OpenCL only"; cuda_flag=""
        build "$B/d" double "$B/d/test_opencl" "$B/d/bench_opencl" &&
        build "$B/f" float "$B/f/test_opencl_float" "$B/f/bench_opencl_float" || exit 1
    else exit 1; fi
fi

echo; echo "### tests (NBODY_OPENCL_DEVICE=$NBODY_OPENCL_DEVICE, NBODY_REQUIRE_OPENCL=1)"; echo '```'
NBODY_REQUIRE_OPENCL=1 sh tests/run.sh "$B/d/test_opencl" "$B/f/test_opencl_float"; status=$?
echo '```'
"./$B/f/bench_opencl_float" "$max_n"
"./$B/d/bench_opencl" "$max_n"
exit $status
