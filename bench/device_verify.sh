#!/bin/sh
# device_verify.sh - after a change to the CUDA engines or kernels.cl, on a machine with two
# GPUs (nvidia-h200-x2): builds with nvcc -O3 -arch=sm_90 and NCCL (as device_multigpu.sh),
# then the multi-GPU tests (float, double), two MPI ranks with a GPU each, compute-sanitizer
# memcheck on the multi-GPU and the single-GPU small passes, and the OpenCL tests on NVIDIA's
# OpenCL alone (the ICD registered here, PoCL kept out). About 6 minutes; stdout.
export NCCL_NVLS_ENABLE=0          # no NVLink multicast on shared hosts
cd "$(dirname "$0")/.." || exit 1
B=build/mg; O=build/mg-ocl
start=$(date +%s)
el() { echo "[$(( $(date +%s) - start )) s]"; }
[ -n "$NCCL_HOME" ] || NCCL_HOME=$(python3 -c 'import nvidia.nccl; print(nvidia.nccl.__path__[0])' 2>/dev/null)
export LD_LIBRARY_PATH="$NCCL_HOME/lib:$LD_LIBRARY_PATH"
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
cuda=${CUDA_HOME:-/usr/local/cuda}
export CPATH="${CPATH:+$CPATH:}$cuda/include" LIBRARY_PATH="${LIBRARY_PATH:+$LIBRARY_PATH:}$cuda/lib64"
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cuda/lib64"
M="make -s -j16 WITH_CUDA=1 WITH_NCCL=1 NCCL_HOME=$NCCL_HOME BUILD=$B"
eval $M $B/cuda_engines $B/cuda_multi $B/cuda_multi_float $B/mpi_cuda 2>&1 | grep -v '^note' | tail -20
make -s -j16 BUILD=$O WITH_OPENCL=1 CFLAGS="-O2 -march=native" $O/test_opencl $O/test_opencl_float 2>&1 | tail -5
el
echo "== devices = 2 (double, float)"
timeout 120 ./$B/cuda_multi | grep -E 'FAIL|SKIP|^RESULT'
timeout 120 ./$B/cuda_multi_float | grep -E 'FAIL|SKIP|^RESULT'
el
echo "== mpirun -np 2: one GPU a rank"
ROOT_FLAG=""; [ "$(id -u)" -eq 0 ] && ROOT_FLAG="--allow-run-as-root"
OMP_NUM_THREADS=4 timeout 150 mpirun $ROOT_FLAG --oversubscribe -np 2 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE ./$B/mpi_cuda /tmp 2>&1 | grep -E 'FAIL|^RESULT' | sort | uniq -c
el
# --report-api-errors no: NCCL's own set-up returns CUDA errors it handles itself (see device_multigpu.sh)
echo "== compute-sanitizer memcheck, devices = 2, small case"
NBODY_TEST_SMALL=1 timeout 90 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 ./$B/cuda_multi > /tmp/mg-san.log 2>&1
echo "exit $?"; grep -E 'ERROR SUMMARY|^RESULT|FAIL' /tmp/mg-san.log | tail -4
el
echo "== at once: memcheck of the single-GPU small pass on GPU 1; OpenCL tests on NVIDIA's OpenCL (GPU 0)"
CUDA_VISIBLE_DEVICES=1 NBODY_TEST_SMALL=1 timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 ./$B/cuda_engines > /tmp/ce-san.log 2>&1 &
san=$!
OCL_ICD_FILENAMES=libnvidia-opencl.so.1 OCL_ICD_VENDORS=/nonexistent NBODY_OPENCL_DEVICE=gpu NBODY_REQUIRE_OPENCL=1 \
    timeout 240 sh tests/run.sh ./$O/test_opencl ./$O/test_opencl_float 2>&1 | grep -v '^ok' | tail -8
el
wait $san; echo "memcheck single GPU: exit $?"; grep -E 'ERROR SUMMARY|^RESULT|FAIL' /tmp/ce-san.log | tail -4
el
