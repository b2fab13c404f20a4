#!/bin/sh
# Test particles and steering on an NVIDIA GPU (H100): builds the CUDA engines, runs the
# steering tests (CUDA engines included: test particles, extra forces, hooks) and the
# 1%-active figures at N = 10^5 and 10^6 against the full N^2 evaluation, CUDA and CUDA tree.
# Run from the repository root: sh bench/device_steer.sh  (results on stdout)
set -e
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
make -j8 WITH_CUDA=1 NVFLAGS="-O3 -arch=sm_90" build/test_steer build/bench_steer
NBODY_REQUIRE_CUDA=1 ./build/test_steer | grep -v "^SKIP" || true
for n in 100000 1000000; do
    ./build/bench_steer cuda $n 1
    ./build/bench_steer cuda-tree $n 1
done
./build/bench_steer block 100000 1
