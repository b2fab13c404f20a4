#!/bin/sh
# The CUDA tree on Hilbert keys (H100; about 6 minutes, at most 8: every stage under a time limit):
#   build  nbody_cuda.cu double and float (nvcc -O3 -arch=sm_90), tests/cuda_engines.c both
#          precisions, bench/bench_tree_accuracy.c float
#   bench  error x time, float, Plummer 2^20 and 2^24 (build included; ms = median of 3):
#          the tree of today (Hilbert keys, groups = the largest nodes of <= 64 bodies, the
#          group walk's stack tuned between shared and global memory): quadrupole theta
#          0.8, 1.0, 1.2, 1.5, 2.0 and monopole theta 0.5, the tuned walk printed before each row; then the
#          tree before (BENCH_MORTON=1: Morton keys, split groups) at quadrupole 0.8 and
#          monopole 0.5, in the same run; at 2^24 also the two group-walk stacks forced
#          (quadrupole theta 1.0, 1024 threads a block asked)
#   tests  tests/cuda_engines.c double and float, and compute-sanitizer memcheck on the
#          double one with NBODY_TEST_SMALL=1, the three at once
# Usage: sh bench/device_cutree2.sh [stages...]   (default: bench tests; the build always)
cd "$(dirname "$0")/.." || exit 1
B=build/device-cutree2
mkdir -p $B
export NBODY_REQUIRE_CUDA=1
stages=${*:-bench tests}
echo "## CUDA tree, Hilbert keys, on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); stages: $stages"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
CFLAGS="-std=c99 -Wall -Wextra -pedantic -O2 -march=native -ffp-contract=off -fopenmp -I. -DNBODY_WITH_CUDA"
LIBS="-lm -L$(dirname "$(command -v nvcc)")/../lib64 -lcudart -lstdc++"
t0=$(date +%s)
set -e
nvcc -O3 -arch=sm_90 -c nbody_cuda.cu -o $B/nbody_cuda.o &
nvcc -O3 -arch=sm_90 -DNBODY_REAL=float -c nbody_cuda.cu -o $B/nbody_cuda_float.o &
wait
cc $CFLAGS tests/cuda_engines.c $B/nbody_cuda.o -o $B/cuda_engines $LIBS 2> $B/cc1.log &
cc $CFLAGS -DNBODY_REAL=float tests/cuda_engines.c $B/nbody_cuda_float.o -o $B/cuda_engines_float $LIBS 2> $B/cc2.log &
cc $CFLAGS -DNBODY_REAL=float bench/bench_tree_accuracy.c $B/nbody_cuda_float.o -o $B/bench_tree_accuracy_float $LIBS 2> $B/cc3.log &
wait
[ -x $B/cuda_engines ] && [ -x $B/cuda_engines_float ] && [ -x $B/bench_tree_accuracy_float ] || { cat $B/cc*.log; exit 1; }
set +e
echo "build: $(( $(date +%s) - t0 )) s"
status=0
BT=./$B/bench_tree_accuracy_float
for st in $stages; do
case $st in
bench)
    echo; echo "### error x time, float, build included (Plummer, softening 1e-3, 2000 sampled bodies)"
    for n in 1048576 16777216; do
        echo; echo "#### N = $n: Hilbert keys (the engine now), tuned walk"
        BENCH_THETAS="8 10 12 15 20" BENCH_CHOICE=1 BENCH_QUAD=1 timeout 120 $BT cuda-tree $n 3 | grep -v "^$"
        BENCH_CHOICE=1 BENCH_QUAD=0 timeout 60 $BT cuda-tree $n 3 5 5 | grep "^|.*monopole\|^  ("
        echo; echo "#### N = $n: Morton keys and split groups (the tree before), tuned walk"
        BENCH_MORTON=1 BENCH_CHOICE=1 BENCH_QUAD=1 timeout 60 $BT cuda-tree $n 3 8 8 | grep "^|.*quadrupole\|^  ("
        BENCH_MORTON=1 BENCH_CHOICE=1 BENCH_QUAD=0 timeout 60 $BT cuda-tree $n 3 5 5 | grep "^|.*monopole\|^  ("
        echo "(elapsed $(( $(date +%s) - t0 )) s)"
    done
    echo; echo "#### N = 16777216, quadrupole theta 1.0, 1024 threads a block asked (the shared stack caps them): group walk with the stack in shared (3) and global (4) memory"
    for w in 3 4; do
        BENCH_WALK=$w BENCH_BLOCK=1024 BENCH_QUAD=1 timeout 60 $BT cuda-tree 16777216 3 10 10 | grep "^|.*quadrupole" | sed "s/^/walk $w /"
    done
    echo "(elapsed $(( $(date +%s) - t0 )) s)" ;;
tests)
    echo; echo "### tests (double, float) and compute-sanitizer memcheck (double, NBODY_TEST_SMALL=1), at once"
    timeout 240 ./$B/cuda_engines > $B/cuda_engines.log 2>&1 &
    p1=$!
    timeout 240 ./$B/cuda_engines_float > $B/cuda_engines_float.log 2>&1 &
    p2=$!
    NBODY_TEST_SMALL=1 timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 ./$B/cuda_engines > $B/san_memcheck.log 2>&1 &
    p3=$!
    wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?
    for t in cuda_engines cuda_engines_float; do
        echo "-- $t"
        grep -E "FAIL|tree|grid|group|RESULT" $B/$t.log | grep -v "^ok" | head -40
    done
    echo "cuda_engines exit $r1, cuda_engines_float exit $r2 (124: time limit)"
    echo "memcheck: exit $r3; $(grep -E 'ERROR SUMMARY|RESULT' $B/san_memcheck.log | tr '\n' ' ')"
    grep -m5 -E "Invalid|FAIL" $B/san_memcheck.log
    [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $r3 -eq 0 ] || status=1
    [ -n "$OUT" ] && cp $B/*.log "$OUT/" 2>/dev/null
    echo "(elapsed $(( $(date +%s) - t0 )) s)" ;;
esac
done
exit $status
