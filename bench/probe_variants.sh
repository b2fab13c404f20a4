#!/bin/sh
# Dense kernel variants (register caps, unrolling) built side by side and swept at N = 2^19,
# float, unequal and equal masses. Log: $OUT/variants.txt.
OUT=${OUT:-out}; mkdir -p "$OUT"
exec > "$OUT/variants.txt" 2>&1
V0="-O3 -arch=sm_90"
V1="$V0 -DNBODY_CUDA_MAXREG1=32 -DNBODY_CUDA_MAXREG2=32 -DNBODY_CUDA_MAXREG4=48 -DNBODY_CUDA_MAXREG8=80"
V2="$V0 -DNBODY_CUDA_UNROLL=16"
V3="$V1 -DNBODY_CUDA_UNROLL=4"
V4="$V1 -DNBODY_CUDA_UNROLL=16"
for v in 0 1 2 3 4; do
  eval f=\$V$v
  make WITH_CUDA=1 BUILD=build_v$v NVFLAGS="$f" build_v$v/bench_gpu_float > build_v$v.log 2>&1 &
done
wait
for v in 0 1 2 3 4; do
  eval f=\$V$v; echo "== variant $v: $f"
  ./build_v$v/bench_gpu_float one 524288 0 0 u | awk '{print "v'$v'", $0}'
  ./build_v$v/bench_gpu_float one 524288 0 4 | awk '{print "v'$v'", $0}'
  ./build_v$v/bench_gpu_float one 524288 0 8 | awk '{print "v'$v'", $0}'
done
