#!/bin/sh
# The CUDA tree's group walk, variants side by side (H100): the per-body warp walk (tuned
# default for monopoles), the group walk with a static grid, with a work counter, and with
# 2 bodies per lane; a stats build counts per group the tested and accepted nodes, the direct
# bodies and the clocks. Then the CUDA tests (double, float) with the default group walk.
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
  echo "### stats 2^20, 1 / 2 bodies per lane"
  BENCH_WALK=3 ./$B/btas cuda-tree 1048576 3 5 5
  BENCH_WALK=3 NBODY_CU_GW_BPL=2 ./$B/btas cuda-tree 1048576 3 5 5
  echo "### 2^22, 1 / 2 bodies per lane (stats)"
  BENCH_WALK=3 ./$B/btas cuda-tree 4194304 3 5 5
  BENCH_WALK=3 NBODY_CU_GW_BPL=2 ./$B/btas cuda-tree 4194304 3 5 5
  echo "### 2^24: warp walk default; group walk 2 bodies per lane (stats)"
  ./$B/bta cuda-tree 16777216 3 5 5
  BENCH_WALK=3 NBODY_CU_GW_BPL=2 ./$B/btas cuda-tree 16777216 3 5 5 ;;
tests)
  for t in ce cef; do NBODY_REQUIRE_CUDA=1 ./$B/$t > $B/$t.log 2>&1; echo "$t rc=$? $(grep RESULT $B/$t.log)"; grep FAIL $B/$t.log | head; done
  NBODY_CU_GW_BPL=2 ./$B/cef > $B/cef2.log 2>&1; echo "cef bpl2 rc=$? $(grep RESULT $B/cef2.log)"; grep FAIL $B/cef2.log | head ;;
san)
  NBODY_TEST_SMALL=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 ./$B/ce > $B/san.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|RESULT' $B/san.log | tr '\n' ' ')" ;;
esac; done
