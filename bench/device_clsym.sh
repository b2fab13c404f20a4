#!/bin/sh
# The OpenCL engine's symmetric dense kernel on an NVIDIA GPU (written for the H100 machine;
# run from anywhere, about 4-5 minutes): registers NVIDIA's OpenCL driver with the ICD
# loader, builds the OpenCL tests and bench_clsym in float and double with the CUDA engine
# beside them (nvcc -O3 -arch=sm_90), prints for N = 2^16, 2^18, 2^20 the dense
# interactions/s of the OpenCL engine's own choice, the one-sided kernel, the symmetric kernel
# over work-group sizes x bodies per work-item x rounds a launch, and the CUDA engine, with
# their force errors against the direct sum in double (markdown tables), then runs the
# OpenCL tests on the GPU (NBODY_REQUIRE_OPENCL=1).
#   sh bench/device_clsym.sh [max_n]        (max_n default 1048576)
cd "$(dirname "$0")/.." || exit 1
max_n=${1:-1048576}
B=build/device-clsym
export NBODY_OPENCL_DEVICE=${NBODY_OPENCL_DEVICE:-gpu}
echo "## OpenCL symmetric dense kernel on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

# NVIDIA's driver ships libnvidia-opencl.so.1 but containers often lack its ICD file
mkdir -p /etc/OpenCL/vendors 2>/dev/null && [ -s /etc/OpenCL/vendors/nvidia.icd ] ||
    echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd 2>/dev/null ||
    echo "could not write /etc/OpenCL/vendors/nvidia.icd (run as root)"
# OpenCL headers and loader: the system's first, else the CUDA toolkit's
cuda=${CUDA_HOME:-/usr/local/cuda}
export CPATH="${CPATH:+$CPATH:}$cuda/include"
export LIBRARY_PATH="${LIBRARY_PATH:+$LIBRARY_PATH:}$cuda/lib64"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda/lib64"
command -v clinfo >/dev/null 2>&1 && clinfo -l
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null

cuda_flag=""
command -v nvcc >/dev/null 2>&1 && cuda_flag="WITH_CUDA=1"
build() { # dir, real, targets...
    dir=$1; real=$2; shift 2
    make -s BUILD="$dir" WITH_OPENCL=1 CFLAGS="-O2 -march=native" $cuda_flag \
        NVFLAGS="-O3 -arch=sm_90 -DNBODY_REAL=$real" "$@"
}
builds() { # suffix of the build folders: both precisions at once
    build "$B/d$1" double "$B/d$1/test_opencl" "$B/d$1/bench_clsym" > "$B.d.log" 2>&1 &
    pd=$!
    build "$B/f$1" float "$B/f$1/test_opencl_float" "$B/f$1/bench_clsym_float" > "$B.f.log" 2>&1; rf=$?
    wait $pd; rd=$?
    [ $rf -eq 0 ] && [ $rd -eq 0 ] && return 0
    tail -n 20 "$B.d.log" "$B.f.log"; return 1
}
t0=$(date +%s)
mkdir -p "$B"
D=$B/d; F=$B/f
if ! builds ""; then
    [ -n "$cuda_flag" ] || { echo "build failed"; exit 1; }
    echo "build with CUDA failed; OpenCL only"; cuda_flag=""; D=$B/d-nocuda; F=$B/f-nocuda
    builds -nocuda || { echo "build failed"; exit 1; }
fi
echo "built in $(( $(date +%s) - t0 )) s ($cuda_flag)"

t0=$(date +%s)
timeout 150 "./$F/bench_clsym_float" "$max_n" 65536
timeout 150 "./$D/bench_clsym" "$max_n" 65536
echo; echo "benchmarks took $(( $(date +%s) - t0 )) s"

echo; echo "### OpenCL tests on the GPU (NBODY_OPENCL_DEVICE=$NBODY_OPENCL_DEVICE, NBODY_REQUIRE_OPENCL=1)"; echo '```'
t0=$(date +%s)
NBODY_REQUIRE_OPENCL=1 timeout 240 sh tests/run.sh "$D/test_opencl" "$F/test_opencl_float" > "$B.tests.log" 2>&1
status=$?
grep -v '^ok' "$B.tests.log"
echo "tests took $(( $(date +%s) - t0 )) s"
echo '```'
exit $status
