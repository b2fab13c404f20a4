/* OpenCL engines (nbody_cl.h, kernels.cl) against the CPU engines: forces on odd N, the
   engine operations one by one, whole runs, device choice. Skips (fails under
   NBODY_REQUIRE_OPENCL=1) when built without NBODY_WITH_OPENCL or when no device exists.
   tests/test_opencl_float.c includes this file with NBODY_REAL float. */
#define _POSIX_C_SOURCE 200112L            /* setenv / unsetenv for the device override */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include "every_method.h"
#include "tree_accuracy.h"
#include "gpu_tree_emul.h"
#include <math.h>

#define DOUBLE (sizeof(nbody_real) == sizeof(double))
#define TOL(d, f) (DOUBLE ? (d) : (f))

static char last_info[512];
static void on_log(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_INFO) strncpy(last_info, msg, sizeof last_info - 1);
}

/* largest |a - b| / |b| over bodies, |.| the Euclidean norm of the acceleration */
static double rel_err(size_t i, const nbody_real *a[3], const nbody_real *b[3]) {
    double d = 0, r = 0;
    int k;
    for (k = 0; k < 3; ++k) {
        d += ((double)a[k][i] - (double)b[k][i]) * ((double)a[k][i] - (double)b[k][i]);
        r += (double)b[k][i] * (double)b[k][i];
    }
    return sqrt(d / r);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* accelerations of s with engine `eng`; returns the nbody_result */
static nbody_result accel(nbody_engine eng, const nbody_system *s, nbody_real eps, nbody_real theta, nbody_real *a) {
    nbody_desc d = NBODY__ZERO_INIT;
    d.engine = eng; d.softening = eps; d.theta = theta;
    d.leaf_size = 1;       /* the CPU tree as the GPU trees walk it: single-body leaves */
    return nbody_accelerations(&d, s, a, a + s->n, a + 2 * s->n);
}

/* max and median relative error of engine `eng` against `ref` */
static nbody_result compare(nbody_engine eng, nbody_engine ref, const nbody_system *s, nbody_real eps,
                            nbody_real theta, double *max, double *median) {
    size_t n = s->n, i;
    nbody_real *a = (nbody_real *)malloc(6 * n * sizeof(nbody_real)), *b = a + 3 * n;
    double *e = (double *)malloc(n * sizeof(double));
    const nbody_real *pa[3], *pb[3];
    nbody_result r = accel(eng, s, eps, theta, a);
    if (r == NBODY_OK) r = accel(ref, s, eps, theta, b);
    pa[0] = a; pa[1] = a + n; pa[2] = a + 2 * n; pb[0] = b; pb[1] = b + n; pb[2] = b + 2 * n;
    *max = 0;
    for (i = 0; r == NBODY_OK && i < n; ++i) {
        e[i] = rel_err(i, pa, pb);
        if (!(e[i] <= *max)) *max = e[i];
    }
    qsort(e, n, sizeof *e, cmp_double);
    *median = e[n / 2];
    free(a); free(e);
    return r;
}

static void test_dense_forces(void) {
    static const size_t sizes[] = {1, 2, 3, 63, 257, 1001};
    size_t k;
    for (k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        nbody_system s = {0};
        double max, med;
        nbody_real eps;
        nbody_ic_plummer(&s, sizes[k], 7 + k);
        for (eps = 0; eps < 0.02; eps += (nbody_real)0.01) {
            nbody_result r = compare(NBODY_ENGINE_OPENCL, NBODY_ENGINE_SIMPLE, &s, eps, 0, &max, &med);
            if (sizes[k] == 1) { CHECK(r == NBODY_OK, "n = 1: %s", nbody_result_string(r)); continue; }
            CHECK(r == NBODY_OK && max <= TOL(1e-12, 1e-5), "dense n = %u eps %g: max relative error %.3g (%s)",
                  (unsigned)sizes[k], (double)eps, max, nbody_result_string(r));
        }
        nbody_system_free(&s);
    }
}

static void test_tree_forces(void) {
    nbody_system s = {0};
    double max, med, cmax, cmed;
    nbody_result r;
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL_TREE)) {
        check_skip(NULL, "opencl-tree: the kd-tree is not in this nbody.h yet");
        return;
    }
    /* the CPU tree test's case (tests/test_tree.c): Plummer N = 20000, seed 2026, eps 1e-3 */
    nbody_ic_plummer(&s, 20000, 2026);
    r = compare(NBODY_ENGINE_OPENCL_TREE, NBODY_ENGINE_BLOCK, &s, (nbody_real)1e-3, (nbody_real)0.5, &max, &med);
    CHECK(r == NBODY_OK && med <= 1e-2, "opencl-tree theta 0.5 vs direct: median relative error %.3g (max %.3g, %s)",
          med, max, nbody_result_string(r));
    printf("opencl-tree vs direct, Plummer n = 20000, theta 0.5: median %.3g, max %.3g\n", med, max);
    nbody_system_free(&s);
    /* the tree built on the device is the GPU trees' tree (tests/gpu_tree_emul.h): the same
       keys, so the same topology; only the rounding of node values and sums differs, and an
       acceptance test that lands on a node's critical distance may go the other way. Also
       with test particles (n_active: the tree of the active bodies, walked by all). */
    {
        static const size_t sizes[][2] = {{1, 0}, {2, 0}, {3, 0}, {1001, 0}, {20000, 0}, {3000, 2000}, {3000, 1}};
        size_t k;
        for (k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
            size_t n = sizes[k][0], na = sizes[k][1] ? sizes[k][1] : n, i, close = 0;
            nbody_real *a = (nbody_real *)malloc(6 * n * sizeof(nbody_real)), *b = a + 3 * n;
            double *e = (double *)malloc(n * sizeof(double));
            nbody_desc d = NBODY__ZERO_INIT;
            const nbody_real *pa[3], *pb[3];
            nbody_ic_plummer(&s, n, 2026 + k);
            d.engine = NBODY_ENGINE_OPENCL_TREE; d.softening = (nbody_real)1e-3; d.theta = (nbody_real)0.5;
            d.n_active = sizes[k][1];
            r = a && e ? nbody_accelerations(&d, &s, a, a + n, a + 2 * n) : NBODY_ERR_OUT_OF_MEMORY;
            CHECK(r == NBODY_OK && gpu_tree_emul_accel(&s, na, d.softening, d.theta, b), "opencl-tree n = %lu: %s",
                  (unsigned long)n, nbody_result_string(r));
            pa[0] = a; pa[1] = a + n; pa[2] = a + 2 * n; pb[0] = b; pb[1] = b + n; pb[2] = b + 2 * n;
            for (i = 0; r == NBODY_OK && i < n; ++i) {
                double nb = sqrt((double)b[i] * b[i] + (double)b[n + i] * b[n + i] + (double)b[2 * n + i] * b[2 * n + i]);
                e[i] = nb > 0 ? rel_err(i, pa, pb) : fabs((double)a[i]) + fabs((double)a[n + i]) + fabs((double)a[2 * n + i]);
                if (e[i] != e[i]) e[i] = HUGE_VAL;
                close += e[i] <= TOL(1e-10, 1e-4);
            }
            qsort(e, n, sizeof *e, cmp_double);
            cmed = e[n / 2]; cmax = e[n - 1];
            CHECK(r == NBODY_OK && cmed <= TOL(1e-13, 1e-6) && close >= n - n / 200,
                  "opencl-tree vs the gpu tree emulated, n = %lu, n_active %lu: median %.3g, max %.3g, %lu of %lu bodies within %g",
                  (unsigned long)n, (unsigned long)na, cmed, cmax, (unsigned long)close, (unsigned long)n, TOL(1e-10, 1e-4));
            printf("opencl-tree vs the gpu tree emulated on the cpu, n = %lu, n_active %lu: median %.3g, max %.3g, %lu of %lu within %g\n",
                   (unsigned long)n, (unsigned long)na, cmed, cmax, (unsigned long)close, (unsigned long)n, TOL(1e-10, 1e-4));
            free(a); free(e);
            nbody_system_free(&s);
        }
    }
    {   /* body order assigns work-items differently; each body's walk, hence its sum, is the same */
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_real *a = (nbody_real *)malloc(6 * 1001 * sizeof(nbody_real)), *b = a + 3 * 1001;
        nbody_ic_plummer(&s, 1001, 5);
        d.engine = NBODY_ENGINE_OPENCL_TREE; d.softening = (nbody_real)0.01;
        r = nbody_accelerations(&d, &s, a, a + 1001, a + 2002);
        d.visit_order = NBODY_ORDER_BODY;
        if (r == NBODY_OK) r = nbody_accelerations(&d, &s, b, b + 1001, b + 2002);
        CHECK(r == NBODY_OK && memcmp(a, b, 3 * 1001 * sizeof(nbody_real)) == 0, "opencl-tree: body order must equal leaf order");
        free(a);
        nbody_system_free(&s);
    }
    {   /* the two walks (a work-item alone, a work-group's union) give the same bits: leaf and
           body order, test particles, n not a multiple of the group */
        static const size_t cases[][3] = {{1001, 0, 0}, {1001, 0, 1}, {3001, 2000, 0}, {3001, 2000, 1}, {5, 0, 0}};
        size_t k;
        for (k = 0; k < sizeof cases / sizeof *cases; ++k) {
            size_t n = cases[k][0];
            nbody_desc d = NBODY__ZERO_INIT;
            nbody_real *a = (nbody_real *)malloc(6 * n * sizeof(nbody_real)), *b = a + 3 * n;
            nbody_ic_plummer(&s, n, 9 + k);
            d.engine = NBODY_ENGINE_OPENCL_TREE; d.softening = (nbody_real)0.01; d.theta = (nbody_real)0.6;
            d.n_active = cases[k][1]; d.visit_order = cases[k][2] ? NBODY_ORDER_BODY : NBODY_ORDER_LEAF;
            nbody__cl_tree_walk_mode = 1;
            r = nbody_accelerations(&d, &s, a, a + n, a + 2 * n);
            nbody__cl_tree_walk_mode = 2;
            if (r == NBODY_OK) r = nbody_accelerations(&d, &s, b, b + n, b + 2 * n);
            nbody__cl_tree_walk_mode = 0;
            CHECK(r == NBODY_OK && memcmp(a, b, 3 * n * sizeof(nbody_real)) == 0, "opencl-tree: union walk must equal the walk alone "
                  "(n = %lu, n_active %lu, body order %d: %s)", (unsigned long)n, (unsigned long)cases[k][1], (int)cases[k][2],
                  nbody_result_string(r));
            free(a);
            nbody_system_free(&s);
        }
    }
}

/* float dense forces against the direct sum in double, Plummer n = 16384: the kernel's
   compensated tile sums against the plain running sum of the CUDA dense kernel (the same
   operations: fused multiply-adds in source order, w = (m y) y^2 with y = 1/sqrt(r2), here
   correctly rounded on the host, where the GPU's rsqrt is within an ulp or two). Measured:
   OpenCL median 2.8e-8 on PoCL, the plain sum 1.5e-6. */
static void test_dense_float_accuracy(void) {
    const size_t n = 16384;
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    tree_acc_stats cl, seq;
    double *ref;
    nbody_real *b = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
    nbody_result r;
    long long i;
    if (DOUBLE || !b) { free(b); return; }
#ifdef NBODY_TEST_QUICK
    /* the sanitizer build (make test-asan): the host's two O(N^2) sums below (double and float,
       UBSan checking each pair's conversions) took 195 of the program's 245 s of CPU there.
       They check the kernel's rounding, not memory (pocl's kernels are not instrumented); the
       OpenCL float engine's host code still runs in the other cases, and the native build runs
       this one */
    check_skip(NULL, "opencl dense float accuracy at N = 16384 (NBODY_TEST_QUICK: run by the native build)");
    free(b);
    return;
#endif
    nbody_ic_plummer(&s, n, 5);
    ref = tree_acc_direct(&s, TREE_ACC_EPS);
    CHECK(ref != NULL, "no memory");
    if (!ref) { free(b); nbody_system_free(&s); return; }
    d.engine = NBODY_ENGINE_OPENCL; d.softening = (nbody_real)TREE_ACC_EPS;
    r = tree_acc_stats_of(&d, &s, ref, &cl);
    CHECK(r == NBODY_OK, "opencl dense float: %s", nbody_result_string(r));
    NBODY__PRAGMA(omp parallel for schedule(static))
    for (i = 0; i < (long long)n; ++i) {
        float ax = 0, ay = 0, az = 0, e2 = (float)(TREE_ACC_EPS * TREE_ACC_EPS);
        size_t j;
        for (j = 0; j < n; ++j) {
            float dx = (float)s.x[j] - (float)s.x[i], dy = (float)s.y[j] - (float)s.y[i], dz = (float)s.z[j] - (float)s.z[i];
            float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, e2))), y = 1.0f / sqrtf(r2), w = ((float)s.m[j] * y) * (y * y);
            if (j == (size_t)i) continue;
            ax = fmaf(w, dx, ax); ay = fmaf(w, dy, ay); az = fmaf(w, dz, az);
        }
        b[i] = ax; b[n + i] = ay; b[2 * n + i] = az;
    }
    {   /* the plain sum's distribution, through the same statistics */
        double *e = (double *)malloc(n * sizeof(double));
        size_t k;
        for (k = 0; e && k < n; ++k) {
            double dx = (double)b[k] - ref[k], dy = (double)b[n + k] - ref[n + k], dz = (double)b[2 * n + k] - ref[2 * n + k];
            e[k] = sqrt((dx * dx + dy * dy + dz * dz) / (ref[k] * ref[k] + ref[n + k] * ref[n + k] + ref[2 * n + k] * ref[2 * n + k]));
        }
        if (e) qsort(e, n, sizeof(double), tree_acc_cmp);
        seq.median = e ? e[n / 2] : 0; seq.max = e ? e[n - 1] : 0;
        free(e);
    }
    CHECK(cl.median <= 2 * seq.median && cl.max <= 2 * seq.max,
          "opencl dense float: median %.3e, max %.3e against the plain float sum's %.3e, %.3e", cl.median, cl.max, seq.median, seq.max);
    CHECK(cl.median <= 3e-7, "opencl dense float: median relative error %.3e > 3e-7 at n = 16384", cl.median);
    printf("  opencl dense float, Plummer 16384 vs double: median %.3e, max %.3e (a plain float running sum: %.3e, %.3e)\n",
           cl.median, cl.max, seq.median, seq.max);
    free(ref); free(b);
    nbody_system_free(&s);
}

/* ---- the symmetric dense kernel (forced through nbody__cl_dense_config) ---------------- */
/* accelerations a[3n] of s on one OpenCL device with the dense kernel chosen: kernel 0
   one-sided, 1 symmetric with work-groups of `group` and `rounds` rounds a launch (0: the
   engine's); n_active as desc.n_active */
static nbody_result accel_kernel(const nbody_system *s, nbody_real eps, size_t n_active, int kernel, int group, int rounds,
                                 nbody_real *a) {
    nbody_desc d0 = NBODY__ZERO_INIT, d;
    nbody__engine e;
    nbody__buf y = NULL, f = NULL;
    size_t n = s->n, chosen = 0;
    nbody_result r;
    d0.engine = NBODY_ENGINE_OPENCL; d0.softening = eps; d0.n_active = n_active;
    d = nbody__desc_defaults(&d0);
    r = nbody__engine_start(&e, &d, n, s->m);
    if (r != NBODY_OK) return r;
    r = nbody__cl_dense_config(&e, kernel, group, 0, rounds, &chosen);
    if (r == NBODY_OK && chosen != (size_t)(kernel ? group : 0)) r = NBODY_ERR_DEVICE;   /* the force did not take */
    if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * n, &y);
    if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * n, &f);
    if (r == NBODY_OK) r = nbody__upload_system(&e, y, s);
    if (r == NBODY_OK) r = e.ops->derivative(&e, y, f);
    if (r == NBODY_OK) r = e.ops->download(&e, a, f, 3 * n, 3 * n);
    if (y) e.ops->release(&e, y);
    if (f) e.ops->release(&e, f);
    nbody__engine_stop(&e);
    return r;
}

/* largest per-body relative difference of a against b (3n each) */
static double max_rel(const nbody_real *a, const nbody_real *b, size_t n) {
    const nbody_real *pa[3], *pb[3];
    double m = 0;
    size_t i;
    pa[0] = a; pa[1] = a + n; pa[2] = a + 2 * n; pb[0] = b; pb[1] = b + n; pb[2] = b + 2 * n;
    for (i = 0; i < n; ++i) {
        double e = rel_err(i, pa, pb);
        if (!(e <= m)) m = e;
    }
    return m;
}

/* per body, the sum of the magnitudes of its terms m_j |d| / (|d|^2 + eps^2)^(3/2), in double */
static double *term_scale(const nbody_system *s, double eps) {
    size_t n = s->n, i, j;
    double *sc = (double *)calloc(n ? n : 1, sizeof(double));
    for (i = 0; sc && i < n; ++i)
        for (j = 0; j < n; ++j) {
            double dx = (double)s->x[j] - (double)s->x[i], dy = (double)s->y[j] - (double)s->y[i];
            double dz = (double)s->z[j] - (double)s->z[i], r2 = dx * dx + dy * dy + dz * dz + eps * eps;
            if (j != i) sc[i] += (double)s->m[j] * sqrt(dx * dx + dy * dy + dz * dz) / (r2 * sqrt(r2));
        }
    return sc;
}

/* largest per-body error of a (3n) against the double direct sum ref (3n): relative to the
   force (double), or relative to the sum of the terms' magnitudes scale (float: a body whose
   terms cancel has a relative error of the roundings of those terms, whichever the order) */
static double max_err_ref(const nbody_real *a, const double *ref, const double *scale, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double dx = (double)a[i] - ref[i], dy = (double)a[n + i] - ref[n + i], dz = (double)a[2 * n + i] - ref[2 * n + i];
        double nr = DOUBLE ? sqrt(ref[i] * ref[i] + ref[n + i] * ref[n + i] + ref[2 * n + i] * ref[2 * n + i]) : scale[i];
        double e = sqrt(dx * dx + dy * dy + dz * dz) / (nr > 0 ? nr : 1);
        if (!(e <= m)) m = e;
    }
    return m;
}

/* the symmetric kernel against the direct sum in double and the one-sided kernel: one tile
   (N below the tile), even and odd tile counts, partial last tiles, softening 0 and 0.01,
   equal masses and not (two forms of the kernel), work-group sizes 8, 32, 16 with 3, 1 and
   the automatic count of rounds a launch (the last launch partial or not); bitwise run to
   run; test particles (n_active). Bounds: 1e-12 of the force in double; in float 1e-6 of
   the terms' magnitudes (a few roundings of the terms). */
static void test_dense_symmetric(void) {
    static const size_t sizes[] = {1, 2, 3, 31, 64, 65, 200, 257, 1001, 1500};
    static const int groups[] = {8, 32, 16}, rounds[] = {3, 1, 0};   /* 0: automatic */
    size_t k, g;
    for (k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        size_t n = sizes[k];
        nbody_system s = {0};
        nbody_real *sym = (nbody_real *)malloc(9 * n * sizeof(nbody_real)), *one = sym + 3 * n, *again = one + 3 * n;
        int ie;
        size_t i;
        nbody_ic_plummer(&s, n, 40 + k);
        for (i = 0; k % 2 && i < n; ++i) s.m[i] *= (nbody_real)(0.5 + 0.25 * (double)(i % 7));   /* unequal masses */
        for (ie = 0; ie < 2; ++ie) {
            nbody_real eps = (nbody_real)(0.01 * ie);
            double *ref = tree_acc_direct(&s, (double)eps), *scale = term_scale(&s, (double)eps);
            nbody_result r1 = accel_kernel(&s, eps, 0, 0, 0, 0, one);
            double e_one = r1 == NBODY_OK && ref && scale ? max_err_ref(one, ref, scale, n) : 1;
            for (g = 0; g < sizeof groups / sizeof *groups; ++g) {
                nbody_result r = accel_kernel(&s, eps, 0, 1, groups[g], rounds[g], sym), ra;
                double e_sym = r == NBODY_OK && ref && scale ? max_err_ref(sym, ref, scale, n) : 1;
                CHECK(r == NBODY_OK && e_sym <= TOL(1e-12, 1e-6) && e_one <= TOL(1e-12, 1e-6),
                      "symmetric n = %u eps %g group %d, %d rounds a launch: max error %.3g against the double sum (one-sided %.3g, %s)",
                      (unsigned)n, (double)eps, groups[g], rounds[g], e_sym, e_one, nbody_result_string(r));
                ra = accel_kernel(&s, eps, 0, 1, groups[g], rounds[g], again);
                CHECK(ra == NBODY_OK && memcmp(sym, again, 3 * n * sizeof(nbody_real)) == 0,
                      "symmetric n = %u eps %g group %d: not bitwise the same on a second run", (unsigned)n, (double)eps, groups[g]);
                if (n >= 1001)
                    printf("symmetric, n = %u, eps %g, group %d: worst body %.3g %s (one-sided %.3g)\n", (unsigned)n,
                           (double)eps, groups[g], e_sym, DOUBLE ? "of its force" : "of its terms' magnitudes", e_one);
            }
            free(ref); free(scale);
        }
        free(sym);
        nbody_system_free(&s);
    }
    {   /* test particles: 250 and 37 sources of 300 (a partial tile either way) */
        static const size_t actives[] = {250, 37};
        const size_t n = 300;
        nbody_system s = {0};
        nbody_real *sym = (nbody_real *)malloc(9 * n * sizeof(nbody_real)), *one = sym + 3 * n, *ref = one + 3 * n;
        nbody_ic_plummer(&s, n, 77);
        for (k = 0; k < 2; ++k) {
            nbody_desc d = NBODY__ZERO_INIT;
            nbody_result r, r1 = accel_kernel(&s, (nbody_real)0.01, actives[k], 0, 0, 0, one), r2;
            d.engine = NBODY_ENGINE_SIMPLE; d.softening = (nbody_real)0.01; d.n_active = actives[k];
            r2 = nbody_accelerations(&d, &s, ref, ref + n, ref + 2 * n);
            for (g = 0; g < sizeof groups / sizeof *groups; ++g) {
                double e_ref, e_one;
                r = accel_kernel(&s, (nbody_real)0.01, actives[k], 1, groups[g], rounds[g], sym);
                e_ref = r == NBODY_OK && r2 == NBODY_OK ? max_rel(sym, ref, n) : 1;
                e_one = r == NBODY_OK && r1 == NBODY_OK ? max_rel(sym, one, n) : 1;
                CHECK(e_ref <= TOL(1e-12, 1e-5) && e_one <= TOL(1e-12, 1e-5),
                      "symmetric, n_active %u of %u, group %d: %.3g against SIMPLE, %.3g against one-sided (%s)",
                      (unsigned)actives[k], (unsigned)n, groups[g], e_ref, e_one, nbody_result_string(r));
            }
        }
        free(sym);
        nbody_system_free(&s);
    }
}

/* float: the symmetric kernel's errors against the direct sum in double, Plummer n = 16384
   (work-groups of 32: 64 tiles, 31 rounds), beside the one-sided kernel's */
static void test_dense_symmetric_float_accuracy(void) {
    const size_t n = 16384;
    nbody_system s = {0};
    double *ref, *e;
    nbody_real *a = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
    tree_acc_stats st[2];
    int kernel;
    if (DOUBLE || !a) { free(a); return; }
    nbody_ic_plummer(&s, n, 5);
    ref = tree_acc_direct(&s, TREE_ACC_EPS);
    e = (double *)malloc(n * sizeof(double));
    for (kernel = 0; kernel < 2 && ref && e; ++kernel) {
        nbody_result r = accel_kernel(&s, (nbody_real)TREE_ACC_EPS, 0, kernel, kernel ? 32 : 0, 0, a);
        size_t i;
        CHECK(r == NBODY_OK, "float accuracy, kernel %d: %s", kernel, nbody_result_string(r));
        for (i = 0; i < n; ++i) {
            double dx = (double)a[i] - ref[i], dy = (double)a[n + i] - ref[n + i], dz = (double)a[2 * n + i] - ref[2 * n + i];
            e[i] = sqrt((dx * dx + dy * dy + dz * dz) / (ref[i] * ref[i] + ref[n + i] * ref[n + i] + ref[2 * n + i] * ref[2 * n + i]));
            if (e[i] != e[i]) e[i] = HUGE_VAL;
        }
        qsort(e, n, sizeof(double), tree_acc_cmp);
        st[kernel].median = e[n / 2]; st[kernel].max = e[n - 1];
    }
    if (ref && e) {
                CHECK(st[1].median <= 3e-7 && st[1].max <= 2 * st[0].max, "symmetric float: median %.3e, max %.3e (bounds 3e-7 and "
              "twice the one-sided kernel's max %.3e)", st[1].median, st[1].max, st[0].max);
        printf("  float, Plummer 16384 vs double: symmetric median %.3e max %.3e, one-sided median %.3e max %.3e\n",
               st[1].median, st[1].max, st[0].median, st[0].max);
    }
    free(ref); free(e); free(a);
    nbody_system_free(&s);
}

/* desc fields the OpenCL tree cannot honour are refused at nbody_create, with an error line */
static int error_lines;
static void count_errors(nbody_log_level level, const char *msg, void *user) {
    (void)msg; (void)user;
    if (level == NBODY_LOG_ERROR) error_lines++;
}
static void test_tree_refusals(void) {
    nbody_system s = {0};
    int k;
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL_TREE)) return;
    nbody_ic_plummer(&s, 100, 3);
    for (k = 0; k < 4; ++k) {
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_sim *sim = NULL;
        nbody_result r;
        int refuse = k < 2;
        d.engine = NBODY_ENGINE_OPENCL_TREE; d.log.func = count_errors;
        if (k == 0) d.quadrupole = 1;
        if (k == 1) d.traversal = NBODY_TRAVERSAL_STACK;
        if (k == 2) d.traversal = NBODY_TRAVERSAL_STACKLESS;
        if (k == 3) d.visit_order = NBODY_ORDER_BODY;
        error_lines = 0;
        r = nbody_create(&sim, &d, &s);
        CHECK(refuse ? r == NBODY_ERR_UNAVAILABLE && error_lines > 0 && sim == NULL : r == NBODY_OK,
              "opencl-tree desc case %d: %s (%d error lines)", k, nbody_result_string(r), error_lines);
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
}

/* accuracy per body (tree_accuracy.h): the OpenCL tree is the GPU trees' tree (Morton-ordered,
   count-balanced heap, the CPU tree's criterion on a bounding radius that may exceed the exact
   one), so its error distribution is that of the GPU build emulated on the CPU
   (tests/gpu_tree_emul.h) to the rounding of the sums, within a factor 2 of the CPU tree's
   (measured: median 3.6e-3 against 2.5e-3, p99 9.7e-3 against 9.2e-3), and it meets the
   per-body bounds */
static void test_tree_accuracy_per_body(void) {
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    tree_acc_stats cl, cpu, emu;
    double *ref, dev = 0;
    nbody_real *a;
    nbody_result r;
    size_t n = TREE_ACC_N, i;
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL_TREE)) return;
    nbody_ic_plummer(&s, TREE_ACC_N, TREE_ACC_SEED);
    ref = tree_acc_direct(&s, TREE_ACC_EPS);
    a = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
    CHECK(ref != NULL && a != NULL, "no memory");
    if (!ref || !a) { free(ref); free(a); nbody_system_free(&s); return; }
    d.engine = NBODY_ENGINE_OPENCL_TREE; d.theta = (nbody_real)0.5; d.softening = (nbody_real)TREE_ACC_EPS;
    tree_acc_check_bounds("opencl-tree, Plummer 12347 theta 0.5 monopole", tree_acc_stats_of(&d, &s, ref, &cl), &cl);
    d.engine = NBODY_ENGINE_TREE; d.leaf_size = 1;
    r = tree_acc_stats_of(&d, &s, ref, &cpu);
    CHECK(r == NBODY_OK, "cpu tree: %s", nbody_result_string(r));
    CHECK(cl.median <= 2 * cpu.median && cl.median >= 0.5 * cpu.median && cl.p99 <= 2 * cpu.p99 && cl.p99 >= 0.5 * cpu.p99,
          "opencl-tree error distribution (median %.3e, p99 %.3e) not within a factor 2 of the cpu tree's (%.3e, %.3e)",
          cl.median, cl.p99, cpu.median, cpu.p99);
    printf("  cpu tree (leaf_size 1) on the same case: median %.3e, p99 %.3e, worst %.3e\n", cpu.median, cpu.p99, cpu.max);
    {   /* the emulated GPU build's distribution, through the same statistics */
        double *e = (double *)malloc(n * sizeof(double));
        int ok = e && gpu_tree_emul_accel(&s, n, d.softening, d.theta, a);
        CHECK(ok, "gpu tree emulation: no memory");
        for (i = 0; ok && i < n; ++i) {
            double dx = (double)a[i] - ref[i], dy = (double)a[n + i] - ref[n + i], dz = (double)a[2 * n + i] - ref[2 * n + i];
            e[i] = sqrt((dx * dx + dy * dy + dz * dz) / (ref[i] * ref[i] + ref[n + i] * ref[n + i] + ref[2 * n + i] * ref[2 * n + i]));
        }
        if (ok) qsort(e, n, sizeof(double), tree_acc_cmp);
        memset(&emu, 0, sizeof emu);
        if (ok) { emu.median = e[n / 2]; emu.p99 = e[(n - 1) * 99 / 100]; emu.max = e[n - 1]; }
        free(e);
    }
    dev = fabs(cl.median - emu.median) / emu.median;
    dev = fmax(dev, fabs(cl.p99 - emu.p99) / emu.p99);
    dev = fmax(dev, fabs(cl.max - emu.max) / emu.max);
    CHECK(dev <= TOL(1e-6, 1e-2), "opencl-tree error distribution differs from the emulated gpu tree's by %.3g relative "
          "(median %.4e / %.4e, p99 %.4e / %.4e, worst %.4e / %.4e)", dev, cl.median, emu.median, cl.p99, emu.p99, cl.max, emu.max);
    printf("  opencl-tree and the gpu tree emulated on the cpu: error distributions agree to %.2g relative\n", dev);
    free(a);
    free(ref);
    nbody_system_free(&s);
}

/* the engine operations against the host's, on vectors with offsets */
static void test_engine_ops(void) {
    enum { LEN = 1003, OFF = 5, NB = NBODY__MAX_TERMS + 3 };
    nbody_desc d = NBODY__ZERO_INIT;
    nbody__engine cl, host;
    nbody__buf cb[NB], hb[NB];
    nbody_real *v = (nbody_real *)malloc((LEN + OFF) * sizeof(nbody_real)), *w = (nbody_real *)malloc((LEN + OFF) * sizeof(nbody_real));
    nbody_real m = 1, nc = 0, nh = 0, maxdiff = 0;
    nbody__lincomb oc, oh;
    nbody_result r;
    int i, j, finite = -1;
    d.engine = NBODY_ENGINE_OPENCL;
    d = nbody__desc_defaults(&d);
    r = nbody__engine_start(&cl, &d, 1, &m);
    CHECK(r == NBODY_OK, "engine start: %s", nbody_result_string(r));
    if (r != NBODY_OK) { free(v); free(w); return; }
    d.engine = NBODY_ENGINE_SIMPLE;
    nbody__engine_start(&host, &d, 1, &m);
    for (j = 0; j < NB; ++j) {             /* buffer j holds sin(i + 7 j) */
        for (i = 0; i < LEN + OFF; ++i) v[i] = (nbody_real)sin((double)(i + 7 * j));
        cl.ops->alloc(&cl, LEN + OFF, &cb[j]); cl.ops->upload(&cl, cb[j], 0, v, LEN + OFF);
        host.ops->alloc(&host, LEN + OFF, &hb[j]); host.ops->upload(&host, hb[j], 0, v, LEN + OFF);
    }
    /* 16 terms, offsets, compensated: out = buffer 0, y = buffer 1, comp = buffer 2 */
    memset(&oc, 0, sizeof oc);
    oc.out_off = 3; oc.y_off = 2; oc.k_off = 3; oc.len = LEN; oc.h = (nbody_real)0.37; oc.nk = NBODY__MAX_TERMS;
    for (j = 0; j < NBODY__MAX_TERMS; ++j) oc.c[j] = (nbody_real)(j + 1) / 17;
    oh = oc;
    oc.out = cb[0]; oc.y = cb[1]; oc.comp = cb[2]; oh.out = hb[0]; oh.y = hb[1]; oh.comp = hb[2];
    for (j = 0; j < NBODY__MAX_TERMS; ++j) { oc.k[j] = cb[3 + j]; oh.k[j] = hb[3 + j]; }
    oc.k[5] = cb[0]; oh.k[5] = hb[0];     /* out aliases a term, index for index */
    r = cl.ops->lincomb(&cl, &oc); host.ops->lincomb(&host, &oh);
    for (j = 0; j <= 2 && r == NBODY_OK; j += 2) {   /* out, comp */
        r = cl.ops->download(&cl, v, cb[j], 0, LEN + OFF);
        host.ops->download(&host, w, hb[j], 0, LEN + OFF);
        for (i = 0; i < LEN + OFF; ++i) {
            nbody_real diff = (nbody_real)fabs((double)(v[i] - w[i]));
            if (!(diff <= maxdiff)) maxdiff = diff;
        }
    }
    CHECK(r == NBODY_OK && maxdiff <= TOL(1e-14, 1e-5), "lincomb (16 terms, offsets, Kahan) differs from the host by %g", (double)maxdiff);
    /* y = NULL reads 0 */
    memset(&oc, 0, sizeof oc);
    oc.out = cb[1]; oc.h = 1; oc.len = LEN + OFF;
    r = cl.ops->lincomb(&cl, &oc);
    if (r == NBODY_OK) r = cl.ops->all_finite(&cl, cb[1], 0, LEN + OFF, &finite);
    cl.ops->download(&cl, v, cb[1], 0, LEN + OFF);
    for (i = 0, maxdiff = 0; i < LEN + OFF; ++i) if (v[i] != 0) maxdiff = 1;
    CHECK(maxdiff == 0 && finite == 1, "lincomb with no y and no terms must write zeros");
    /* error norm, then NaN propagation */
    memset(&oc, 0, sizeof oc);
    oc.y_off = 1; oc.out_off = 2; oc.k_off = 4; oc.len = LEN; oc.h = (nbody_real)0.01; oc.nk = 3;
    oc.c[0] = 1; oc.c[1] = -2; oc.c[2] = (nbody_real)0.5;
    oh = oc;
    oc.y = cb[3]; oc.out = cb[4]; oh.y = hb[3]; oh.out = hb[4];
    for (j = 0; j < 3; ++j) { oc.k[j] = cb[5 + j]; oh.k[j] = hb[5 + j]; }
    r = cl.ops->error_norm(&cl, &oc, (nbody_real)1e-6, (nbody_real)1e-3, &nc);
    host.ops->error_norm(&host, &oh, (nbody_real)1e-6, (nbody_real)1e-3, &nh);
    CHECK(r == NBODY_OK && fabs((double)(nc - nh)) <= TOL(1e-13, 1e-5) * (double)nh && nh > 0,
          "error_norm %.17g, host %.17g", (double)nc, (double)nh);
    v[0] = (nbody_real)NAN;
    cl.ops->upload(&cl, cb[6], 4 + LEN / 2, v, 1);
    r = cl.ops->error_norm(&cl, &oc, (nbody_real)1e-6, (nbody_real)1e-3, &nc);
    CHECK(r == NBODY_OK && nc != nc, "error_norm must be NaN when a term is NaN, got %g", (double)nc);
    r = cl.ops->all_finite(&cl, cb[6], 0, LEN + OFF, &finite);
    CHECK(r == NBODY_OK && finite == 0, "all_finite must see the NaN");
    r = cl.ops->all_finite(&cl, cb[6], 5 + LEN / 2, LEN / 2, &finite);
    CHECK(r == NBODY_OK && finite == 1, "all_finite must honour the offset");
    v[0] = (nbody_real)HUGE_VAL;
    cl.ops->upload(&cl, cb[7], LEN, v, 1);
    r = cl.ops->all_finite(&cl, cb[7], 0, LEN + OFF, &finite);
    CHECK(r == NBODY_OK && finite == 0, "all_finite must see the Inf");
    for (j = 0; j < NB; ++j) { cl.ops->release(&cl, cb[j]); host.ops->release(&host, hb[j]); }
    nbody__engine_stop(&cl); nbody__engine_stop(&host);
    free(v); free(w);
}

/* one run to t_end; relative energy change and the final state */
static nbody_result run(nbody_engine eng, nbody_method method, nbody_real tol, int compensated,
                        const nbody_system *s0, nbody_real t_end, nbody_system *out, double *de) {
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_invariants e0, e1;
    nbody_sim *sim = NULL;
    nbody_result r;
    d.engine = eng; d.method = method; d.tolerance = tol; d.compensated = compensated;
    d.softening = (nbody_real)0.05; d.dt = (nbody_real)(tol > 0 ? 1e-3 : 2e-3);
    r = nbody_create(&sim, &d, s0);
    if (r == NBODY_OK) r = nbody_advance(sim, t_end);
    if (r == NBODY_OK) r = nbody_get_state(sim, out);
    nbody_destroy(sim);
    if (r != NBODY_OK) return r;
    nbody_measure(s0, 1, d.softening, &e0);
    nbody_measure(out, 1, d.softening, &e1);
    *de = fabs((double)((e1.energy - e0.energy) / e0.energy));
    return NBODY_OK;
}

static double max_pos_diff(const nbody_system *a, const nbody_system *b) {
    double m = 0;
    size_t i;
    for (i = 0; i < a->n; ++i) {
        double dx = fabs((double)(a->x[i] - b->x[i])) + fabs((double)(a->y[i] - b->y[i])) + fabs((double)(a->z[i] - b->z[i]));
        if (!(dx <= m)) m = dx;
    }
    return m;
}

static void test_runs(void) {
    static const struct { nbody_method method; nbody_real tol; int comp; const char *name; } runs[] = {
        {NBODY_LEAPFROG, 0, 0, "leapfrog"}, {NBODY_LEAPFROG, 0, 1, "leapfrog compensated"},
        {NBODY_RK4, 0, 0, "rk4"}, {NBODY_RKDP, (nbody_real)TOL(1e-9, 1e-5), 0, "rkdp adaptive"}};
    nbody_system s0 = {0}, a = {0}, b = {0};
    size_t k;
    nbody_ic_plummer(&s0, 101, 3);
    nbody_system_alloc(&a, 101); nbody_system_alloc(&b, 101);
    for (k = 0; k < sizeof runs / sizeof *runs; ++k) {
        double de_cl = 1, de_cpu = 1;
        nbody_result rc = run(NBODY_ENGINE_OPENCL, runs[k].method, runs[k].tol, runs[k].comp, &s0, (nbody_real)0.5, &a, &de_cl);
        nbody_result rh = run(NBODY_ENGINE_SIMPLE, runs[k].method, runs[k].tol, runs[k].comp, &s0, (nbody_real)0.5, &b, &de_cpu);
        /* a UNAVAILABLE method counts as a failure: the run must exist on every engine */
        CHECK(rc == NBODY_OK && rh == NBODY_OK, "%s: opencl %s, cpu %s", runs[k].name, nbody_result_string(rc), nbody_result_string(rh));
        if (rc != NBODY_OK || rh != NBODY_OK) continue;
        CHECK(de_cl <= 2 * de_cpu + TOL(1e-12, 1e-5), "%s: opencl |dE/E| %.3g vs cpu %.3g", runs[k].name, de_cl, de_cpu);
        CHECK(max_pos_diff(&a, &b) <= TOL(1e-8, 1e-3), "%s: opencl and cpu positions differ by %.3g", runs[k].name, max_pos_diff(&a, &b));
        printf("%s, Plummer n = 101 to t = 0.5: |dE/E| opencl %.3g, cpu %.3g, positions differ by %.3g\n",
               runs[k].name, de_cl, de_cpu, max_pos_diff(&a, &b));
    }
    if (nbody_engine_available(NBODY_ENGINE_OPENCL_TREE)) {
        double de_t = 1, de_d = 1;
        nbody_result r = run(NBODY_ENGINE_OPENCL_TREE, NBODY_LEAPFROG, 0, 0, &s0, (nbody_real)0.5, &a, &de_t);
        run(NBODY_ENGINE_SIMPLE, NBODY_LEAPFROG, 0, 0, &s0, (nbody_real)0.5, &b, &de_d);
        CHECK(r == NBODY_OK && de_t <= 1e-3, "opencl-tree leapfrog: |dE/E| %.3g (%s)", de_t, nbody_result_string(r));
        printf("opencl-tree leapfrog to t = 0.5: |dE/E| %.3g (direct %.3g)\n", de_t, de_d);
    }
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* coincident bodies without softening: NaN forces, reported, last good state kept (with RK4
   the later stages see NaN positions, which the tree engine must not try to build a tree of) */
static void test_not_finite(nbody_engine engine, nbody_method method) {
    nbody_system s = {0}, out = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r;
    nbody_ic_figure_eight(&s);
    nbody_system_alloc(&out, 3);
    s.x[1] = s.x[0]; s.y[1] = s.y[0];
    d.engine = engine; d.method = method;
    r = nbody_create(&sim, &d, &s);
    if (r == NBODY_OK) r = nbody_step(sim);
    CHECK(r == NBODY_ERR_NOT_FINITE, "%s, %s, coincident bodies: %s", nbody_engine_name(engine),
          nbody_method_name(method), nbody_result_string(r));
    if (sim && nbody_get_state(sim, &out) == NBODY_OK) CHECK(out.x[0] == s.x[0] && out.t == 0, "state must be kept");
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&out);
}

static void test_device_choice(void) {
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r;
    char saved[256] = "";
    const char *env = getenv("NBODY_OPENCL_DEVICE");
    if (env) { strncpy(saved, env, sizeof saved - 1); unsetenv("NBODY_OPENCL_DEVICE"); }
    nbody_ic_figure_eight(&s);
    d.engine = NBODY_ENGINE_OPENCL; d.log.func = on_log;
    d.device = 1000;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && !sim, "device 1000: %s", nbody_result_string(r));
    d.device = 0; d.block_size = 1 << 30;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && !sim, "block_size 2^30: %s", nbody_result_string(r));
    d.block_size = 0;
    setenv("NBODY_OPENCL_DEVICE", "bogus", 1);
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && !sim, "NBODY_OPENCL_DEVICE=bogus: %s", nbody_result_string(r));
    setenv("NBODY_OPENCL_DEVICE", "1000", 1);
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && !sim, "NBODY_OPENCL_DEVICE=1000: %s", nbody_result_string(r));
    if (saved[0]) setenv("NBODY_OPENCL_DEVICE", saved, 1); else unsetenv("NBODY_OPENCL_DEVICE");
    last_info[0] = 0;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_OK && strstr(last_info, "OpenCL device") && strstr(last_info, "platform"),
          "the log must name the device: '%s'", last_info);
    printf("%s\n", last_info);
    nbody_destroy(sim);
    sim = NULL;
    {   /* device 0 is a GPU whenever one is registered; the line names the type */
        cl_platform_id plats[8];
        cl_uint np = 0, p, ngpu = 0;
        if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS) np = 0;
        for (p = 0; p < np && p < 8; ++p) {
            cl_uint n = 0;
            if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_GPU, 0, NULL, &n) == CL_SUCCESS) ngpu += n;
        }
        CHECK(strstr(last_info, ngpu ? "(GPU)" : "(CPU)") || (!ngpu && (strstr(last_info, "(accelerator)") ||
              strstr(last_info, "(other)"))), "%u GPU(s) registered: device 0 is '%s'", (unsigned)ngpu, last_info);
        if (!saved[0]) {
            setenv("NBODY_OPENCL_DEVICE", "cpu", 1);   /* the override still picks by type */
            last_info[0] = 0;
            r = nbody_create(&sim, &d, &s);
            CHECK(r == NBODY_ERR_UNAVAILABLE || (r == NBODY_OK && strstr(last_info, "(CPU)")),
                  "NBODY_OPENCL_DEVICE=cpu: %s, '%s'", nbody_result_string(r), last_info);
            nbody_destroy(sim);
            unsetenv("NBODY_OPENCL_DEVICE");
        }
    }
    nbody_system_free(&s);
}

int main(void) {
    nbody_system s = {0};
    nbody_real a[9];
    nbody_result r;
    nbody_ic_figure_eight(&s);
    r = accel(NBODY_ENGINE_OPENCL, &s, 0, 0, a);
    nbody_system_free(&s);
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL)) {
        CHECK(r == NBODY_ERR_UNAVAILABLE, "compiled out: %s", nbody_result_string(r));
        check_skip("NBODY_REQUIRE_OPENCL", "OpenCL engines compiled out (build with WITH_OPENCL=1)");
        return check_finish();
    }
    if (r == NBODY_ERR_UNAVAILABLE) {
        check_skip("NBODY_REQUIRE_OPENCL", "no OpenCL platform or device (or no fp64 for a double build)");
        return check_finish();
    }
    CHECK(r == NBODY_OK, "first OpenCL force evaluation: %s", nbody_result_string(r));
    test_dense_forces();
    test_tree_forces();
    test_tree_accuracy_per_body();
    test_tree_refusals();
    test_dense_float_accuracy();
    test_dense_symmetric();
    test_dense_symmetric_float_accuracy();
    test_engine_ops();
    test_runs();
    check_every_method(NBODY_ENGINE_OPENCL);
    test_not_finite(NBODY_ENGINE_OPENCL, NBODY_LEAPFROG);
    test_not_finite(NBODY_ENGINE_OPENCL, NBODY_RK4);
    if (nbody_engine_available(NBODY_ENGINE_OPENCL_TREE)) {
        test_not_finite(NBODY_ENGINE_OPENCL_TREE, NBODY_RK4);
        nbody__cl_tree_walk_mode = 2;      /* the work-group union walk too */
        test_not_finite(NBODY_ENGINE_OPENCL_TREE, NBODY_RK4);
        nbody__cl_tree_walk_mode = 0;
    }
    test_device_choice();
    return check_finish();
}
