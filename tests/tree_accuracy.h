/* tree_accuracy.h - the error distribution of a tree engine's forces against the direct sum
   in double, per body, shared by the CPU, OpenCL and CUDA tree tests (include after nbody.h
   and check.h). The case of the accuracy bounds: Plummer N = 12347, softening 1e-3,
   theta 0.5, monopole: the 99th percentile of the relative force error at most 2e-2 and the
   worst body at most 0.1, on every tree engine. */
#ifndef TREE_ACCURACY_H
#define TREE_ACCURACY_H
#include <math.h>
#include <stdlib.h>

#define TREE_ACC_N 12347
#define TREE_ACC_SEED 2026
#define TREE_ACC_EPS 1e-3
#define TREE_ACC_P99 2e-2
#define TREE_ACC_MAX 0.1

typedef struct tree_acc_stats { double median, p90, p99, max; } tree_acc_stats;

static int tree_acc_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the direct sum in double, G = 1, softening eps: ref[3n] in x, y, z blocks; NULL on no memory */
static double *tree_acc_direct(const nbody_system *s, double eps) {
    size_t n = s->n, i, j;
    double *ref = (double *)calloc(3 * n, sizeof(double));
    if (!ref) return NULL;
    for (i = 0; i < n; ++i)
        for (j = 0; j < n; ++j) {
            double dx = (double)s->x[j] - (double)s->x[i], dy = (double)s->y[j] - (double)s->y[i];
            double dz = (double)s->z[j] - (double)s->z[i], r2 = dx * dx + dy * dy + dz * dz + eps * eps, w;
            if (j == i) continue;
            w = (double)s->m[j] / (r2 * sqrt(r2));
            ref[i] += w * dx; ref[n + i] += w * dy; ref[2 * n + i] += w * dz;
        }
    return ref;
}

/* the per-body relative errors of the engine of d (G must be 1) on s against ref, as a
   distribution; the engine's result (stats zero unless NBODY_OK) */
static nbody_result tree_acc_stats_of(const nbody_desc *d, const nbody_system *s, const double *ref, tree_acc_stats *st) {
    size_t n = s->n, i;
    nbody_real *a = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
    double *e = (double *)malloc(n * sizeof(double));
    nbody_result r = a && e ? nbody_accelerations(d, s, a, a + n, a + 2 * n) : NBODY_ERR_OUT_OF_MEMORY;
    memset(st, 0, sizeof *st);
    for (i = 0; r == NBODY_OK && i < n; ++i) {
        double dx = (double)a[i] - ref[i], dy = (double)a[n + i] - ref[n + i], dz = (double)a[2 * n + i] - ref[2 * n + i];
        double nr = sqrt(ref[i] * ref[i] + ref[n + i] * ref[n + i] + ref[2 * n + i] * ref[2 * n + i]);
        e[i] = sqrt(dx * dx + dy * dy + dz * dz) / (nr > 0 ? nr : 1);
        if (e[i] != e[i]) e[i] = HUGE_VAL;
    }
    if (r == NBODY_OK && n > 0) {
        qsort(e, n, sizeof(double), tree_acc_cmp);
        st->median = e[n / 2]; st->p90 = e[(n - 1) * 90 / 100]; st->p99 = e[(n - 1) * 99 / 100]; st->max = e[n - 1];
    }
    free(a); free(e);
    return r;
}

/* the bounds of the accuracy case, checked and printed under the name what */
static void tree_acc_check_bounds(const char *what, nbody_result r, const tree_acc_stats *st) {
    CHECK(r == NBODY_OK, "%s: %s", what, nbody_result_string(r));
    CHECK(st->p99 <= TREE_ACC_P99, "%s: 99th percentile of the relative force error %.3e > %g", what, st->p99, TREE_ACC_P99);
    CHECK(st->max <= TREE_ACC_MAX, "%s: worst body's relative force error %.3e > %g", what, st->max, TREE_ACC_MAX);
    printf("  %s: relative force error median %.3e, p90 %.3e, p99 %.3e, worst %.3e\n", what, st->median, st->p90, st->p99,
           st->max);
}

/* theta up to its bound (NBODY__THETA_MAX, docs/tree.md), the engine and moments of d: at
   theta 0.5, 1 and the bound the median error rises with theta (no jump, no plateau: the
   criterion still decides), and at the bound the worst body's error stays below its force,
   the reason for the bound */
CHECK_UNUSED static void tree_acc_check_wide(const char *what, nbody_desc d, const nbody_system *s, const double *ref) {
    const double th[3] = {0.5, 1.0, NBODY__THETA_MAX};
    tree_acc_stats st[3];
    nbody_result r[3];
    int k;
    for (k = 0; k < 3; ++k) {
        d.theta = (nbody_real)th[k];
        r[k] = tree_acc_stats_of(&d, s, ref, &st[k]);
    }
    CHECK(r[0] == NBODY_OK && r[1] == NBODY_OK && r[2] == NBODY_OK, "%s at theta 0.5 / 1 / %g: %s / %s / %s", what, th[2],
          nbody_result_string(r[0]), nbody_result_string(r[1]), nbody_result_string(r[2]));
    CHECK(st[0].median < st[1].median && st[1].median < st[2].median, "%s: median error %.3e / %.3e / %.3e at theta 0.5 / 1 / %g "
          "does not rise with theta", what, st[0].median, st[1].median, st[2].median, th[2]);
    CHECK(st[2].max < 1, "%s: worst body's error %.3e at theta %g, not below its force", what, st[2].max, th[2]);
    for (k = 0; k < 3; ++k)
        printf("  %s theta %.1f: relative force error median %.3e, p99 %.3e, worst %.3e\n", what, th[k], st[k].median, st[k].p99,
               st[k].max);
}
#endif
