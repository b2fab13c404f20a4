#!/bin/sh
# nbodyh on a GPU machine: the package built with the CUDA engines (nvcc) and OpenCL when
# there, its tests, and bench/python_bench.py pinned to 2 cores. No network there: the wheels
# of pytest, REBOUND, setuptools ... come in build/wheels (pip download on a connected machine:
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       --implementation cp -d build/wheels rebound pytest setuptools wheel tqdm).
# Results go to $OUT (python-device.md, pytest.txt).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m venv --system-site-packages /tmp/pyenv
P=/tmp/pyenv/bin/python
$P -m pip install -q --no-index --find-links build/wheels pytest rebound setuptools wheel tqdm 2>&1 | tail -3
nproc; nvidia-smi --query-gpu=name --format=csv,noheader; $P -c "import numpy; print('numpy', numpy.__version__)"
t0=$(date +%s)
NBODYH_WITH_CUDA=1 $P -m pip install -q --no-build-isolation --no-deps . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "build with CUDA: $(( $(date +%s) - t0 )) s"
$P -c "import nbodyh; print('features', nbodyh.features); s = nbodyh.plummer(1 << 16); sim = nbodyh.Simulation(s, engine='cuda', softening=0.01); sim.advance(0.01); print(sim, sim.simd_name)"
MPLBACKEND=Agg timeout 400 $P tests/python/run.py -q -p no:cacheprovider tests/python > "$OUT/pytest.txt" 2>&1
tail -5 "$OUT/pytest.txt"
cc -std=c99 -O2 -ffp-contract=off -fopenmp -I. bench/python_ref.c -o /tmp/python_ref -lm
taskset -c 0,1 $P bench/python_bench.py --c-reference /tmp/python_ref --threads 2 --repeats 5 --out "$OUT/python-device.md"
