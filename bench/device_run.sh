#!/bin/sh
# One-off measurement script used on the quiet device host (not part of make): tests and the
# CPU bench pinned to 2 cores, AVX-512 (-march=native) and AVX2 builds.
set -x
lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | cut -c1-200; grep -o 'avx512[a-z]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
gcc --version | head -1
export OMP_NUM_THREADS=2 OMP_PROC_BIND=true
make -s BUILD=b512 build 2>/dev/null; mkdir -p b512 b256
for R in double float; do
  gcc -std=c99 -Wall -Wextra -pedantic -Werror -O2 -march=native -fopenmp -I. -DNBODY_REAL=$R tests/test_block.c -o b512/test_$R -lm
  gcc -std=c99 -Wall -Wextra -pedantic -Werror -O2 -march=native -fopenmp -I. -DNBODY_REAL=$R bench/bench_cpu.c -o b512/bench_$R -lm
  gcc -std=c99 -Wall -Wextra -pedantic -Werror -O2 -march=x86-64-v3 -fopenmp -I. -DNBODY_REAL=$R bench/bench_cpu.c -o b256/bench_$R -lm
  taskset -c 0,1 ./b512/test_$R
done
for R in float double; do taskset -c 0,1 ./b512/bench_$R "$@"; done
for R in float double; do taskset -c 0,1 ./b256/bench_$R "$@"; done
