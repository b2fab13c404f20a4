/* tree_agreement.c - the CUDA tree's and the OpenCL tree's accelerations, body by body (bench/device.sh opencl:
   both engines build the same tree, so only the rounding of the sums may differ) */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <math.h>
#include <stdio.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 1048576, i, same = 0;
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
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
