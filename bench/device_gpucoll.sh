#!/bin/sh
# Collision detection on the GPU (docs/steering.md, "Collisions"), for the H100 machine, in
# under 5 minutes; run from the repository root or anywhere: sh bench/device_gpucoll.sh
#   build  nbody_cuda.cu with nvcc -O3 -arch=sm_90 in double and float; tests/test_contacts.c
#          and bench/bench_contacts.c against each (cc -O2 -ffp-contract=off, as the Makefile)
#   tests  tests/test_contacts.c, double and float, NBODY_REQUIRE_CUDA=1: the device's pairs
#          equal the host detector's bit for bit (N = 10, 1000, 50000; dense and tree engines;
#          direct and tree searches; radii and one distance), the overflow path, merges,
#          bounces and stops through both CUDA engines against SIMPLE
#   san    compute-sanitizer memcheck and racecheck on the small pass (NBODY_TEST_SMALL=1)
#   bench  detection time, the device's search against the host path (download + sweep and
#          prune), CUDA tree engine, N = 10^5 and 10^6, double and float
# Every stage prints RESULT lines; the logs go to build/device-gpucoll/.
cd "$(dirname "$0")/.." || exit 1
B=build/device-gpucoll
mkdir -p $B
export NBODY_REQUIRE_CUDA=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
echo "## GPU collision detection on $(hostname), $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
CFLAGS="-std=c99 -Wall -Wextra -pedantic -O2 -ffp-contract=off -fopenmp -I. -DNBODY_WITH_CUDA"
LIBS="-lm -L$(dirname "$(command -v nvcc)")/../lib64 -lcudart -lstdc++"
nvcc -O3 -arch=sm_90 -c nbody_cuda.cu -o $B/nbody_cuda.o 2> $B/nvcc1.log &
nvcc -O3 -arch=sm_90 -DNBODY_REAL=float -c nbody_cuda.cu -o $B/nbody_cuda_float.o 2> $B/nvcc2.log &
wait
cc $CFLAGS tests/test_contacts.c $B/nbody_cuda.o -o $B/test_contacts $LIBS 2> $B/cc1.log &
cc $CFLAGS -DNBODY_REAL=float tests/test_contacts.c $B/nbody_cuda_float.o -o $B/test_contacts_float $LIBS 2> $B/cc2.log &
cc $CFLAGS bench/bench_contacts.c $B/nbody_cuda.o -o $B/bench_contacts $LIBS 2> $B/cc3.log &
cc $CFLAGS -DNBODY_REAL=float bench/bench_contacts.c $B/nbody_cuda_float.o -o $B/bench_contacts_float $LIBS 2> $B/cc4.log &
wait
for p in test_contacts test_contacts_float bench_contacts bench_contacts_float; do
    [ -x $B/$p ] || { echo "RESULT build: FAILED ($p)"; cat $B/nvcc*.log $B/cc*.log; exit 1; }
done
el "RESULT build: ok"

echo "### tests"
status=0
for t in test_contacts test_contacts_float; do
    timeout 90 ./$B/$t > $B/$t.log 2>&1; rc=$?
    grep -E '^FAIL' $B/$t.log | head -10
    echo "RESULT $t (exit $rc): $(grep '^RESULT' $B/$t.log) (passed failed skipped)"
    [ $rc -eq 0 ] || status=1
done
el tests

echo "### compute-sanitizer (NBODY_TEST_SMALL=1)"
for tool in memcheck racecheck; do
    NBODY_TEST_SMALL=1 timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 ./$B/test_contacts > $B/san-$tool.log 2>&1; rc=$?
    echo "RESULT compute-sanitizer $tool (exit $rc): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^RESULT' $B/san-$tool.log | tr '\n' ' ')"
    [ $rc -eq 0 ] || status=1
done
el sanitizers

echo "### detection time: device search against the host path (cuda-tree, Plummer, radii 0.05..0.15 N^-1/3)"
timeout 120 ./$B/bench_contacts cuda-tree 100000 1000000 2>&1 | sed 's/^RESULT contacts/RESULT contacts double/'
timeout 100 ./$B/bench_contacts_float cuda-tree 100000 1000000 2>&1 | sed 's/^RESULT contacts/RESULT contacts float/'
el done
exit $status
