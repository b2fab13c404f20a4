#!/bin/sh
# The CUDA engines on an NVIDIA GPU (H100), after the solver state became typed and the block
# size tuner was split into its steps: the CUDA engine tests in double and float (every method
# against the CPU engine, the tuned and the fixed kernels, both tree walks), then the quick GPU
# tables, whose tuned rows show what the tuner chose.
# Run from the repository root: sh bench/device_house.sh  (results on stdout)
set -e
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
make -j8 WITH_CUDA=1 NVFLAGS="-O3 -arch=sm_90" build/cuda_engines build/cuda_engines_float build/bench_gpu
sh tests/run.sh build/cuda_engines build/cuda_engines_float
./build/bench_gpu quick
