#!/bin/sh
# The CUDA tree's group walk beside the per-body walks (H100): the engine's default (tuned
# per-body walk for monopoles, group walk for quadrupoles) and the group walk forced on
# monopoles (BENCH_WALK=3); a stats build (-DNBODY_CU_GW_STATS) counts per group the tested
# and accepted nodes, the direct bodies and the clocks (mean and slowest group). Then the
# CUDA tests (double, float) and, with `san`, compute-sanitizer memcheck.
#   sh bench/device_cutree.sh [bench] [tests] [san]
cd "$(dirname "$0")/.." || exit 1
B=build/device-cutree; mkdir -p $B
stages=${*:-bench tests}
echo "## CUDA tree group walk on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
CFLAGS="-std=c99 -O2 -march=native -fopenmp -I. -DNBODY_WITH_CUDA"
LIBS="-lm -L$(dirname "$(command -v nvcc)")/../lib64 -lcudart -lstdc++"
nvcc -O3 -arch=sm_90 -DNBODY_REAL=float -c nbody_cuda.cu -o $B/f.o -Xptxas -v 2> $B/ptxas.log &
nvcc -O3 -arch=sm_90 -DNBODY_REAL=float -DNBODY_CU_GW_STATS -c nbody_cuda.cu -o $B/fs.o &
nvcc -O3 -arch=sm_90 -c nbody_cuda.cu -o $B/d.o &
wait
grep -A1 "walk_group" $B/ptxas.log | grep -o "Used [0-9]* registers" | head -4 | tr '\n' ' '; echo
cc $CFLAGS -DNBODY_REAL=float bench/bench_tree_accuracy.c $B/f.o -o $B/bta $LIBS &
cc $CFLAGS -DNBODY_REAL=float -DNBODY_CU_GW_STATS bench/bench_tree_accuracy.c $B/fs.o -o $B/btas $LIBS &
cc $CFLAGS tests/cuda_engines.c $B/d.o -o $B/ce $LIBS &
cc $CFLAGS -DNBODY_REAL=float tests/cuda_engines.c $B/f.o -o $B/cef $LIBS &
wait
for st in $stages; do case $st in
bench)
  for n in 1048576 4194304 16777216; do
    echo "### N=$n engine default (monopole: per-body walk; quadrupole: group walk)"; ./$B/bta cuda-tree $n 3 5 5
    echo "### N=$n group walk forced, with its counters"; BENCH_WALK=3 ./$B/btas cuda-tree $n 3 5 5
  done ;;
tests)
  for t in ce cef; do NBODY_REQUIRE_CUDA=1 ./$B/$t > $B/$t.log 2>&1; echo "$t rc=$? $(grep RESULT $B/$t.log)"; grep FAIL $B/$t.log | head; done
  ;;
san)
  NBODY_TEST_SMALL=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 ./$B/ce > $B/san.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|RESULT' $B/san.log | tr '\n' ' ')" ;;
esac; done
