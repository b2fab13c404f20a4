#!/bin/sh
# device_multigpu.sh - several GPUs (desc.devices, NCCL) and one GPU a rank (MPI) on a machine
# with 2 (or more) GPUs, e.g. two H200s. Builds with nvcc -O3 -arch=sm_90 and the NCCL of the
# python package nvidia-nccl (or NCCL_HOME), then: the single-GPU CUDA tests, the multi-GPU
# tests (devices = 2, float and double), 2 MPI ranks with one GPU each, compute-sanitizer on
# a small case, and the scaling benchmark (dense float N = 2^18, 2^20 and tree float 2^24 on
# 1 and 2 GPUs, weak scaling). Everything on stdout; about 6-8 minutes.
# Usage: [MG_SINGLE=0] sh bench/device_multigpu.sh [quick]
export NCCL_NVLS_ENABLE=0          # no NVLink multicast on shared hosts
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
cd "$(dirname "$0")/.." || exit 1
B=build/mg
start=$(date +%s)
el() { echo "[$(( $(date +%s) - start )) s]"; }
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader; nvidia-smi topo -m 2>/dev/null | head -4
if [ -z "$NCCL_HOME" ]; then
    NCCL_HOME=$(python3 -c 'import nvidia.nccl; print(nvidia.nccl.__path__[0])' 2>/dev/null)
fi
echo "NCCL_HOME=$NCCL_HOME"; ls "$NCCL_HOME/lib" 2>/dev/null | head -3
export LD_LIBRARY_PATH="$NCCL_HOME/lib:$LD_LIBRARY_PATH"
M="make -s -j16 WITH_CUDA=1 WITH_NCCL=1 NCCL_HOME=$NCCL_HOME BUILD=$B"   # NVFLAGS: -O3 -arch=sm_90
rm -rf "$B"
eval $M $B/cuda_engines $B/cuda_engines_float $B/cuda_multi $B/cuda_multi_float $B/multigpu_float 2>&1 | grep -v '^note' | tail -20
HAVE_MPICC=0; command -v mpicc >/dev/null 2>&1 && HAVE_MPICC=1
[ $HAVE_MPICC = 1 ] && eval $M $B/mpi_cuda 2>&1 | grep -v '^note' | tail -5
el
if [ "${MG_SINGLE:-1}" = 1 ]; then      # MG_SINGLE=0: skip them (already run on one GPU)
echo "== single-GPU CUDA tests (double, float)"
timeout 120 ./$B/cuda_engines | grep -E 'FAIL|^RESULT'
timeout 120 ./$B/cuda_engines_float | grep -E 'FAIL|^RESULT'
el
fi
echo "== devices = 2 (double, float)"
timeout 120 ./$B/cuda_multi | grep -E 'FAIL|SKIP|^RESULT'
timeout 120 ./$B/cuda_multi_float | grep -E 'FAIL|SKIP|^RESULT'
el
if [ $HAVE_MPICC = 1 ]; then
    echo "== mpirun -np 2: one GPU a rank (CPU engines and the CUDA engines against one process)"
    ROOT_FLAG=""; [ "$(id -u)" -eq 0 ] && ROOT_FLAG="--allow-run-as-root"
    OMP_NUM_THREADS=4 timeout 150 mpirun $ROOT_FLAG --oversubscribe -np 2 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE ./$B/mpi_cuda /tmp 2>&1 | grep -E 'FAIL|^RESULT' | sort | uniq -c
else
    echo "SKIP mpirun: no mpicc here"
fi
el
# --report-api-errors no: NCCL's own set-up returns CUDA errors it handles itself (it asks for the
# attributes of kernels built for other architectures, and enables peer access already enabled);
# memcheck counts those as errors though no memory access is wrong
echo "== compute-sanitizer memcheck, devices = 2, small case"
NBODY_TEST_SMALL=1 timeout 90 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 ./$B/cuda_multi > /tmp/mg-san.log 2>&1
echo "exit $?"; grep -E 'ERROR SUMMARY|^RESULT|FAIL' /tmp/mg-san.log | tail -4
el
echo "== scaling (float)"
left=$(( 530 - ($(date +%s) - start) )); [ $left -lt 60 ] && left=60
timeout $left ./$B/multigpu_float 2 $1
el
