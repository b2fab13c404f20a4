#!/bin/sh
# The CUDA tree on an NVIDIA GPU (written for the H100 machine; run from anywhere): builds
# the CUDA engine tests in double and float (nvcc -O3 -arch=sm_90), runs them with
# NBODY_REQUIRE_CUDA=1 (tree accuracy per body, the capped-grid cover, desc refusals, ...),
# then the small pass under compute-sanitizer (memcheck and racecheck), then the error x time
# tables of bench/bench_tree_accuracy.c for the CUDA tree (float and double; N = 12347 and
# 2^20) beside the CPU tree's. Everything prints to stdout.
#   sh bench/device_tree.sh
cd "$(dirname "$0")/.." || exit 1
B=build/device-tree
mkdir -p $B
export NBODY_REQUIRE_CUDA=1
echo "## CUDA tree on $(hostname), $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
CFLAGS="-std=c99 -Wall -Wextra -pedantic -Werror -O2 -march=native -ffp-contract=off -fopenmp -I. -DNBODY_WITH_CUDA"
LIBS="-lm -L$(dirname "$(command -v nvcc)")/../lib64 -lcudart -lstdc++"
set -e
nvcc -O3 -arch=sm_90 -c nbody_cuda.cu -o $B/nbody_cuda.o
nvcc -O3 -arch=sm_90 -DNBODY_REAL=float -c nbody_cuda.cu -o $B/nbody_cuda_float.o
cc $CFLAGS tests/cuda_engines.c $B/nbody_cuda.o -o $B/cuda_engines $LIBS
cc $CFLAGS -DNBODY_REAL=float tests/cuda_engines.c $B/nbody_cuda_float.o -o $B/cuda_engines_float $LIBS
cc $CFLAGS bench/bench_tree_accuracy.c $B/nbody_cuda.o -o $B/bench_tree_accuracy $LIBS
cc $CFLAGS -DNBODY_REAL=float bench/bench_tree_accuracy.c $B/nbody_cuda_float.o -o $B/bench_tree_accuracy_float $LIBS
set +e
status=0
echo; echo "### tests"
for t in cuda_engines cuda_engines_float; do
    ./$B/$t > $B/$t.log 2>&1; rc=$?
    grep -E "FAIL|tree|grid|RESULT" $B/$t.log
    [ $rc -eq 0 ] || { echo "$t exited $rc"; status=1; }
done
echo; echo "### compute-sanitizer (NBODY_TEST_SMALL=1)"
if command -v compute-sanitizer >/dev/null 2>&1; then
    for tool in memcheck racecheck; do
        NBODY_TEST_SMALL=1 compute-sanitizer --tool $tool --error-exitcode 3 ./$B/cuda_engines > $B/san_$tool.log 2>&1; rc=$?
        echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RESULT' $B/san_$tool.log | tr '\n' ' ')"
        [ $rc -eq 0 ] || status=1
    done
else
    echo "compute-sanitizer not found"
fi
echo; echo "### error x time"
for n in 12347 1048576; do
    ./$B/bench_tree_accuracy_float cuda-tree $n 5
    ./$B/bench_tree_accuracy cuda-tree $n 5
done
OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} ./$B/bench_tree_accuracy tree 1048576 3
exit $status
