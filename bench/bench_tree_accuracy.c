/* bench_tree_accuracy.c - a tree engine's force error against its time, theta 0.3 to 0.8,
   monopole and quadrupole: per-body relative errors against the direct sum in double
   (median, 99th percentile, worst body; every body up to 20000 bodies, else 2000 sampled),
   and the median wall time of one force evaluation (tree build included, the accelerations
   downloaded for the GPU engines) after one untimed evaluation (tuning, kernel loading).
   Usage: bench_tree_accuracy [tree|cuda-tree|opencl-tree] [N (12347)] [repetitions (5)]
                              [theta from, to in tenths (3 8)] [leaf_size (0: the default)]
   Plummer sphere, seed 2026, softening 1e-3 (BENCH_IC=collision: two disc galaxies 3 apart,
   each with a central body of 0.3 of its mass; BENCH_IC=cube: a uniform cube, whose inner
   bodies' pulls cancel). A configuration the engine refuses prints so.
   The time is that of the derivative and a download of one value (which waits for the
   device); the accelerations are downloaded once afterwards for the errors. With the CUDA
   engine built in, the CUDA tree's build and walk are also timed apart (device events); the
   OpenCL tree's likewise, in as many evaluations again, each part finished and timed on the
   host clock (BENCH_CL_WALK=1 or 2 forces its walk: each work-item alone, the group's union;
   BENCH_CL_BLOCK its work-group size, desc.block_size).
   Environment (CUDA tree, benchmarks): BENCH_WALK 1 thread, 2 warp, 3 group walk (BENCH_BLOCK
   its threads per block, 4 the group walk with its stacks in global memory); BENCH_CHOICE=1
   prints the tuned block and walk before each row; BENCH_THETAS="8 10 15" the thetas (tenths)
   instead of the range; BENCH_QUAD=0 or 1 monopole or quadrupole
   rows only; BENCH_MORTON=1 the tree of Morton keys and split groups (the
   tree before the Hilbert keys), for comparison. */
#define _POSIX_C_SOURCE 199309L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <math.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#ifdef NBODY_WITH_CUDA
void nbody__cuda_bench_tree_times(nbody__engine *e, double *build_ms, double *walk_ms);
void nbody__cuda_bench_config(nbody__engine *e, int variant, int block, int per_thread);
void nbody__cuda_bench_tree_morton(int on);
void nbody__cuda_bench_choice(nbody__engine *e, int *block, int *per_thread, int *symmetric);
#ifdef NBODY_CU_GW_STATS
void nbody__cuda_gw_stats(unsigned long long out[8], int reset);
#endif
#endif
/* the engines' tuning lines (which walk a GPU chose) */
static void log_tuning(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_INFO && strstr(msg, "walk")) printf("<!-- %s -->\n", msg);
}
static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

/* direct sums in double for the sampled bodies idx[0..k) */
static void direct(const nbody_system *s, const size_t *idx, size_t k, double eps, double *ref) {
    long long q;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 16))
    for (q = 0; q < (long long)k; ++q) {
        size_t i = idx[q], j;
        double a[3] = {0, 0, 0};
        for (j = 0; j < s->n; ++j) {
            double dx = (double)s->x[j] - (double)s->x[i], dy = (double)s->y[j] - (double)s->y[i], dz = (double)s->z[j] - (double)s->z[i];
            double r2 = dx * dx + dy * dy + dz * dz + eps * eps, w;
            if (j == i) continue;
            w = (double)s->m[j] / (r2 * sqrt(r2));
            a[0] += w * dx; a[1] += w * dy; a[2] += w * dz;
        }
        ref[3 * q] = a[0]; ref[3 * q + 1] = a[1]; ref[3 * q + 2] = a[2];
    }
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "tree";
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : 12347, k, i;
    int reps = argc > 3 ? atoi(argv[3]) : 5, quad, t, ti, nt = 0, tl[64];
    int t0 = argc > 5 ? atoi(argv[4]) : 3, t1 = argc > 5 ? atoi(argv[5]) : 8, leaf = argc > 6 ? atoi(argv[6]) : 0;
    nbody_engine eng = strcmp(name, "cuda-tree") == 0 ? NBODY_ENGINE_CUDA_TREE
                     : strcmp(name, "opencl-tree") == 0 ? NBODY_ENGINE_OPENCL_TREE : NBODY_ENGINE_TREE;
    const double eps = 1e-3;
    nbody_system s = NBODY__ZERO_INIT;
    size_t *idx;
    double *ref, *err, *times;
    nbody_real *y, *f;
    if (n < 2 || reps < 1) { printf("usage: bench_tree_accuracy [tree|cuda-tree|opencl-tree] [N >= 2] [repetitions >= 1]\n"); return 1; }
    {   /* the thetas in tenths: BENCH_THETAS (a list, "8 10 12 15 20"), else t0..t1 */
        const char *tv = getenv("BENCH_THETAS");
        char *end;
        if (tv)
            for (long v = strtol(tv, &end, 10); end != tv && nt < 64; tv = end, v = strtol(tv, &end, 10)) tl[nt++] = (int)v;
        else
            for (t = t0; t <= t1 && nt < 64; ++t) tl[nt++] = t;
    }
    {
        const char *ic = getenv("BENCH_IC");
        if (ic && !strcmp(ic, "collision")) nbody_ic_collision(&s, n, (nbody_real)0.3, 3, 2026);
        else if (ic && !strcmp(ic, "cube")) nbody_ic_uniform_cube(&s, n, 2026);
        else nbody_ic_plummer(&s, n, 2026);
    }
    k = n <= 20000 ? n : 2000;
    idx = (size_t *)malloc(k * sizeof(size_t));
    ref = (double *)malloc(3 * k * sizeof(double));
    err = (double *)malloc(k * sizeof(double));
    times = (double *)malloc((size_t)reps * sizeof(double));
    y = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
    f = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
    for (i = 0; i < k; ++i) idx[i] = k == n ? i : (size_t)(((unsigned long long)i * 2654435761u) % n);
    for (i = 0; i < n; ++i) { y[i] = s.x[i]; y[n + i] = s.y[i]; y[2 * n + i] = s.z[i]; }
    direct(&s, idx, k, eps, ref);
#ifdef NBODY_WITH_CUDA
    if (eng == NBODY_ENGINE_CUDA_TREE && getenv("BENCH_MORTON")) nbody__cuda_bench_tree_morton(atoi(getenv("BENCH_MORTON")));
#endif
    printf("## %s, %s, %s N = %lu, softening 1e-3: relative force error over %lu bodies, ms per evaluation\n\n",
           name, sizeof(nbody_real) == sizeof(float) ? "float" : "double", getenv("BENCH_IC") ? getenv("BENCH_IC") : "Plummer",
           (unsigned long)n, (unsigned long)k);
    printf("| moments | theta | median | p99 | worst | ms | build ms | walk ms |\n|---|---|---|---|---|---|---|---|\n");
    for (quad = 0; quad <= 1; ++quad)
        for (ti = 0; ti < nt; ++ti) {
            t = tl[ti];
            if (getenv("BENCH_QUAD") && atoi(getenv("BENCH_QUAD")) != quad) continue;   /* one kind of moments only */
            double bms = -1, wms = -1, bsum = 0, wsum = 0;
            nbody_real one;
            (void)wms;
            nbody_desc d;
            nbody__engine e;
            nbody__buf yb = NULL, fb = NULL;
            nbody_result r;
            int rep;
            memset(&d, 0, sizeof d);
            d.engine = eng; d.theta = (nbody_real)(0.1 * t); d.quadrupole = quad; d.softening = (nbody_real)eps; d.leaf_size = leaf;
            d.log.func = log_tuning;
            if (eng == NBODY_ENGINE_OPENCL_TREE && getenv("BENCH_CL_BLOCK")) d.block_size = atoi(getenv("BENCH_CL_BLOCK"));
            d = nbody__desc_defaults(&d);
            r = nbody__engine_start(&e, &d, n, s.m);
            if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * n, &yb);
            if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * n, &fb);
            if (r == NBODY_OK) r = e.ops->upload(&e, yb, 0, y, 6 * n);
#ifdef NBODY_WITH_CUDA
            if (r == NBODY_OK && eng == NBODY_ENGINE_CUDA_TREE && getenv("BENCH_WALK"))   /* 1 thread, 2 warp, 3 group walk */
                nbody__cuda_bench_config(&e, 0, getenv("BENCH_BLOCK") ? atoi(getenv("BENCH_BLOCK")) : 1024, atoi(getenv("BENCH_WALK")));
#endif
#ifdef NBODY_WITH_OPENCL
            /* BENCH_CL_WALK=1 each work-item alone, 2 the work-group union (else tuned on GPUs) */
            nbody__cl_tree_walk_mode = getenv("BENCH_CL_WALK") ? atoi(getenv("BENCH_CL_WALK")) : 0;
#endif
            if (r == NBODY_OK) r = e.ops->derivative(&e, yb, fb);          /* untimed: tuning, loading */
#ifdef NBODY_CU_GW_STATS
            { unsigned long long z[8]; nbody__cuda_gw_stats(z, 1); }
#endif
#ifdef NBODY_WITH_CUDA
            if (r == NBODY_OK && eng == NBODY_ENGINE_CUDA_TREE) nbody__cuda_bench_tree_times(&e, &bms, &wms);
            if (r == NBODY_OK && eng == NBODY_ENGINE_CUDA_TREE && getenv("BENCH_CHOICE")) {   /* the tuned walk, before the row */
                int cb = 0, cw = 0, cs = 0;
                nbody__cuda_bench_choice(&e, &cb, &cw, &cs);
                printf("  (%s theta %.1f: %d threads per block, walk %d: 1 thread, 2 warp, 3 group, 4 group with a global stack)\n",
                       quad ? "quadrupole" : "monopole", 0.1 * t, cb, cw);
            }
#endif
            for (rep = 0; r == NBODY_OK && rep < reps; ++rep) {
                double ts = now();
                r = e.ops->derivative(&e, yb, fb);
                if (r == NBODY_OK) r = e.ops->download(&e, &one, fb, 3 * n, 1);
                times[rep] = now() - ts;
#ifdef NBODY_WITH_CUDA
                if (r == NBODY_OK && eng == NBODY_ENGINE_CUDA_TREE) {
                    nbody__cuda_bench_tree_times(&e, &bms, &wms);
                    bsum += bms; wsum += wms;
                }
#endif
            }
#ifdef NBODY_WITH_OPENCL
            if (r == NBODY_OK && eng == NBODY_ENGINE_OPENCL_TREE && e.desc.devices <= 1) {
                /* build and walk apart: as many evaluations again, each part finished and timed */
                nbody__cl_tree_timing = 1;
                for (rep = 0; r == NBODY_OK && rep < reps; ++rep) {
                    r = e.ops->derivative(&e, yb, fb);
                    bsum += ((nbody__cl *)e.impl)->tree_build_ms; wsum += ((nbody__cl *)e.impl)->tree_walk_ms;
                }
                nbody__cl_tree_timing = 0;
                bms = bsum / reps;
            }
#endif
            if (r == NBODY_OK) r = e.ops->download(&e, f, fb, 3 * n, 3 * n);
            if (r != NBODY_OK) {
                printf("| %s | %.1f | %s | | | |\n", quad ? "quadrupole" : "monopole", 0.1 * t, nbody_result_string(r));
            } else {
                for (i = 0; i < k; ++i) {
                    size_t b = idx[i];
                    double dx = (double)f[b] - ref[3 * i], dy = (double)f[n + b] - ref[3 * i + 1], dz = (double)f[2 * n + b] - ref[3 * i + 2];
                    err[i] = sqrt((dx * dx + dy * dy + dz * dz) /
                                  (ref[3 * i] * ref[3 * i] + ref[3 * i + 1] * ref[3 * i + 1] + ref[3 * i + 2] * ref[3 * i + 2]));
                }
                qsort(err, k, sizeof(double), cmp_double);
                qsort(times, (size_t)reps, sizeof(double), cmp_double);
                printf("| %s | %.1f | %.2e | %.2e | %.2e | %.3g |", quad ? "quadrupole" : "monopole", 0.1 * t, err[k / 2],
                       err[(k - 1) * 99 / 100], err[k - 1], 1e3 * times[reps / 2]);
                if (bms >= 0) printf(" %.3g | %.3g |\n", bsum / reps, wsum / reps);
                else printf(" | |\n");
#ifdef NBODY_CU_GW_STATS
                {
                    unsigned long long st[8];
                    nbody__cuda_gw_stats(st, 1);
                    if (st[4]) printf("  stats: groups %llu, per group: tested %.0f accepted %.0f direct %.0f, clocks mean %.3g max %.3g\n",
                                      st[4] / reps, (double)st[0] / st[4], (double)st[1] / st[4], (double)st[2] / st[4],
                                      (double)st[3] / st[4], (double)st[5]);
                }
#endif
            }
            fflush(stdout);
            if (e.ops) { e.ops->release(&e, fb); e.ops->release(&e, yb); }
            nbody__engine_stop(&e);
        }
    free(idx); free(ref); free(err); free(times); free(y); free(f);
    nbody_system_free(&s);
    return 0;
}
