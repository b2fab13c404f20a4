/* cuda_engines.c - the CUDA engines against the CPU engines; needs an NVIDIA GPU.
   Not named test_*.c so the CPU-only `make test` does not build it: run `make test-cuda`.
   Double precision: dense forces agree with SIMPLE to 1e-12 relative; the tree is within
   its theta's error and equals the direct sum as theta -> 0; whole runs with leapfrog, RK4
   and adaptive RKDP conserve energy as the CPU does; every method gives the CPU's result
   (every_method.h); NBODY_HERMITE against BLOCK (hermite_engine.h); out of device memory, bad
   device index, NaN states. */
#define NBODY_IMPLEMENTATION
#include "../nbody.h"
#include "check.h"
#include "every_method.h"
#include "tree_accuracy.h"
#include "hermite_engine.h"
#include "tree_active.h"

void nbody__cuda_bench_config(nbody__engine *e, int variant, int block, int bodies_per_thread);
void nbody__cuda_test_grid_cap(unsigned int blocks);
void nbody__cuda_kdk_config(unsigned int union_fraction, unsigned int max_lanes, int device_step, int roots_log2, int full,
                            int front, int climb, int fuse, int loop);
void nbody__cuda_kdk_limiter(int on);
#include <math.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* NBODY_TEST_SMALL=1 (the compute-sanitizer runs): fewer bodies */
static size_t scaled(size_t n) {
    const char *v = getenv("NBODY_TEST_SMALL");
    return v && strcmp(v, "1") == 0 ? (n + 99) / 100 : n;
}

/* per body |a - b| / |b| over n bodies (x, y, z blocks of n): the largest, and the median */
static double rel_errors(const nbody_real *a, const nbody_real *b, size_t n, double *median) {
    double *rel = (double *)malloc(n * sizeof(double)), worst = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double dx = (double)a[i] - (double)b[i], dy = (double)a[n + i] - (double)b[n + i], dz = (double)a[2 * n + i] - (double)b[2 * n + i];
        double nb = sqrt((double)b[i] * b[i] + (double)b[n + i] * b[n + i] + (double)b[2 * n + i] * b[2 * n + i]);
        rel[i] = sqrt(dx * dx + dy * dy + dz * dz) / (nb > 0 ? nb : 1);
        if (!(rel[i] <= worst)) worst = rel[i];
    }
    qsort(rel, n, sizeof(double), cmp_double);
    *median = rel[n / 2];
    free(rel);
    return worst;
}

/* the accelerations of two configurations on s compared: rel_errors of a against b */
static void accel_error(const nbody_system *s, nbody_desc *da, nbody_desc *db, double *worst, double *median,
                        nbody_result *ra, nbody_result *rb) {
    size_t n = s->n;
    nbody_real *a = (nbody_real *)malloc(6 * n * sizeof(nbody_real)), *b = a + 3 * n;
    *ra = nbody_accelerations(da, s, a, a + n, a + 2 * n);
    *rb = nbody_accelerations(db, s, b, b + n, b + 2 * n);
    *worst = rel_errors(a, b, n, median);
    free(a);
}

static void test_dense_matches_simple(void) {
    static const size_t sizes[] = {1, 2, 3, 31, 1001, 4099};
    size_t count = scaled(1000) < 1000 ? 4 : 6;
    static const int blocks[] = {0, 96, 33};
    size_t k;
    int b;
    for (k = 0; k < count; ++k) {
        for (b = 0; b < 3; ++b) {
            nbody_system s = {0};
            nbody_desc dc = {0}, dr = {0};
            double worst, median;
            nbody_result rc, rr;
            nbody_ic_plummer(&s, sizes[k], 7 + k);
            if (k % 2) {           /* unequal masses: the general kernel; equal ones take the UNI form */
                size_t i;
                for (i = 0; i < s.n; ++i) s.m[i] *= (nbody_real)(0.5 + (double)(i % 7) / 6);
            }
            dc.engine = NBODY_ENGINE_CUDA; dc.block_size = blocks[b]; dc.softening = (nbody_real)(b == 1 ? 0.01 : 0);
            dr.engine = NBODY_ENGINE_SIMPLE; dr.softening = dc.softening;
            accel_error(&s, &dc, &dr, &worst, &median, &rc, &rr);
            CHECK(rc == NBODY_OK && rr == NBODY_OK, "dense n=%lu: %s", (unsigned long)sizes[k], nbody_result_string(rc));
            if (sizeof(nbody_real) == sizeof(double))
                CHECK(worst <= 1e-12, "dense n=%lu block %d eps %g: max rel err %g", (unsigned long)sizes[k], blocks[b],
                      (double)dc.softening, worst);
            else
                CHECK(worst <= 1e-4, "dense float n=%lu: max rel err %g", (unsigned long)sizes[k], worst);
            nbody_system_free(&s);
        }
    }
}


/* accelerations of a CUDA engine with a forced kernel (dense: 0 one-sided, 2 symmetric),
   block size and bodies per thread (dense) or walk (tree: 1 alone, 2 warps) */
static int forced_q(const nbody_system *s, nbody_engine engine, double softening, int variant, int block, int rb, int quad,
                    nbody_real *acc) {
    nbody_desc d = {0};
    nbody__engine e;
    nbody__buf y = NULL, f = NULL;
    const nbody_real *src[6];
    int i, ok;
    d.engine = engine; d.theta = (nbody_real)0.5; d.softening = (nbody_real)softening; d.block_size = block; d.quadrupole = quad;
    d = nbody__desc_defaults(&d);
    memset(&e, 0, sizeof e);
    if (nbody__engine_start(&e, &d, s->n, s->m) != NBODY_OK) return 0;
    ok = e.ops->alloc(&e, 6 * s->n, &y) == NBODY_OK && e.ops->alloc(&e, 6 * s->n, &f) == NBODY_OK;
    src[0] = s->x; src[1] = s->y; src[2] = s->z; src[3] = s->vx; src[4] = s->vy; src[5] = s->vz;
    for (i = 0; i < 6 && ok; ++i) ok = e.ops->upload(&e, y, (size_t)i * s->n, src[i], s->n) == NBODY_OK;
    nbody__cuda_bench_config(&e, variant, block, rb);
    ok = ok && e.ops->derivative(&e, y, f) == NBODY_OK && e.ops->download(&e, acc, f, 3 * s->n, 3 * s->n) == NBODY_OK;
    e.ops->release(&e, y); e.ops->release(&e, f);
    nbody__engine_stop(&e);
    return ok;
}
static int forced(const nbody_system *s, nbody_engine engine, double softening, int variant, int block, int rb,
                  nbody_real *acc) {
    return forced_q(s, engine, softening, variant, block, rb, 0, acc);
}
static int tree_walk(const nbody_system *s, int block, int walk, nbody_real *acc) {
    return forced(s, NBODY_ENGINE_CUDA_TREE, 1e-3, 0, block, walk, acc);
}

/* The symmetric dense kernel (each pair once, a round-robin tournament of tiles) against
   SIMPLE: 1e-12 relative in double; one tile, even and odd tile counts, a partial last
   tile, equal and unequal masses, softening 0 and 0.01; and two runs give the same bits. */
static void test_dense_symmetric(void) {
    static const size_t sizes[] = {3, 100, 1001, 4099, 20011};
    static const int conf[][2] = {{32, 1}, {64, 2}, {96, 4}, {64, 8}};
    size_t k;
    int c, eps;
    for (k = 0; k < 5; ++k) {
        size_t n = k == 4 ? scaled(sizes[k]) : sizes[k], n3 = 3 * n, i;
        nbody_system s = {0};
        nbody_real *ref = (nbody_real *)malloc(3 * n3 * sizeof(nbody_real)), *a1 = ref + n3, *a2 = a1 + n3;
        nbody_ic_plummer(&s, n, 21 + k);
        if (k % 2)
            for (i = 0; i < n; ++i) s.m[i] *= (nbody_real)(0.5 + (double)(i % 5) / 4);
        for (eps = 0; eps < 2; ++eps) {
            nbody_desc dr = {0};
            dr.engine = NBODY_ENGINE_SIMPLE; dr.softening = (nbody_real)(eps ? 0.01 : 0);
            CHECK(nbody_accelerations(&dr, &s, ref, ref + n, ref + 2 * n) == NBODY_OK, "symmetric: reference");
            for (c = 0; c < 4; ++c) {
                double worst, median;
                int ok = forced(&s, NBODY_ENGINE_CUDA, dr.softening, 2, conf[c][0], conf[c][1], a1) &&
                         forced(&s, NBODY_ENGINE_CUDA, dr.softening, 2, conf[c][0], conf[c][1], a2);
                CHECK(ok, "symmetric n=%lu B %d R %d: engine failed", (unsigned long)n, conf[c][0], conf[c][1]);
                if (!ok) continue;
                worst = rel_errors(a1, ref, n, &median);
                CHECK(worst <= (sizeof(nbody_real) == sizeof(double) ? 1e-12 : 1e-4),
                      "symmetric n=%lu B %d R %d eps %d: max rel err %g", (unsigned long)n, conf[c][0], conf[c][1], eps, worst);
                CHECK(memcmp(a1, a2, n3 * sizeof(nbody_real)) == 0, "symmetric n=%lu B %d R %d: two runs differ",
                      (unsigned long)n, conf[c][0], conf[c][1]);
            }
        }
        free(ref);
        nbody_system_free(&s);
    }
}

/* the warps' walk adds the same nodes in the same order as each thread alone: the same
   bits, for full and partial warps (blocks of 33 and 96 threads) */
static void test_tree_walks_agree(void) {
    static const int blocks[] = {33, 96, 256};
    nbody_system s = {0};
    size_t n3;
    int b;
    nbody_ic_plummer(&s, scaled(30011), 13);
    n3 = 3 * s.n;
    for (b = 0; b < 3; ++b) {
        nbody_real *a1 = (nbody_real *)malloc(2 * n3 * sizeof(nbody_real)), *a2 = a1 + n3;
        int ok = tree_walk(&s, blocks[b], 1, a1) && tree_walk(&s, blocks[b], 2, a2);
        CHECK(ok, "tree walks, block %d: engine failed", blocks[b]);
        CHECK(!ok || memcmp(a1, a2, n3 * sizeof(nbody_real)) == 0, "tree walks differ, block %d", blocks[b]);
        free(a1);
    }
    /* the group walk: a group is a node of the tree whatever the block size and whichever warp
       takes it from the work counter, so its result depends on neither (blocks of 33 threads
       run as 64; the fourth run repeats the third) */
    {
        nbody_real *g1 = (nbody_real *)malloc(n3 * sizeof(nbody_real)), *g2 = (nbody_real *)malloc(n3 * sizeof(nbody_real));
        for (b = 0; b < 4; ++b) {
            int ok = tree_walk(&s, blocks[b < 3 ? b : 2], 3, b ? g2 : g1);
            CHECK(ok, "group walk, block %d: engine failed", blocks[b < 3 ? b : 2]);
            if (b) CHECK(ok && memcmp(g1, g2, n3 * sizeof(nbody_real)) == 0, "group walk differs between blocks 33 and %d (run %d)",
                         blocks[b < 3 ? b : 2], b);
        }
        /* its stacks in global memory (walk 4): the same nodes in the same order, the same bits */
        for (b = 0; b < 3; ++b) {
            int ok = tree_walk(&s, blocks[b], 4, g2);
            CHECK(ok, "group walk, global stack, block %d: engine failed", blocks[b]);
            CHECK(ok && memcmp(g1, g2, n3 * sizeof(nbody_real)) == 0, "group walk with a global stack differs, block %d", blocks[b]);
        }
        for (b = 0; b < 3; ++b) {   /* and with quadrupoles */
            int ok = forced_q(&s, NBODY_ENGINE_CUDA_TREE, 1e-3, 0, blocks[b], 3, 1, g1) && forced_q(&s, NBODY_ENGINE_CUDA_TREE, 1e-3, 0, blocks[b], 4, 1, g2);
            CHECK(ok, "quadrupole group walks, block %d: engine failed", blocks[b]);
            CHECK(ok && memcmp(g1, g2, n3 * sizeof(nbody_real)) == 0, "quadrupole group walk with a global stack differs, block %d", blocks[b]);
        }
        free(g1); free(g2);
    }
    nbody_system_free(&s);
}

/* the group walk (quadrupoles; leaf buckets) and the monopole walks with every leaf size:
   theta -> 0 is the direct sum (bodies on top of each other included), and at theta 0.5 the
   per-body bounds of tree_accuracy.h hold for each combination */
static void test_tree_group_options(void) {
    static const int leaves[] = {1, 4, 16, 32};
    nbody_system s = {0};
    nbody_desc dt = {0}, dr = {0};
    int q, l;
    nbody_ic_uniform_cube(&s, scaled(3001), 5);
    s.x[4] = s.x[3]; s.y[4] = s.y[3]; s.z[4] = s.z[3];
    dr.engine = NBODY_ENGINE_BLOCK; dr.softening = (nbody_real)0.01;
    for (q = 0; q < 2; ++q)
        for (l = 0; l < 4; ++l) {
            double worst, median;
            nbody_result rt, rr;
            dt.engine = NBODY_ENGINE_CUDA_TREE; dt.softening = dr.softening; dt.theta = (nbody_real)1e-6;
            dt.quadrupole = q; dt.leaf_size = leaves[l];
            accel_error(&s, &dt, &dr, &worst, &median, &rt, &rr);
            CHECK(rt == NBODY_OK && worst <= (sizeof(nbody_real) == sizeof(double) ? 1e-12 : 1e-5),
                  "group walk quadrupole %d leaf %d theta->0: max rel err %g (%s)", q, leaves[l], worst, nbody_result_string(rt));
        }
    nbody_system_free(&s);
    {
        double *ref;
        nbody_ic_plummer(&s, scaled(TREE_ACC_N), TREE_ACC_SEED);
        ref = tree_acc_direct(&s, TREE_ACC_EPS);
        CHECK(ref != NULL, "no memory");
        for (q = 0; ref && q < 2; ++q)
            for (l = 0; l < 4; ++l) {
                nbody_desc d = {0};
                tree_acc_stats st;
                char what[128];
                nbody_result r;
                d.engine = NBODY_ENGINE_CUDA_TREE; d.theta = (nbody_real)0.5; d.softening = (nbody_real)TREE_ACC_EPS;
                d.quadrupole = q; d.leaf_size = leaves[l];
                snprintf(what, sizeof what, "cuda-tree, Plummer %lu theta 0.5 %s leaf %d", (unsigned long)s.n,
                         q ? "quadrupole" : "monopole", leaves[l]);
                r = tree_acc_stats_of(&d, &s, ref, &st);
                if (s.n == TREE_ACC_N) tree_acc_check_bounds(what, r, &st);
                else CHECK(r == NBODY_OK, "%s: %s", what, nbody_result_string(r));
                /* quadrupoles: well inside the monopole's bounds */
                if (s.n == TREE_ACC_N && q) CHECK(st.p99 <= TREE_ACC_P99 / 4, "%s: p99 %.3e", what, st.p99);
            }
        if (ref && s.n == TREE_ACC_N) {   /* the group walk forced on the monopole tree */
            nbody_real *a = (nbody_real *)malloc(3 * s.n * sizeof(nbody_real));
            double *e = (double *)malloc(s.n * sizeof(double));
            size_t i, n = s.n;
            int ok = a && e && forced(&s, NBODY_ENGINE_CUDA_TREE, TREE_ACC_EPS, 0, 128, 3, a);
            CHECK(ok, "group walk, monopole: engine failed");
            for (i = 0; ok && i < n; ++i) {
                double dx = (double)a[i] - ref[i], dy = (double)a[n + i] - ref[n + i], dz = (double)a[2 * n + i] - ref[2 * n + i];
                e[i] = sqrt((dx * dx + dy * dy + dz * dz) / (ref[i] * ref[i] + ref[n + i] * ref[n + i] + ref[2 * n + i] * ref[2 * n + i]));
            }
            if (ok) {
                qsort(e, n, sizeof(double), cmp_double);
                CHECK(e[(n - 1) * 99 / 100] <= TREE_ACC_P99 && e[n - 1] <= TREE_ACC_MAX, "group walk monopole: p99 %.3e worst %.3e",
                      e[(n - 1) * 99 / 100], e[n - 1]);
                printf("  cuda-tree group walk, monopole theta 0.5: median %.3e, p99 %.3e, worst %.3e\n", e[n / 2], e[(n - 1) * 99 / 100],
                       e[n - 1]);
            }
            free(a); free(e);
        }
        free(ref);
        nbody_system_free(&s);
    }
}

static void test_tree_accuracy(void) {
    static const double thetas[] = {0.5, 0.1, 1e-6};
    static const double bounds[] = {1e-2, 5e-4, 1e-12};
    nbody_system s = {0};
    nbody_desc dt = {0}, dr = {0};
    int k;
    nbody_ic_plummer(&s, scaled(20000), 11);
    dt.engine = NBODY_ENGINE_CUDA_TREE; dt.softening = (nbody_real)1e-3;
    dr.engine = NBODY_ENGINE_BLOCK; dr.softening = dt.softening;
    for (k = 0; k < 3; ++k) {
        double worst, median, bound = bounds[k];
        nbody_result rt, rr;
        if (sizeof(nbody_real) != sizeof(double) && bound < 1e-5) bound = 1e-5;
        dt.theta = (nbody_real)thetas[k];
        accel_error(&s, &dt, &dr, &worst, &median, &rt, &rr);
        CHECK(rt == NBODY_OK && rr == NBODY_OK, "tree: %s", nbody_result_string(rt));
        /* the bounds hold for 20000 bodies; the small sanitizer pass checks memory, not them */
        if (s.n == 20000 || thetas[k] < 1e-3)
            CHECK(median <= bound, "tree theta %g: median rel err %g > %g (max %g)", thetas[k], median, bound, worst);
        printf("tree n=%lu theta %g: median rel err %.3g, max %.3g\n", (unsigned long)s.n, thetas[k], median, worst);
    }
    nbody_system_free(&s);
    /* odd and tiny n, coincident bodies: theta -> 0 is the direct sum, the self term excluded */
    {
        static const size_t sizes[] = {1, 2, 3, 5, 1000003 / 1000};
        size_t nsizes = scaled(1000) < 1000 ? 4 : 5;
        size_t i;
        for (i = 0; i < nsizes; ++i) {
            double worst, median;
            nbody_result rt, rr;
            nbody_ic_uniform_cube(&s, sizes[i], 3 + i);
            if (s.n > 4) { s.x[4] = s.x[3]; s.y[4] = s.y[3]; s.z[4] = s.z[3]; }
            dt.theta = (nbody_real)1e-6; dt.softening = (nbody_real)0.01; dr.softening = dt.softening;
            accel_error(&s, &dt, &dr, &worst, &median, &rt, &rr);
            CHECK(rt == NBODY_OK && worst <= (sizeof(nbody_real) == sizeof(double) ? 1e-12 : 1e-5),
                  "tree n=%lu theta->0: max rel err %g (%s)", (unsigned long)s.n, worst, nbody_result_string(rt));
            nbody_system_free(&s);
        }
    }
}

/* accuracy per body (tree_accuracy.h): the CUDA tree's criterion is the CPU tree's formula,
   on its own tree (splits along the Hilbert curve, a bounding radius that may exceed the exact
   one), so its distribution is the CPU's to within a factor (measured on a CPU emulation of the
   build, bench/emulate_gpu_tree.c: median 2.1e-3 against the CPU's 2.5e-3, p99 9.0e-3 against
   9.2e-3; with Morton keys it was 3.6e-3 and 9.7e-3), and it meets the same bounds */
static void test_tree_accuracy_per_body(void) {
    nbody_system s = {0};
    nbody_desc d = {0};
    tree_acc_stats gpu, cpu;
    double *ref;
    nbody_result r;
    nbody_ic_plummer(&s, scaled(TREE_ACC_N), TREE_ACC_SEED);
    ref = tree_acc_direct(&s, TREE_ACC_EPS);
    CHECK(ref != NULL, "no memory");
    if (!ref) { nbody_system_free(&s); return; }
    d.engine = NBODY_ENGINE_TREE; d.theta = (nbody_real)0.5; d.softening = (nbody_real)TREE_ACC_EPS; d.leaf_size = 1;
    r = tree_acc_stats_of(&d, &s, ref, &cpu);
    CHECK(r == NBODY_OK, "cpu tree: %s", nbody_result_string(r));
    d.engine = NBODY_ENGINE_CUDA_TREE; d.leaf_size = 0;
    if (s.n == TREE_ACC_N) {
        tree_acc_check_bounds("cuda-tree, Plummer 12347 theta 0.5 monopole", tree_acc_stats_of(&d, &s, ref, &gpu), &gpu);
        CHECK(gpu.median <= 2 * cpu.median && gpu.median >= 0.5 * cpu.median && gpu.p99 <= 2 * cpu.p99 && gpu.p99 >= 0.5 * cpu.p99,
              "cuda-tree error distribution (median %.3e, p99 %.3e) not within a factor 2 of the cpu tree's (%.3e, %.3e)",
              gpu.median, gpu.p99, cpu.median, cpu.p99);
        printf("  cpu tree (leaf_size 1) on the same case: median %.3e, p99 %.3e, worst %.3e\n", cpu.median, cpu.p99, cpu.max);
        tree_acc_check_wide("cuda-tree, Plummer 12347, monopole", d, &s, ref);
        d.quadrupole = 1;
        tree_acc_check_wide("cuda-tree, Plummer 12347, quadrupole", d, &s, ref);
    } else {
        r = tree_acc_stats_of(&d, &s, ref, &gpu);
        CHECK(r == NBODY_OK, "cuda-tree: %s", nbody_result_string(r));
    }
    free(ref);
    nbody_system_free(&s);
}

/* Every kernel covers all its items from a capped grid (beyond 2^27 bodies the real cap of
   65535 x 32 blocks binds): with the cap forced to 3 blocks, the tree (build and walk, both
   walk kinds), the dense engine (its packing and slice sums), the plain tile kernel and the
   vector operations of a leapfrog run still give every body its force: theta -> 0 equals
   the direct sum, and runs equal those with the normal cap bitwise. */
static void test_grid_cap(void) {
    static const int walks[4] = {1, 2, 3, 4};
    nbody_system s = {0}, a = {0}, b = {0};
    nbody_desc dt = {0}, dr = {0};
    double worst, median;
    nbody_result rt, rr;
    int w;
    size_t n = scaled(5000) < 5000 ? 700 : 5000;
    nbody_ic_plummer(&s, n, 23);
    dt.engine = NBODY_ENGINE_CUDA_TREE; dt.softening = (nbody_real)0.01; dt.theta = (nbody_real)1e-6;
    dr.engine = NBODY_ENGINE_BLOCK; dr.softening = dt.softening;
    nbody__cuda_test_grid_cap(3);
    accel_error(&s, &dt, &dr, &worst, &median, &rt, &rr);
    CHECK(rt == NBODY_OK && worst <= (sizeof(nbody_real) == sizeof(double) ? 1e-12 : 1e-5),
          "grid cap 3: tree theta->0 max rel err %g (%s)", worst, nbody_result_string(rt));
    for (w = 0; w < 4; ++w) {      /* every walk, a given block size (no tuning) */
        nbody__engine e;
        nbody_desc d = dt;
        nbody_real *y = (nbody_real *)calloc(6 * n, sizeof(nbody_real)), *f = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
        nbody_real *yd = NULL, *fd = NULL, *ref = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
        nbody_result r;
        size_t i;
        d = nbody__desc_defaults(&d);
        r = nbody__engine_start(&e, &d, n, s.m);
        CHECK(r == NBODY_OK, "engine start: %s", nbody_result_string(r));
        if (r != NBODY_OK) { free(y); free(f); free(ref); continue; }
        nbody__cuda_bench_config(&e, 0, 64, walks[w]);
        for (i = 0; i < n; ++i) { y[i] = s.x[i]; y[n + i] = s.y[i]; y[2 * n + i] = s.z[i]; }
        r = e.ops->alloc(&e, 6 * n, (nbody__buf *)&yd);
        if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * n, (nbody__buf *)&fd);
        if (r == NBODY_OK) r = e.ops->upload(&e, yd, 0, y, 6 * n);
        if (r == NBODY_OK) r = e.ops->derivative(&e, yd, fd);
        if (r == NBODY_OK) r = e.ops->download(&e, f, fd, 0, 6 * n);
        if (r == NBODY_OK) r = nbody_accelerations(&dr, &s, ref, ref + n, ref + 2 * n);
        worst = r == NBODY_OK ? rel_errors(f + 3 * n, ref, n, &median) : 1;
        CHECK(r == NBODY_OK && worst <= (sizeof(nbody_real) == sizeof(double) ? 1e-12 : 1e-5),
              "grid cap 3, walk %d, 64 threads: max rel err %g (%s)", walks[w], worst, nbody_result_string(r));
        e.ops->release(&e, yd); e.ops->release(&e, fd);
        nbody__engine_stop(&e);
        free(y); free(f); free(ref);
    }
    {   /* the plain tile kernel (dense variant 1) */
        nbody__engine e;
        nbody_desc d = dr;
        nbody_real *y = (nbody_real *)calloc(6 * n, sizeof(nbody_real)), *f = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
        nbody_real *yd = NULL, *fd = NULL, *ref = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
        nbody_result r;
        size_t i;
        d.engine = NBODY_ENGINE_CUDA;
        d = nbody__desc_defaults(&d);
        r = nbody__engine_start(&e, &d, n, s.m);
        CHECK(r == NBODY_OK, "engine start: %s", nbody_result_string(r));
        if (r == NBODY_OK) {
            nbody__cuda_bench_config(&e, 1, 128, 1);
            for (i = 0; i < n; ++i) { y[i] = s.x[i]; y[n + i] = s.y[i]; y[2 * n + i] = s.z[i]; }
            r = e.ops->alloc(&e, 6 * n, (nbody__buf *)&yd);
            if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * n, (nbody__buf *)&fd);
            if (r == NBODY_OK) r = e.ops->upload(&e, yd, 0, y, 6 * n);
            if (r == NBODY_OK) r = e.ops->derivative(&e, yd, fd);
            if (r == NBODY_OK) r = e.ops->download(&e, f, fd, 0, 6 * n);
            if (r == NBODY_OK) r = nbody_accelerations(&dr, &s, ref, ref + n, ref + 2 * n);
            worst = r == NBODY_OK ? rel_errors(f + 3 * n, ref, n, &median) : 1;
            CHECK(r == NBODY_OK && worst <= (sizeof(nbody_real) == sizeof(double) ? 1e-12 : 1e-5),
                  "grid cap 3, plain tile kernel: max rel err %g (%s)", worst, nbody_result_string(r));
            e.ops->release(&e, yd); e.ops->release(&e, fd);
            nbody__engine_stop(&e);
        }
        free(y); free(f); free(ref);
    }
    {   /* whole runs (lincomb, reductions, packing): the same bits as with the normal cap */
        nbody_desc d = {0};
        nbody_sim *sim = NULL;
        int k;
        nbody_system_alloc(&a, n); nbody_system_alloc(&b, n);
        for (k = 0; k < 2; ++k) {
            d.engine = k ? NBODY_ENGINE_CUDA : NBODY_ENGINE_CUDA_TREE; d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-8;
            d.softening = (nbody_real)0.01; d.dt = (nbody_real)1e-3; d.theta = (nbody_real)0.5; d.block_size = 128;
            nbody__cuda_test_grid_cap(3);
            rt = nbody_create(&sim, &d, &s);
            if (rt == NBODY_OK) { rt = nbody_advance(sim, (nbody_real)0.05); if (rt == NBODY_OK) rt = nbody_get_state(sim, &a); nbody_destroy(sim); }
            nbody__cuda_test_grid_cap(0);
            rr = nbody_create(&sim, &d, &s);
            if (rr == NBODY_OK) { rr = nbody_advance(sim, (nbody_real)0.05); if (rr == NBODY_OK) rr = nbody_get_state(sim, &b); nbody_destroy(sim); }
            CHECK(rt == NBODY_OK && rr == NBODY_OK && memcmp(a.x, b.x, n * sizeof(nbody_real)) == 0 &&
                  memcmp(a.vz, b.vz, n * sizeof(nbody_real)) == 0,
                  "%s RKDP run with grid cap 3 differs from the normal cap (%s, %s)", k ? "cuda" : "cuda-tree",
                  nbody_result_string(rt), nbody_result_string(rr));
        }
    }
    nbody__cuda_test_grid_cap(0);
    nbody_system_free(&s); nbody_system_free(&a); nbody_system_free(&b);
}

/* desc fields the CUDA tree cannot honour are refused at nbody_create, with an error line */
static int error_lines;
static void count_errors(nbody_log_level level, const char *msg, void *user) {
    (void)msg; (void)user;
    if (level == NBODY_LOG_ERROR) error_lines++;
}
static void test_tree_refusals(void) {
    nbody_system s = {0};
    int k;
    nbody_ic_plummer(&s, 100, 3);
    for (k = 0; k < 7; ++k) {
        nbody_desc d = {0};
        nbody_sim *sim = NULL;
        nbody_result r;
        int refuse = k < 3;
        d.engine = NBODY_ENGINE_CUDA_TREE; d.log.func = count_errors;
        if (k == 0) d.leaf_size = 33;                 /* the group walk's buckets hold at most 32 */
        if (k == 5) d.quadrupole = 1;
        if (k == 6) d.leaf_size = 32;
        if (k == 1) d.traversal = NBODY_TRAVERSAL_STACK;
        if (k == 2) d.visit_order = NBODY_ORDER_BODY;
        if (k == 3) d.traversal = NBODY_TRAVERSAL_STACKLESS;
        if (k == 4) d.visit_order = NBODY_ORDER_LEAF;
        error_lines = 0;
        r = nbody_create(&sim, &d, &s);
        CHECK(refuse ? r == NBODY_ERR_UNAVAILABLE && error_lines > 0 && sim == NULL : r == NBODY_OK,
              "cuda-tree desc case %d: %s (%d error lines)", k, nbody_result_string(r), error_lines);
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
}

/* relative energy change of a run, and the final state */
static nbody_result run(const nbody_desc *d, const nbody_system *ic, double t_end, double *dE, nbody_system *out) {
    nbody_sim *sim = NULL;
    nbody_invariants e0, e1;
    nbody_result r = nbody_create(&sim, d, ic);
    if (r != NBODY_OK) return r;
    nbody_measure(ic, 1, d->softening, &e0);
    r = nbody_advance(sim, (nbody_real)t_end);
    if (r == NBODY_OK) r = nbody_get_state(sim, out);
    nbody_destroy(sim);
    if (r != NBODY_OK) return r;
    nbody_measure(out, 1, d->softening, &e1);
    *dE = fabs((double)((e1.energy - e0.energy) / e0.energy));
    return NBODY_OK;
}

static void test_whole_runs(void) {
    static const nbody_method methods[] = {NBODY_LEAPFROG, NBODY_RK4, NBODY_RKDP, NBODY_LEAPFROG};
    /* rkdp's tolerance: float cannot ask for 1e-9 (nbody_desc_check refuses it) */
    static const double tols[] = {0, 0, sizeof(nbody_real) == sizeof(double) ? 1e-9 : 1e-5, 0};
    nbody_system ic = {0}, a = {0}, b = {0};
    int k;
    nbody_ic_plummer(&ic, scaled(513) < 513 ? 65 : 513, 5);
    nbody_system_alloc(&a, ic.n);
    nbody_system_alloc(&b, ic.n);
    for (k = 0; k < 4; ++k) {
        nbody_desc dg = {0}, dc;
        double eg = 0, ec = 0, dx = 0;
        nbody_result rg, rc;
        size_t i;
        dg.engine = NBODY_ENGINE_CUDA; dg.method = methods[k]; dg.softening = (nbody_real)0.05;
        dg.dt = (nbody_real)(1.0 / 128); dg.tolerance = (nbody_real)tols[k]; dg.compensated = k == 3;
        dc = dg; dc.engine = NBODY_ENGINE_BLOCK;
        rg = run(&dg, &ic, 0.5, &eg, &a);
        rc = run(&dc, &ic, 0.5, &ec, &b);
        CHECK(rg == NBODY_OK, "%s on CUDA: %s", nbody_method_name(methods[k]), nbody_result_string(rg));
        CHECK(rc == NBODY_OK, "%s on CPU: %s", nbody_method_name(methods[k]), nbody_result_string(rc));
        if (rg != NBODY_OK || rc != NBODY_OK) continue;
        for (i = 0; i < ic.n; ++i) {
            double d = fabs((double)(a.x[i] - b.x[i])) + fabs((double)(a.y[i] - b.y[i])) + fabs((double)(a.z[i] - b.z[i]));
            if (d > dx) dx = d;
        }
        printf("%s%s: |dE/E| cuda %.3g cpu %.3g, max position difference %.3g\n", nbody_method_name(methods[k]),
               k == 3 ? " compensated" : "", eg, ec, dx);
        CHECK(eg <= 1.5 * ec + (sizeof(nbody_real) == sizeof(double) ? 1e-13 : 1e-6),
              "%s: energy error on CUDA %g vs CPU %g", nbody_method_name(methods[k]), eg, ec);
        CHECK(dx <= (sizeof(nbody_real) == sizeof(double) ? 1e-9 : 1e-3), "%s: states differ by %g",
              nbody_method_name(methods[k]), dx);
    }
    /* the tree engine in a whole run: energy close to the direct engine's */
    {
        nbody_desc dg = {0};
        double eg = 0;
        nbody_result rg;
        dg.engine = NBODY_ENGINE_CUDA_TREE; dg.method = NBODY_LEAPFROG; dg.softening = (nbody_real)0.05;
        dg.dt = (nbody_real)(1.0 / 128); dg.theta = (nbody_real)0.3;
        rg = run(&dg, &ic, 0.5, &eg, &a);
        CHECK(rg == NBODY_OK && eg <= 1e-3, "tree leapfrog: %s, |dE/E| %g", nbody_result_string(rg), eg);
        printf("tree leapfrog theta 0.3: |dE/E| %.3g\n", eg);
    }
    nbody_system_free(&ic); nbody_system_free(&a); nbody_system_free(&b);
}

/* The tree leapfrog's block steps (NBODY_STEPPING_BLOCK): the active list's forces are the
   bits of the engine's own per-body walk of all bodies (test particles among them); a whole
   run on a softened Plummer sphere is as close to nearly exact forces (TREE at theta 0.1) as
   the CPU tree's block run is, with nearly the same body steps */
static void print_error(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_ERROR) printf("log: %s\n", msg);
}
static nbody_result block_run(nbody_engine engine, double theta, const nbody_system *ic, double t_end, nbody_system *out, nbody_stats *st) {
    nbody_desc d = {0};
    nbody_sim *sim = NULL;
    nbody_result r;
    memset(st, 0, sizeof *st);
    d.engine = engine; d.method = NBODY_LEAPFROG; d.stepping = NBODY_STEPPING_BLOCK; d.softening = (nbody_real)0.05;
    d.theta = (nbody_real)theta; d.log.func = print_error;
    r = nbody_create(&sim, &d, ic);
    if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)t_end);
    if (r == NBODY_OK) r = nbody_get_state(sim, out);
    if (sim) *st = nbody_get_stats(sim);
    if (r != NBODY_OK) printf("%s block run: %s at t = %g\n", nbody_engine_name(engine), nbody_result_string(r), (double)st->t);
    nbody_destroy(sim);
    return r;
}
/* the derivative's walk: each body's own (the warps' union), as the block steps walk */
static void warp_walk(nbody__engine *e) { nbody__cuda_bench_config(e, 0, 256, 2); }
static void test_tree_block_steps(void) {
    nbody_system ic = {0}, a = {0}, b = {0}, x = {0};
    size_t n = scaled(3000) < 3000 ? 300 : 3000;
    nbody_stats sa, sb, sx;
    nbody_result ra, rb, rx;
    nbody__cuda_kdk_limiter(1);        /* check_kdk_limiter: the neighbour levels gathered on the device */
    check_tree_active(NBODY_ENGINE_CUDA_TREE, "cuda_tree", warp_walk, 0, 1);
    nbody__cuda_kdk_limiter(0);
    nbody_ic_plummer(&ic, n / 3, 6);
    nbody_system_alloc(&a, ic.n); nbody_system_alloc(&b, ic.n); nbody_system_alloc(&x, ic.n);
    rb = block_run(NBODY_ENGINE_CUDA_TREE, 0.3, &ic, 0.25, &b, &sb);
    ra = block_run(NBODY_ENGINE_TREE, 0.3, &ic, 0.25, &a, &sa);
    rx = block_run(NBODY_ENGINE_TREE, 0.1, &ic, 0.25, &x, &sx);
    CHECK(rb == NBODY_OK && ra == NBODY_OK && rx == NBODY_OK, "cuda_tree and tree block runs: %s, %s, %s", nbody_result_string(rb),
          nbody_result_string(ra), nbody_result_string(rx));
    printf("block steps against theta 0.1 at t = 0.25 (rms): tree %.3g, cuda_tree %.3g; body steps %llu, %llu\n",
           check_state_rms(&a, &x), check_state_rms(&b, &x), sa.body_steps, sb.body_steps);
    CHECK(check_state_rms(&b, &x) < 1.5 * check_state_rms(&a, &x) + (sizeof(nbody_real) == sizeof(double) ? 0 : 1e-5),
          "cuda_tree block run against nearly exact forces: %.3g (tree %.3g)", check_state_rms(&b, &x), check_state_rms(&a, &x));
    CHECK(sb.steps > 0 && (double)sb.body_steps > 0.9 * (double)sa.body_steps && (double)sb.body_steps < 1.1 * (double)sa.body_steps,
          "body steps: cuda_tree %llu, tree %llu", sb.body_steps, sa.body_steps);
    nbody_system_free(&ic); nbody_system_free(&a); nbody_system_free(&b); nbody_system_free(&x);
}

/* nbody_advance with nothing watching its steps, where CUDA_TREE takes runs of block steps on
   the device (ops.kdk_run), against the same advance with a step hook (every step scheduled by
   the host): the same bits, steps and stats, landing on times between block times; a run
   called alone takes steps; checkpoints written after runs restart bitwise; a step refused
   within a run (dt_min) is refused as the host's path refuses it. Again with the neighbour
   limiter on the device (nbody__cuda_kdk_limiter): the same, with the same levels raised on
   both paths (kdk.limited), none without it. All with the step bound from the force's change
   on (nbody__kdk_jerk_from 0): the device's levels read a0 from kick, the host's steps its copy. */
static int kdk_watch(nbody_sim *sim, void *user_data) { (void)sim; (void)user_data; return 0; }
static int same_run(nbody_sim *sa, nbody_sim *sb, nbody_system *a, nbody_system *b) {
    nbody_stats x = nbody_get_stats(sa), y = nbody_get_stats(sb);
    int got = nbody_get_state(sa, a) == NBODY_OK && nbody_get_state(sb, b) == NBODY_OK, same = got && check_same_state(a, b);
    if (same && x.t == y.t && x.steps == y.steps && x.body_steps == y.body_steps && x.force_evals == y.force_evals && x.dt == y.dt) return 1;
    printf("unwatched against watched: state %s (largest difference %.3g), t %.17g / %.17g, steps %llu / %llu, body steps %llu / %llu, "
           "force evaluations %llu / %llu, dt %.17g / %.17g\n", same ? "the same" : "differs", got ? check_state_diff(a, b) : -1.0, (double)x.t,
           (double)y.t, x.steps, y.steps, x.body_steps, y.body_steps, x.force_evals, y.force_evals, (double)x.dt, (double)y.dt);
    return 0;
}
static void tree_block_run(int loop, int limiter);
static void test_tree_block_run(void) {   /* runs that leave the steps of every body to the host, then the default */
    size_t jerk_from = nbody__kdk_jerk_from;
    nbody__kdk_jerk_from = 0;
    nbody__cuda_kdk_config(0, 0, 1, 0, 1, 1, 0, 1, 1);
    tree_block_run(1, 0);
    nbody__cuda_kdk_config(0, 0, 1, 0, 1, 1, 0, 1, -1);
    tree_block_run(2, 0);
    nbody__cuda_kdk_limiter(1);
    tree_block_run(2, 1);
    nbody__cuda_kdk_limiter(0);
    nbody__kdk_jerk_from = jerk_from;
}
static void tree_block_run(int loop, int limiter) {
    static const double t[3] = {0.3, 0.55, 0.75};
    char path[64];
    nbody_system s0 = {0}, a = {0}, b = {0}, c = {0};
    nbody_desc d = {0}, w;
    nbody_sim *sa = NULL, *sb = NULL, *sc = NULL;
    size_t n = scaled(4000) < 4000 ? 400 : 4000;
    unsigned long long steps0 = 0;
    nbody_result ra = NBODY_OK, rb = NBODY_OK;
    unsigned long long limited = 0;
    int i, k, mid, ok;
    snprintf(path, sizeof path, "build/cuda_engines_kdk_%d.ckp", (int)sizeof(nbody_real));
    nbody_ic_collision(&s0, n, (nbody_real)0.3, 3, 2);
    nbody_system_alloc(&a, n); nbody_system_alloc(&b, n); nbody_system_alloc(&c, n);
    d.engine = NBODY_ENGINE_CUDA_TREE; d.method = NBODY_LEAPFROG; d.stepping = NBODY_STEPPING_BLOCK; d.softening = (nbody_real)0.01;
    d.theta = (nbody_real)0.5; d.timestep_eta = (nbody_real)0.025; d.log.func = print_error;
    w = d; w.after_step = kdk_watch;
    ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_create(&sb, &w, &s0) == NBODY_OK;
    for (i = 0; i < 3 && ok; ++i) {
        ok = nbody_advance(sa, (nbody_real)t[i]) == NBODY_OK && nbody_advance(sb, (nbody_real)t[i]) == NBODY_OK && same_run(sa, sb, &a, &b);
        if (i == 0) nbody_system_copy(&c, &b);
    }
    CHECK(ok, "cuda_tree block steps (kdk loop %d, limiter %d), %lu bodies to t = 0.3, 0.55, 0.75: unwatched (runs on the device) as "
          "watched, bit for bit (%llu steps, %llu body steps)", loop, limiter, (unsigned long)n, nbody_get_stats(sb).steps,
          nbody_get_stats(sb).body_steps);
    if (ok) limited = sb->kdk.limited;
    CHECK(ok && sa->kdk.limited == limited && (limiter ? limited > 0 : limited == 0), "cuda_tree (kdk loop %d, limiter %d): levels "
          "raised by the limiter %llu unwatched, %llu watched", loop, limiter, ok ? sa->kdk.limited : 0ULL, limited);
    nbody_destroy(sa); nbody_destroy(sb); sa = sb = NULL;
    /* the run alone, after three steps of the host: it takes steps, and the advance after it is the watched one's */
    ok = nbody_create(&sc, &w, &s0) == NBODY_OK;
    for (k = 0; k < 3 && ok; ++k) ok = nbody_step(sc) == NBODY_OK;
    if (ok) {
        steps0 = nbody_get_stats(sc).steps;
        sc->kdk.run = 1;
        ok = nbody__kdk_run_engine(sc, (nbody_real)0.3) == NBODY_OK;
        sc->kdk.run = 0;
    }
    CHECK(ok && nbody_get_stats(sc).steps >= steps0 + 10, "cuda_tree (kdk loop %d, limiter %d): a run on the device took %llu steps after the "
          "host's %llu", loop, limiter, ok ? nbody_get_stats(sc).steps - steps0 : 0ULL, steps0);
    ok = ok && nbody_advance(sc, (nbody_real)t[0]) == NBODY_OK && nbody_get_state(sc, &a) == NBODY_OK;
    CHECK(ok && check_same_state(&a, &c), "cuda_tree (kdk loop %d, limiter %d): the state after a run on the device is the watched run's at "
          "t = 0.3", loop, limiter);
    nbody_destroy(sc);
    /* restarts from checkpoints written after runs (at t = 0.3, and 7 host steps later) */
    for (mid = 0; mid < 2; ++mid) {
        ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_advance(sa, (nbody_real)t[0]) == NBODY_OK;
        for (k = 0; k < 7 * mid && ok; ++k) ok = nbody_step(sa) == NBODY_OK;
        ok = ok && nbody_checkpoint_save(sa, path) == NBODY_OK && nbody_checkpoint_load(&sb, &d, path) == NBODY_OK;
        ok = ok && nbody_advance(sa, (nbody_real)t[2]) == NBODY_OK && nbody_advance(sb, (nbody_real)t[2]) == NBODY_OK;
        ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
        CHECK(ok && check_same_state(&a, &b) && nbody_get_stats(sa).steps == nbody_get_stats(sb).steps,
              "cuda_tree (kdk loop %d, limiter %d): restart from a checkpoint written after runs on the device %s continues bitwise", loop,
              limiter, mid ? "(then 7 host steps)" : "(at t = 0.3)");
        nbody_destroy(sa); nbody_destroy(sb); sa = sb = NULL;
    }
    remove(path);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b); nbody_system_free(&c);
    /* dt_min: a binary of e = 0.99 from its apocentre among 30 light bodies far out, whose steps
       fall below dt_min = dt_max / 64 before the pericentre (t = pi): the step refused within a
       run is refused as the watched run refuses it, both left where the step before it was */
    nbody_system_alloc(&s0, 32); nbody_system_alloc(&a, 32); nbody_system_alloc(&b, 32);
    eccentric_binary_among_light_bodies(&s0);   /* hermite_engine.h */
    d.dt_min = w.dt_min = (nbody_real)(0.0625 / 64);
    ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_create(&sb, &w, &s0) == NBODY_OK;
    if (ok) {
        ra = nbody_advance(sa, (nbody_real)4);
        rb = nbody_advance(sb, (nbody_real)4);
    }
    CHECK(ok && ra == rb && ra == NBODY_ERR_STEP_TOO_SMALL && same_run(sa, sb, &a, &b) && nbody_get_stats(sa).t > 1,
          "cuda_tree (kdk loop %d, limiter %d): dt_min refused at t = %g unwatched as watched (%s, %s; %llu steps)", loop, limiter,
          ok ? (double)nbody_get_stats(sa).t : 0.0,
          nbody_result_string(ra), nbody_result_string(rb), ok ? nbody_get_stats(sa).steps : 0ULL);
    nbody_destroy(sa); nbody_destroy(sb);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* the tuner says once, at INFO, which dense kernel and configuration it kept */
static int tuned_lines;
static char tuned_line[512];
static void tuned_log(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_INFO && strstr(msg, "nbody cuda: tuned: ")) {
        ++tuned_lines;
        strncpy(tuned_line, msg, sizeof tuned_line - 1);
    }
}
static void test_tuning_logged(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d = {0};
    int k;
    nbody_ic_plummer(&s, scaled(20011), 5);
    d.engine = NBODY_ENGINE_CUDA; d.softening = (nbody_real)1e-3; d.log.func = tuned_log;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "tuning: create");
    for (k = 0; k < 3 && sim; ++k) CHECK(nbody_step(sim) == NBODY_OK, "tuning: step %d", k);
    CHECK(tuned_lines == 1, "tuning: %d INFO lines, expected 1", tuned_lines);
    CHECK(strstr(tuned_line, "symmetric") || strstr(tuned_line, "one-sided"), "tuning line: %s", tuned_line);
    printf("%s\n", tuned_line);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* out of device memory (NBODY_ERR_OUT_OF_MEMORY) and a launch that cannot be made, and the
   engine goes on working after each. Not in the compute-sanitizer pass (NBODY_TEST_SMALL=1),
   which counts the provoked failures as API errors. */
static void test_out_of_memory(void) {
    nbody_system s = {0};
    nbody_desc d = {0};
    nbody__engine e;
    nbody__buf huge = NULL, y = NULL, f = NULL;
    nbody_result r;
    if (scaled(1000) < 1000) return;
    nbody_ic_plummer(&s, 1000, 3);
    d.engine = NBODY_ENGINE_CUDA;
    d = nbody__desc_defaults(&d);
    memset(&e, 0, sizeof e);
    CHECK(nbody__engine_start(&e, &d, s.n, s.m) == NBODY_OK, "out of memory: engine start");
    if (!e.ops) { nbody_system_free(&s); return; }
    r = e.ops->alloc(&e, (size_t)1 << 42, &huge);                 /* 32 TiB of doubles */
    CHECK(r == NBODY_ERR_OUT_OF_MEMORY && huge == NULL, "2^42 reals: %s", nbody_result_string(r));
    r = e.ops->alloc(&e, 6 * s.n, &y);
    if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * s.n, &f);
    if (r == NBODY_OK) r = e.ops->upload(&e, y, 0, s.x, s.n);
    if (r == NBODY_OK) r = e.ops->derivative(&e, y, f);
    CHECK(r == NBODY_OK, "after out of memory the engine still works: %s", nbody_result_string(r));
    /* a launch that cannot be made (the symmetric kernel with 1024 threads x 8 bodies wants
       3 MB of shared memory): an error, and the engine works again with a possible one */
    nbody__cuda_bench_config(&e, 2, 1024, 8);
    r = e.ops->derivative(&e, y, f);
    /* a device limit, never blamed on the caller: the one-sided kernel instead, or UNAVAILABLE */
    CHECK(r == NBODY_OK || r == NBODY_ERR_DEVICE || r == NBODY_ERR_UNAVAILABLE, "impossible launch: %s", nbody_result_string(r));
    nbody__cuda_bench_config(&e, 0, 128, 4);
    r = e.ops->derivative(&e, y, f);
    CHECK(r == NBODY_OK, "after a failed launch the engine still works: %s", nbody_result_string(r));
    e.ops->release(&e, y); e.ops->release(&e, f);
    nbody__engine_stop(&e);
    nbody_system_free(&s);
}

/* A block size the kernels cannot take on this device is refused by nbody_create; one that
   nbody_create accepts gives a working first step (a limit never surfaces from a later step). */
static void test_block_size_limits(void) {
    static const int blocks[] = {1024, 768, 640, 512};
    static const nbody_engine engines[] = {NBODY_ENGINE_CUDA, NBODY_ENGINE_CUDA_TREE};
    nbody_system s = {0};
    size_t b, k;
    nbody_ic_plummer(&s, 3000, 5);
    for (k = 0; k < 2; ++k)
        for (b = 0; b < sizeof blocks / sizeof blocks[0]; ++b) {
            nbody_desc d = {0};
            nbody_sim *sim = NULL;
            nbody_result r;
            d.engine = engines[k]; d.block_size = blocks[b]; d.softening = (nbody_real)0.01;
            r = nbody_create(&sim, &d, &s);
            CHECK(r == NBODY_OK || (r == NBODY_ERR_INVALID_ARGUMENT && sim == NULL), "%s block %d: create %s",
                  nbody_engine_name(engines[k]), blocks[b], nbody_result_string(r));
            if (r != NBODY_OK) continue;
            r = nbody_step(sim);
            CHECK(r == NBODY_OK, "%s block %d accepted at create: step %s", nbody_engine_name(engines[k]), blocks[b],
                  nbody_result_string(r));
            nbody_destroy(sim);
        }
    nbody_system_free(&s);
}

/* NBODY_HERMITE on CUDA (hermite_engine.h: against BLOCK, 16384 sources with few active,
   energy, orders, restarts, test particles); the tree engine refuses it */
static void test_hermite(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d = hermite_desc(NBODY_ENGINE_CUDA_TREE, 4, NBODY_STEPPING_DEFAULT, 0);
    check_hermite_engine(NBODY_ENGINE_CUDA, scaled(16384));
    nbody_ic_plummer(&s, 16, 1);
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_UNAVAILABLE && !sim, "hermite on cuda-tree refused");
    nbody_system_free(&s);
}

static void test_errors(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d = {0};
    nbody_result r;
    nbody_ic_plummer(&s, 100, 1);
    d.engine = NBODY_ENGINE_CUDA; d.device = 99;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_UNAVAILABLE && sim == NULL, "device 99: %s", nbody_result_string(r));
    d.engine = NBODY_ENGINE_CUDA_TREE;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_UNAVAILABLE && sim == NULL, "tree device 99: %s", nbody_result_string(r));
    /* two bodies at one place without softening: NaN, reported, the last good state kept
       (the dense engine; the tree never opens a leaf, so it skips coincident bodies) */
    d.device = 0; d.softening = 0; d.engine = NBODY_ENGINE_CUDA;
    s.x[1] = s.x[0]; s.y[1] = s.y[0]; s.z[1] = s.z[0];
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_OK, "create: %s", nbody_result_string(r));
    if (r == NBODY_OK) {
        nbody_system got = {0};
        r = nbody_step(sim);
        CHECK(r == NBODY_ERR_NOT_FINITE, "coincident bodies: %s", nbody_result_string(r));
        nbody_system_alloc(&got, s.n);
        CHECK(nbody_get_state(sim, &got) == NBODY_OK && got.x[0] == s.x[0] && got.t == 0, "state kept");
        nbody_system_free(&got);
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
}

int main(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d = {0};
    nbody_ic_plummer(&s, 8, 1);
    d.engine = NBODY_ENGINE_CUDA;
    if (nbody_create(&sim, &d, &s) != NBODY_OK) {
        check_skip("NBODY_REQUIRE_CUDA", "no CUDA device");
        nbody_system_free(&s);
        return check_finish();
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
    if (getenv("NBODY_TEST_ONLY") && !strcmp(getenv("NBODY_TEST_ONLY"), "hermite")) {   /* a quick pass after a Hermite change */
        test_hermite();
        return check_finish();
    }
    if (getenv("NBODY_TEST_ONLY") && !strcmp(getenv("NBODY_TEST_ONLY"), "tree")) {   /* a quick pass after a tree change */
        test_tree_accuracy();
        test_tree_accuracy_per_body();
        test_tree_refusals();
        test_tree_walks_agree();
        test_tree_group_options();
        test_tree_block_steps();
        test_tree_block_run();
        return check_finish();
    }
    test_dense_matches_simple();
    test_dense_symmetric();
    test_tree_accuracy();
    test_tree_accuracy_per_body();
    test_grid_cap();
    test_tree_refusals();
    test_tree_walks_agree();
    test_tree_group_options();
    test_whole_runs();
    test_hermite();
    test_tree_block_steps();
    test_tree_block_run();
    if (scaled(1000) == 1000)      /* not in the sanitizer pass: the same kernels as above, 40 runs */
        check_every_method(NBODY_ENGINE_CUDA);
    test_tuning_logged();
    test_out_of_memory();
    test_block_size_limits();
    test_errors();
    return check_finish();
}
