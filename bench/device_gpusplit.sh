#!/bin/sh
# device_gpusplit.sh - the dense CUDA engine on two GPUs (kind nvidia-h200-x2): the split
# symmetric kernel (each GPU a share of the tournament, reduce-scatter of partial forces)
# against the all-gather with one-sided slices. Builds with nvcc -O3 -arch=sm_90 and the NCCL
# of the python package nvidia-nccl (or NCCL_HOME), then: the multi-GPU tests (devices = 2,
# double and float; devices = 1 on one GPU), compute-sanitizer memcheck on the small
# devices = 2 case, the dense scaling benchmark (float, N = 2^18 and 2^20 on 1 and 2 GPUs in
# the same run, both designs and the engine's own choice, ratios printed; weak scaling rows),
# then, in the time left, the single-GPU CUDA tests (double: the symmetric kernel against
# SIMPLE). Everything on stdout; under 8 minutes of wall time.
# Usage: sh bench/device_gpusplit.sh [quick]
export NCCL_NVLS_ENABLE=0          # no NVLink multicast on shared hosts
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
cd "$(dirname "$0")/.." || exit 1
B=build/gs
start=$(date +%s)
el() { echo "[$(( $(date +%s) - start )) s]"; }
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader; nvidia-smi topo -m 2>/dev/null | head -4
git log --oneline -1 2>/dev/null
if [ -z "$NCCL_HOME" ]; then
    NCCL_HOME=$(python3 -c 'import nvidia.nccl; print(nvidia.nccl.__path__[0])' 2>/dev/null)
fi
echo "NCCL_HOME=$NCCL_HOME"; ls "$NCCL_HOME/include/nccl.h" "$NCCL_HOME/lib/libnccl.so.2" 2>&1 | head -3
export LD_LIBRARY_PATH="$NCCL_HOME/lib:$LD_LIBRARY_PATH"
M="make -s -j16 WITH_CUDA=1 WITH_NCCL=1 NCCL_HOME=$NCCL_HOME BUILD=$B"   # NVFLAGS: -O3 -arch=sm_90
rm -rf "$B"
eval $M $B/cuda_multi $B/cuda_multi_float $B/cuda_engines $B/gpusplit_float 2>&1 | grep -v '^note' | tail -20
el
echo "== devices = 2 (double, float): split symmetric against SIMPLE and one GPU, run to run, the tuned choice"
timeout 110 ./$B/cuda_multi | grep -E 'FAIL|SKIP|GPUs:|^RESULT'
timeout 100 ./$B/cuda_multi_float | grep -E 'FAIL|SKIP|GPUs:|^RESULT'
echo "== devices = 1 (the symmetric kernel's checks on one GPU)"
NBODY_TEST_DEVICES=1 timeout 40 ./$B/cuda_multi | grep -E 'FAIL|SKIP|^RESULT'
el
# --report-api-errors no: NCCL's own set-up returns CUDA errors it handles itself (it asks for the
# attributes of kernels built for other architectures, and enables peer access already enabled);
# memcheck counts those as errors though no memory access is wrong
echo "== compute-sanitizer memcheck, devices = 2, small case (all-gather and split)"
NBODY_TEST_SMALL=1 timeout 90 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 ./$B/cuda_multi > /tmp/gs-san.log 2>&1
echo "exit $?"; grep -E 'ERROR SUMMARY|^RESULT|FAIL' /tmp/gs-san.log | tail -4
grep -E 'Invalid|out of bounds|nbody__cu' /tmp/gs-san.log | sort | uniq -c | sort -rn | head -8
el
echo "== dense scaling (float)"
left=$(( 450 - ($(date +%s) - start) )); [ $left -lt 45 ] && left=45
timeout $left ./$B/gpusplit_float 2 $1
el
left=$(( 465 - ($(date +%s) - start) ))
if [ $left -ge 30 ]; then
    echo "== single-GPU CUDA tests (double; the symmetric kernel against SIMPLE), in the time left ($left s)"
    timeout $left ./$B/cuda_engines | grep -E 'FAIL|^RESULT'
    el
else
    echo "SKIP cuda_engines: no time left"
fi
