#!/bin/sh
# The OpenCL tree (built on the device) beside the CUDA tree on an NVIDIA GPU (written for the
# H100 machine; run from anywhere, as root for the ICD file). In about 5 minutes:
#   1. registers NVIDIA's OpenCL driver with the ICD loader; headers and loader from the CUDA
#      toolkit (CPATH, LIBRARY_PATH);
#   2. builds the CUDA engine (nvcc -O3 -arch=sm_90, double and float), the OpenCL tests and
#      bench/bench_tree_accuracy.c (float, both engines in one program);
#   3. runs tests/test_opencl.c (double, float; NBODY_REQUIRE_OPENCL=1) and
#      tests/test_opencl_devices.c (which skips without two devices of one platform) on the GPU
#      (NBODY_OPENCL_DEVICE=gpu);
#   4. checks that both engines build the same tree: the CUDA tree's and the OpenCL tree's
#      accelerations, float, Plummer 2^20, theta 0.5, compared body by body;
#   5. error x time, float, Plummer 2^20 and 2^22, theta 0.5, monopole: ms per force
#      evaluation with the build, build and walk apart, relative force error over 2000 sampled
#      bodies against the direct sum in double; the OpenCL tree tuned, then with each walk
#      forced (BENCH_CL_WALK=1 each work-item alone, 2 the work-group union), and at 2^20 the
#      walk alone with 128, 256, 512 work-items a group (BENCH_CL_BLOCK; tuned: 1024).
#   sh bench/device_cltree.sh
cd "$(dirname "$0")/.." || exit 1
B=build/device-cltree
mkdir -p $B
export NBODY_OPENCL_DEVICE=${NBODY_OPENCL_DEVICE:-gpu}
echo "## OpenCL tree vs CUDA tree on $(hostname), $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
if [ ! -s /etc/OpenCL/vendors/nvidia.icd ]; then
    { mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd; } 2>/dev/null ||
        echo "could not write /etc/OpenCL/vendors/nvidia.icd (run as root)"
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
export CPATH="$cuda/include${CPATH:+:$CPATH}" LIBRARY_PATH="$cuda/lib64${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CFLAGS="-std=c99 -Wall -Wextra -pedantic -O2 -march=native -ffp-contract=off -fopenmp -I."
CUDALIBS="-L$cuda/lib64 -lcudart -lstdc++"
t0=$(date +%s)
nvcc -O3 -arch=sm_90 -c nbody_cuda.cu -o $B/nbody_cuda.o 2> $B/nvcc1.log &
nvcc -O3 -arch=sm_90 -DNBODY_REAL=float -c nbody_cuda.cu -o $B/nbody_cuda_float.o 2> $B/nvcc2.log &
cc $CFLAGS -DNBODY_WITH_OPENCL tests/test_opencl.c -o $B/test_opencl -lm -lOpenCL 2> $B/cc1.log &
cc $CFLAGS -DNBODY_WITH_OPENCL -DNBODY_REAL=float tests/test_opencl.c -o $B/test_opencl_float -lm -lOpenCL 2> $B/cc2.log &
cc $CFLAGS -DNBODY_WITH_OPENCL tests/test_opencl_devices.c -o $B/test_opencl_devices -lm -lOpenCL 2> $B/cc3.log &
wait
cc $CFLAGS -DNBODY_WITH_OPENCL -DNBODY_WITH_CUDA -DNBODY_REAL=float bench/bench_tree_accuracy.c $B/nbody_cuda_float.o \
    -o $B/bench_tree_accuracy_float -lm -lOpenCL $CUDALIBS 2> $B/cc4.log &
cat > $B/same_tree.c <<'EOF'
/* the CUDA tree's and the OpenCL tree's accelerations, body by body */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <math.h>
#include <stdio.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 1048576, i, same = 0;
    nbody_system s = NBODY__ZERO_INIT;
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_real *a = (nbody_real *)malloc(6 * n * sizeof(nbody_real)), *b = a + 3 * n;
    double *e = (double *)malloc(n * sizeof(double));
    nbody_result r1, r2;
    nbody_ic_plummer(&s, n, 2026);
    d.theta = (nbody_real)0.5; d.softening = (nbody_real)1e-3;
    d.engine = NBODY_ENGINE_CUDA_TREE; r1 = nbody_accelerations(&d, &s, a, a + n, a + 2 * n);
    d.engine = NBODY_ENGINE_OPENCL_TREE; r2 = nbody_accelerations(&d, &s, b, b + n, b + 2 * n);
    if (r1 != NBODY_OK || r2 != NBODY_OK) { printf("cuda-tree %s, opencl-tree %s\n", nbody_result_string(r1), nbody_result_string(r2)); return 1; }
    for (i = 0; i < n; ++i) {
        double dx = (double)a[i] - b[i], dy = (double)a[n + i] - b[n + i], dz = (double)a[2 * n + i] - b[2 * n + i];
        double na = (double)a[i] * a[i] + (double)a[n + i] * a[n + i] + (double)a[2 * n + i] * a[2 * n + i];
        e[i] = sqrt((dx * dx + dy * dy + dz * dz) / (na > 0 ? na : 1));
        same += e[i] <= 1e-4;
    }
    qsort(e, n, sizeof(double), cmp);
    printf("%s cuda-tree vs opencl-tree, float, Plummer %lu, theta 0.5: relative difference median %.3g, p99 %.3g, max %.3g; "
           "%lu bodies (%.4f%%) within 1e-4 (the same tree: only the rounding of the sums differs; bounds: median <= 1e-5, "
           "99.5%% within 1e-4)\n", e[n / 2] <= 1e-5 && same >= n - n / 200 ? "PASS" : "FAIL", (unsigned long)n, e[n / 2],
           e[(n - 1) * 99 / 100], e[n - 1], (unsigned long)same, 100.0 * same / n);
    return e[n / 2] <= 1e-5 && same >= n - n / 200 ? 0 : 1;
}
EOF
cc $CFLAGS -DNBODY_WITH_OPENCL -DNBODY_WITH_CUDA -DNBODY_REAL=float $B/same_tree.c $B/nbody_cuda_float.o \
    -o $B/same_tree -lm -lOpenCL $CUDALIBS 2> $B/cc5.log &
wait
echo "build: $(( $(date +%s) - t0 )) s"
for x in test_opencl test_opencl_float test_opencl_devices bench_tree_accuracy_float same_tree; do
    [ -x $B/$x ] || { echo "build of $x failed:"; cat $B/nvcc*.log $B/cc*.log | head -40; exit 1; }
done
status=0
echo; echo "### tests (NBODY_OPENCL_DEVICE=$NBODY_OPENCL_DEVICE, NBODY_REQUIRE_OPENCL=1)"
for t in test_opencl test_opencl_float test_opencl_devices; do
    req=1; [ $t = test_opencl_devices ] && req=0   # needs two devices of one platform: skips on one GPU
    NBODY_REQUIRE_OPENCL=$req ./$B/$t > $B/$t.log 2>&1; rc=$?
    grep -E "FAIL|tree|OpenCL device|RESULT" $B/$t.log | head -40
    [ $rc -eq 0 ] || { echo "$t exited $rc"; status=1; }
    [ -n "$OUT" ] && cp $B/$t.log "$OUT/" 2>/dev/null
done
echo; echo "### the same tree"
./$B/same_tree 1048576 || status=1
echo; echo "### error x time, float, build included (ms per evaluation; build and walk apart)"
for n in 1048576 4194304; do
    ./$B/bench_tree_accuracy_float cuda-tree $n 3 5 5 | grep -v quadrupole
    ./$B/bench_tree_accuracy_float opencl-tree $n 3 5 5 | grep -v quadrupole
    for w in 1 2; do
        echo; echo "opencl-tree, walk forced: BENCH_CL_WALK=$w"
        BENCH_CL_WALK=$w ./$B/bench_tree_accuracy_float opencl-tree $n 3 5 5 | grep monopole
    done
    if [ $n = 1048576 ]; then
        for b in 128 256 512; do
            echo; echo "opencl-tree, each work-item alone, $b a group: BENCH_CL_WALK=1 BENCH_CL_BLOCK=$b"
            BENCH_CL_WALK=1 BENCH_CL_BLOCK=$b ./$B/bench_tree_accuracy_float opencl-tree $n 3 5 5 | grep monopole
        done
    fi
    echo
done
echo "total: $(( $(date +%s) - t0 )) s"
exit $status
