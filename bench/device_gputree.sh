#!/bin/sh
# The CUDA tree's speed on an NVIDIA GPU (written for the H100 machine; run from the
# repository root or anywhere): builds the CUDA engine (nvcc -O3 -arch=sm_90, double and
# float), then by stage (arguments, default "tests san bench"):
#   tests  tests/cuda_engines.c in double and float, tests/test_steer.c (test particles) with
#          the CUDA engines, NBODY_REQUIRE_CUDA=1
#   san    compute-sanitizer memcheck and racecheck on the double test (NBODY_TEST_SMALL=1)
#   bench  error x time of the CUDA tree, float, Plummer 2^20, 2^22, 2^24, theta 0.5-0.8,
#          monopole and quadrupole (bench/bench_tree_accuracy.c: ms per force evaluation with
#          the build, build and walk apart, relative force error over 2000 sampled bodies)
#   leaf   the same at 2^24 for leaf sizes 1, 8, 16 (theta 0.5-0.8)
#   ncu    a Nsight Compute summary of the group walk at 2^22 (monopole, theta 0.6)
# Everything prints to stdout.   sh bench/device_gputree.sh [stages...]
cd "$(dirname "$0")/.." || exit 1
B=build/device-gputree
mkdir -p $B
export NBODY_REQUIRE_CUDA=1
stages=${*:-tests san bench}
echo "## CUDA tree speed on $(hostname), $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); stages: $stages"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
CFLAGS="-std=c99 -Wall -Wextra -pedantic -O2 -march=native -ffp-contract=off -fopenmp -I. -DNBODY_WITH_CUDA"
LIBS="-lm -L$(dirname "$(command -v nvcc)")/../lib64 -lcudart -lstdc++"
set -e
nvcc -O3 -arch=sm_90 -c nbody_cuda.cu -o $B/nbody_cuda.o &
nvcc -O3 -arch=sm_90 -DNBODY_REAL=float -c nbody_cuda.cu -o $B/nbody_cuda_float.o &
wait
cc $CFLAGS tests/cuda_engines.c $B/nbody_cuda.o -o $B/cuda_engines $LIBS 2> $B/cc1.log &
cc $CFLAGS -DNBODY_REAL=float tests/cuda_engines.c $B/nbody_cuda_float.o -o $B/cuda_engines_float $LIBS 2> $B/cc2.log &
cc $CFLAGS tests/test_steer.c $B/nbody_cuda.o -o $B/test_steer $LIBS 2> $B/cc3.log &
cc $CFLAGS -DNBODY_REAL=float bench/bench_tree_accuracy.c $B/nbody_cuda_float.o -o $B/bench_tree_accuracy_float $LIBS 2> $B/cc4.log &
wait
[ -x $B/cuda_engines ] && [ -x $B/cuda_engines_float ] && [ -x $B/test_steer ] && [ -x $B/bench_tree_accuracy_float ] || { cat $B/cc*.log; exit 1; }
set +e
status=0
for st in $stages; do
case $st in
tests)
    echo; echo "### tests"
    for t in cuda_engines cuda_engines_float test_steer; do
        ./$B/$t > $B/$t.log 2>&1; rc=$?
        grep -E "FAIL|tree|grid|group|RESULT" $B/$t.log | grep -v "^ok" | head -60
        [ $rc -eq 0 ] || { echo "$t exited $rc"; status=1; }
        [ -n "$OUT" ] && cp $B/$t.log "$OUT/" 2>/dev/null
    done ;;
san)
    echo; echo "### compute-sanitizer (NBODY_TEST_SMALL=1)"
    for tool in memcheck racecheck; do
        NBODY_TEST_SMALL=1 compute-sanitizer --tool $tool --error-exitcode 3 ./$B/cuda_engines > $B/san_$tool.log 2>&1; rc=$?
        echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|RESULT' $B/san_$tool.log | tr '\n' ' ')"
        grep -m5 -E "Invalid|Hazard|FAIL" $B/san_$tool.log
        [ $rc -eq 0 ] || status=1
    done ;;
bench)
    echo; echo "### error x time (float, build included)"
    for n in 1048576 4194304 16777216; do
        ./$B/bench_tree_accuracy_float cuda-tree $n 3 3 8
    done ;;
leaf)
    for l in 1 8 16; do
        echo; echo "### leaf_size $l"
        ./$B/bench_tree_accuracy_float cuda-tree 16777216 3 5 8 $l
    done ;;
ncu)
    echo; echo "### ncu, group walk, 2^22, monopole theta 0.6"
    ncu --kernel-name regex:walk_group --launch-skip 13 --launch-count 1 --section SpeedOfLight --section Occupancy \
        --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        ./$B/bench_tree_accuracy_float cuda-tree 4194304 1 6 6 2>&1 | grep -v "^==PROF==" | tail -80 ;;
esac
done
exit $status
