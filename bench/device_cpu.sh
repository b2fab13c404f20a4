#!/bin/sh
# device_cpu.sh - the BLOCK kernels on a host with AVX-512 (the device machine's Xeon): build,
# test_block in both precisions, kernel variants (1 thread, thread CPU time) and the bench
# tables on 2 pinned threads. Usage: sh bench/device_cpu.sh [max_n] [old_header_dir]
# (old_header_dir: a directory holding an older nbody.h, built as the variant "old").
max_n=${1:-32768}
old=$2
out=${OUT:-/tmp}
set -u
lscpu | grep -E 'Model name|^CPU\(s\)|MHz' ; grep -o 'avx512[a-z_]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
uptime
make -s -j8 build/test_block build/test_block_float build/bench_cpu build/bench_cpu_float 2>&1 | grep -v '^note'
./build/test_block | grep -E 'rsqrt3|16411|RESULT|FAIL'
./build/test_block_float | grep -E 'rsqrt3|16411|RESULT|FAIL'
variants="base -DNBODY__SYM_ROWS=2 -DNBODY__SYM_ROWS=4 -DNBODY__TILE_U=3 -DNBODY__SYM_VECS=32"
[ -n "$old" ] && variants="$variants old"
i=0
for v in $variants; do
  for r in float double; do
    i=$((i + 1))
    case $v in base) d="";; old) d="-I$old";; *) d=$v;; esac
    cc -std=c99 -O2 -march=native -fopenmp $d -I. -DNBODY_REAL=$r bench/kernel_variants.c -o "$out/kv_$i" -lm &
    echo "$i $v $r" >> "$out/kv_list"
  done
done
wait
for pass in 1 2; do           # twice, interleaved: the spread shows the noise
  while read -r i v r; do
    printf '%s: ' "$v"; taskset -c 2 "$out/kv_$i" 8192 5 | tr '\n' ';'; echo
  done < "$out/kv_list"
done
for i in 1 2; do printf 'base n=32768: '; taskset -c 2 "$out/kv_$i" 32768 2 | tr '\n' ';'; echo; done
rm -f "$out"/kv_*
OMP_NUM_THREADS=2 taskset -c 0,1 ./build/bench_cpu_float "$max_n"
OMP_NUM_THREADS=2 taskset -c 0,1 ./build/bench_cpu "$max_n"
uptime
