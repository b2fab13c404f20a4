/* bench_tree.c - the kd-tree engine against the direct BLOCK engine: time per force
   evaluation (tree build included, and the build alone) against N and theta, the article's
   Table 4 (body/leaf order x stack/stackless), the split-axis rule, quadrupole moments, and
   the relative energy change after 100 leapfrog steps (the article's Figure 10), the leaf
   size (bucket) sweep, and the crossover N where the tree overtakes BLOCK.
   Usage: bench_tree [log2 N max (20)] [log2 N max for BLOCK (18)]; larger BLOCK figures are
   extrapolated as N^2 from the largest measured and marked so. BLOCK is timed once per N
   from 2^15 (its time is deterministic to a few per cent), the tree best of 3. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>

#if !NBODY__OPENMP
int main(void) { printf("bench_tree needs OpenMP (timing uses omp_get_wtime)\n"); return 0; }
#else
typedef struct bench { nbody__engine e; nbody_real *y, *f; size_t n; } bench;

static int bench_open(bench *b, const nbody_system *s, nbody_desc d) {
    size_t i, n = s->n;
    d = nbody__desc_defaults(&d);
    if (nbody__engine_start(&b->e, &d, n, s->m) != NBODY_OK) return 0;
    b->n = n;
    b->y = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
    b->f = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
    for (i = 0; i < n; ++i) { b->y[i] = s->x[i]; b->y[n + i] = s->y[i]; b->y[2 * n + i] = s->z[i]; }
    return 1;
}
static void bench_close(bench *b) { nbody__engine_stop(&b->e); free(b->y); free(b->f); }

/* best of `reps` seconds per force evaluation (after one warm-up when reps > 1) */
static double time_eval(bench *b, int reps) {
    double best = 1e30;
    int k;
    if (reps > 1) b->e.ops->derivative(&b->e, b->y, b->f);
    for (k = 0; k < reps; ++k) {
        double t0 = omp_get_wtime(), t;
        b->e.ops->derivative(&b->e, b->y, b->f);
        t = omp_get_wtime() - t0;
        if (t < best) best = t;
    }
    return best;
}

/* best of `reps` seconds per tree build alone (the shared build and the CPU walk records) */
static double time_build(bench *b, int reps) {
    nbody__kdtree *t = (nbody__kdtree *)((nbody__cpu *)b->e.impl)->tree;
    size_t n = b->n;
    double best = 1e30;
    int k;
    for (k = 0; k < reps; ++k) {
        double t0 = omp_get_wtime(), dt;
        nbody__kdtree_build(t, &b->e.desc, b->y, b->y + n, b->y + 2 * n, ((nbody__cpu *)b->e.impl)->m, n);
        nbody__tree_prepare(t, &b->e.desc, (size_t)b->e.desc.leaf_size);
        dt = omp_get_wtime() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

/* median relative error of the tree's accelerations over a sample of bodies, against their
   direct sums in double */
static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double sampled_error(const nbody_system *s, const nbody_real *f, nbody_real eps) {
    enum { SAMPLES = 301 };
    double e[SAMPLES];
    size_t n = s->n, k;
    for (k = 0; k < SAMPLES; ++k) {
        size_t i = (k * 2654435761u) % n, j;
        double a[3] = {0, 0, 0}, d[3], r;
        for (j = 0; j < n; ++j) {
            double dx = (double)(s->x[j] - s->x[i]), dy = (double)(s->y[j] - s->y[i]), dz = (double)(s->z[j] - s->z[i]);
            double r2 = dx * dx + dy * dy + dz * dz + (double)(eps * eps), w;
            if (j == i) continue;
            w = (double)s->m[j] / (r2 * sqrt(r2));
            a[0] += w * dx; a[1] += w * dy; a[2] += w * dz;
        }
        d[0] = (double)f[3 * n + i] - a[0]; d[1] = (double)f[4 * n + i] - a[1]; d[2] = (double)f[5 * n + i] - a[2];
        r = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
        e[k] = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) / r;
    }
    qsort(e, SAMPLES, sizeof(double), cmp_double);
    return e[SAMPLES / 2];
}

static nbody_desc tree_desc(double theta, nbody_traversal tr, nbody_order ord, int quad) {
    nbody_desc d;
    memset(&d, 0, sizeof d);
    d.engine = NBODY_ENGINE_TREE; d.theta = (nbody_real)theta; d.traversal = tr; d.visit_order = ord;
    d.quadrupole = quad; d.softening = (nbody_real)1e-3;
    return d;
}

/* load average, so that each table says how busy the machine was */
static void print_load(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    char line[128];
    if (f && fgets(line, sizeof line, f)) printf("(load average: %.*s)\n\n", (int)strcspn(line, "\n"), line);
    if (f) fclose(f);
}

static double energy_change(size_t n, nbody_engine engine, double theta) {
    nbody_system s = NBODY__ZERO_INIT;
    nbody_desc d;
    nbody_sim *sim;
    nbody_invariants e0, e1;
    int k;
    memset(&d, 0, sizeof d);
    d.engine = engine; d.theta = (nbody_real)theta; d.softening = (nbody_real)0.01; d.dt = (nbody_real)1e-2;
    nbody_ic_collision(&s, n, (nbody_real)0.3, 3, 1);
    nbody_measure(&s, 1, d.softening, &e0);
    if (nbody_create(&sim, &d, &s) != NBODY_OK) return -1;
    for (k = 0; k < 100; ++k) nbody_step(sim);
    nbody_get_state(sim, &s);
    nbody_destroy(sim);
    nbody_measure(&s, 1, d.softening, &e1);
    nbody_system_free(&s);
    return fabs((double)((e1.energy - e0.energy) / e0.energy));
}

int main(int argc, char **argv) {
    int maxlog = argc > 1 ? atoi(argv[1]) : 20, blocklog = argc > 2 ? atoi(argv[2]) : 18, lg, v, k, crossover = 0;
    const double thetas[] = {0.3, 0.5, 0.7};
    double block_last = 0, block_n = 0;
    nbody_system s = NBODY__ZERO_INIT;
    bench b;
    printf("# bench_tree: %s, %d threads, sizeof(nbody_real) = %d, Plummer sphere, softening 1e-3\n\n",
           nbody_version_string(), omp_get_max_threads(), (int)sizeof(nbody_real));

    memset(&b, 0, sizeof b);
    printf("## Tree (stackless, leaf order, theta 0.5, default leaf size %d) against BLOCK\n\n",
           nbody__desc_defaults(&b.e.desc).leaf_size);
    print_load();
    printf("| N | build ms | tree eval ms (build incl.) | tree interactions-equivalent/s | BLOCK eval ms | speed-up |\n|---|---|---|---|---|---|\n");
    for (lg = 8; lg <= maxlog; ++lg) {
        size_t n = (size_t)1 << lg;
        double tb, te, tblock;
        int measured = lg <= blocklog;
        nbody_desc d = tree_desc(0.5, NBODY_TRAVERSAL_STACKLESS, NBODY_ORDER_LEAF, 0);
        nbody_ic_plummer(&s, n, 1);
        if (!bench_open(&b, &s, d)) return 1;
        te = time_eval(&b, 3);
        tb = time_build(&b, 3);
        bench_close(&b);
        if (measured) {
            d.engine = NBODY_ENGINE_BLOCK;
            if (!bench_open(&b, &s, d)) return 1;
            tblock = time_eval(&b, lg < 15 ? 3 : 1);
            bench_close(&b);
            block_last = tblock; block_n = (double)n;
        } else {
            tblock = block_last * ((double)n / block_n) * ((double)n / block_n);
        }
        printf("| 2^%d | %.2f | %.2f | %.3g | %.2f%s | %.1fx |\n", lg, 1e3 * tb, 1e3 * te, (double)n * (double)n / te,
               1e3 * tblock, measured ? "" : " (N^2 extrapolated)", tblock / te);
        if (measured && te < tblock && !crossover) crossover = lg;
        if (measured && te >= tblock) crossover = 0;
        nbody_system_free(&s);
        fflush(stdout);
    }
    if (crossover) printf("\nCrossover: the tree beats BLOCK from N = 2^%d on (every measured N from there).\n", crossover);
    else printf("\nCrossover: the tree did not beat BLOCK at the largest measured N.\n");

    {   /* leaf size sweep */
        size_t n = (size_t)1 << (maxlog < 17 ? maxlog : 17);
        static const int sizes[] = {1, 2, 4, 8, 16, 32};
        printf("\n## Leaf size (bucket) B, N = %lu, theta 0.5, stackless, leaf order: ms per evaluation, build ms, median relative force error (301 sampled bodies)\n\n",
               (unsigned long)n);
        print_load();
        printf("| B | eval ms (build incl.) | build ms | median error |\n|---|---|---|---|\n");
        nbody_ic_plummer(&s, n, 1);
        for (k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); ++k) {
            nbody_desc d = tree_desc(0.5, NBODY_TRAVERSAL_STACKLESS, NBODY_ORDER_LEAF, 0);
            double te, tb;
            d.leaf_size = sizes[k];
            if (!bench_open(&b, &s, d)) return 1;
            te = time_eval(&b, 3);
            tb = time_build(&b, 3);
            printf("| %d | %.1f | %.1f | %.2e |\n", sizes[k], 1e3 * te, 1e3 * tb, sampled_error(&s, b.f, d.softening));
            bench_close(&b);
            fflush(stdout);
        }
        nbody_system_free(&s);
    }

    {
        size_t n = (size_t)1 << (maxlog < 17 ? maxlog : 17);
        const char *names[4] = {"cycle + heap (body order, stack)", "cycle + heapstackless (body order, stackless)",
                                "nested + heap (leaf order, stack)", "nested + heapstackless (leaf order, stackless)"};
        printf("\n## Table 4: traversal x visit order, N = %lu, ms per force evaluation (build included)\n\n", (unsigned long)n);
        print_load();
        printf("| variant | theta 0.3 | theta 0.5 | theta 0.7 |\n|---|---|---|---|\n");
        nbody_ic_plummer(&s, n, 1);
        for (v = 0; v < 4; ++v) {
            printf("| %s |", names[v]);
            for (k = 0; k < 3; ++k) {
                nbody_desc d = tree_desc(thetas[k], v & 1 ? NBODY_TRAVERSAL_STACKLESS : NBODY_TRAVERSAL_STACK,
                                         v & 2 ? NBODY_ORDER_LEAF : NBODY_ORDER_BODY, 0);
                if (!bench_open(&b, &s, d)) return 1;
                printf(" %.1f |", 1e3 * time_eval(&b, 2));
                bench_close(&b);
            }
            printf("\n");
        }

        printf("\n## Split axis and quadrupole, N = %lu: ms per evaluation, build ms, median relative force error (301 sampled bodies)\n\n", (unsigned long)n);
        print_load();
        printf("| axis rule | moments | theta | eval ms | build ms | median error |\n|---|---|---|---|---|---|\n");
        for (v = 0; v < 3; ++v)
            for (k = 0; k < 3; ++k) {
                int rule = v == 1 ? NBODY__AXIS_CYCLE : NBODY__AXIS_WIDEST, quad = v == 2;
                nbody_desc d = tree_desc(thetas[k], NBODY_TRAVERSAL_STACKLESS, NBODY_ORDER_LEAF, quad);
                double te, tb;
                if (!bench_open(&b, &s, d)) return 1;
                b.e.ops->derivative(&b.e, b.y, b.f);
                ((nbody__kdtree *)((nbody__cpu *)b.e.impl)->tree)->axis_rule = rule;
                te = time_eval(&b, 2);
                tb = time_build(&b, 3);
                printf("| %s | %s | %.1f | %.1f | %.1f | %.2e |\n", rule == NBODY__AXIS_CYCLE ? "cycle" : "widest",
                       quad ? "quadrupole" : "monopole", thetas[k], 1e3 * te, 1e3 * tb, sampled_error(&s, b.f, d.softening));
                bench_close(&b);
            }
        nbody_system_free(&s);
    }

    printf("\n## Figure 10: |dE/E| after 100 leapfrog steps (dt 1e-2), two colliding galaxies, N = 2^14\n\n");
    printf("(the four traversal x order variants give bitwise identical forces, so one column per theta)\n\n");
    printf("| engine | theta | dE/E |\n|---|---|---|\n");
    printf("| BLOCK | - | %.2e |\n", energy_change((size_t)1 << 14, NBODY_ENGINE_BLOCK, 0));
    for (k = 0; k < 3; ++k) printf("| tree | %.1f | %.2e |\n", thetas[k], energy_change((size_t)1 << 14, NBODY_ENGINE_TREE, thetas[k]));
    return 0;
}
#endif
