/* bench_cpu.c - the CPU force engines: the article's Table 2 (seconds per force evaluation for
   simple / openmp / block / tree at N = 2048 .. 32768), interactions/s and GFLOP/s (20 flops
   per interaction in float, 30 in double, the CUDA Handbook's convention), the article's
   'openmp + block + optimization' loop compiled here with the same flags as the baseline, and
   the BLOCK engine's two kernels (one-sided and symmetric) at 1 and all threads, and its
   thread scaling. Force evaluations are timed through the engine operations
   (no transfers, no integrator); each figure is the median of several repetitions.
   Build: make bench (double: build/bench_cpu, float: build/bench_cpu_float)
   Options: bench_cpu [max_n] (default 32768). The environment variable NBODY_SIMD picks the
   SIMD level (portable, avx2, avx512; default: the best this CPU runs). */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <time.h>

#define BENCH_REPS 5
#define BENCH_MAX_SECONDS 4.0      /* fewer repetitions for the slow engines */
#define ARTICLE_BLOCK 64           /* the article's BLOCK_SIZE; our N are multiples of it */
#define ARTICLE_MIN_R 1e-8         /* its NBODY_MIN_R: r^2 clamped from below */

static double now(void) { return nbody__wall_seconds(); }   /* the library's monotonic wall clock */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the article's 'openmp + block + optimization' loop, as published (accelerations only) */
static void article_block_opt(const nbody_real *rx, const nbody_real *ry, const nbody_real *rz,
                              const nbody_real *mass, size_t count, nbody_real *fvx, nbody_real *fvy, nbody_real *fvz) {
    long long n1s;
    NBODY__PRAGMA(omp parallel for)
    for (n1s = 0; n1s < (long long)count; n1s += ARTICLE_BLOCK) {
        size_t n1 = (size_t)n1s, n2, b1, b2;
        nbody_real x1[ARTICLE_BLOCK], y1[ARTICLE_BLOCK], z1[ARTICLE_BLOCK];
        nbody_real total_force_x[ARTICLE_BLOCK], total_force_y[ARTICLE_BLOCK], total_force_z[ARTICLE_BLOCK];
        for (b1 = 0; b1 != ARTICLE_BLOCK; ++b1) {
            x1[b1] = rx[b1 + n1]; y1[b1] = ry[b1 + n1]; z1[b1] = rz[b1 + n1];
            total_force_x[b1] = total_force_y[b1] = total_force_z[b1] = 0;
        }
        for (n2 = 0; n2 < count; n2 += ARTICLE_BLOCK) {
            nbody_real x2[ARTICLE_BLOCK], y2[ARTICLE_BLOCK], z2[ARTICLE_BLOCK], m2[ARTICLE_BLOCK];
            for (b2 = 0; b2 != ARTICLE_BLOCK; ++b2) {
                x2[b2] = rx[n2 + b2]; y2[b2] = ry[n2 + b2]; z2[b2] = rz[n2 + b2]; m2[b2] = mass[n2 + b2];
            }
            for (b1 = 0; b1 != ARTICLE_BLOCK; ++b1) {
                for (b2 = 0; b2 != ARTICLE_BLOCK; ++b2) {
                    nbody_real dx = x1[b1] - x2[b2], dy = y1[b1] - y2[b2], dz = z1[b1] - z2[b2];
                    nbody_real r2 = dx * dx + dy * dy + dz * dz, r, coeff;
                    if (r2 < (nbody_real)ARTICLE_MIN_R) r2 = (nbody_real)ARTICLE_MIN_R;
                    r = NBODY__SQRT(r2);
                    coeff = m2[b2] / (r * r2);
                    total_force_x[b1] -= dx * coeff;
                    total_force_y[b1] -= dy * coeff;
                    total_force_z[b1] -= dz * coeff;
                }
            }
        }
        for (b1 = 0; b1 != ARTICLE_BLOCK; ++b1) {
            fvx[b1 + n1] = total_force_x[b1]; fvy[b1 + n1] = total_force_y[b1]; fvz[b1 + n1] = total_force_z[b1];
        }
    }
}

typedef struct bench_case {
    nbody_system s;
    nbody_real *y, *f;             /* engine-layout state and derivative, 6n */
} bench_case;

static int case_make(bench_case *c, size_t n) {
    memset(c, 0, sizeof *c);
    if (nbody_ic_plummer(&c->s, n, 2026) != NBODY_OK) return 0;
    c->y = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
    c->f = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
    if (!c->y || !c->f) return 0;
    memcpy(c->y, c->s.x, n * sizeof(nbody_real));
    memcpy(c->y + n, c->s.y, n * sizeof(nbody_real));
    memcpy(c->y + 2 * n, c->s.z, n * sizeof(nbody_real));
    return 1;
}
static void case_free(bench_case *c) { free(c->y); free(c->f); nbody_system_free(&c->s); }

static nbody_simd simd;           /* the BLOCK kernels' level: NBODY_SIMD, else the best */

/* what to time besides the engines: the article's loop and each BLOCK kernel on its own */
enum { ARTICLE = -1, KERNEL_ONE_SIDED = -2, KERNEL_SYMMETRIC = -3 };

/* median seconds per force evaluation of an engine or of one of the above; -1 when unavailable */
static double time_engine(bench_case *c, int engine, int threads, int block) {   /* kernels: threads > 0 */
    double t[BENCH_REPS], total = 0;
    int r, reps = 0;
    size_t n = c->s.n;
    nbody__engine e;
    nbody__forces f;
    nbody_desc d = {0};
    d.engine = engine < 0 ? NBODY_ENGINE_SIMPLE : (nbody_engine)engine;
    d.threads = threads; d.block_size = block; d.softening = (nbody_real)0.01;
    if (!nbody_engine_available(d.engine)) return -1;
    d = nbody__desc_defaults(&d);
    if (nbody__engine_start(&e, &d, n, c->s.m) != NBODY_OK) return -1;
    f.x = c->y; f.y = c->y + n; f.z = c->y + 2 * n; f.m = c->s.m;
    f.ax = c->f + 3 * n; f.ay = c->f + 4 * n; f.az = c->f + 5 * n;
    f.n = n; f.G = 1; f.eps2 = d.softening * d.softening;
#if NBODY__OPENMP
    if (engine == ARTICLE && threads > 0) omp_set_num_threads(threads);
#endif
    for (r = 0; r < BENCH_REPS && (r < 1 || total < BENCH_MAX_SECONDS); ++r, ++reps) {
        double t0 = now();
        if (engine == ARTICLE) article_block_opt(f.x, f.y, f.z, f.m, n, f.ax, f.ay, f.az);
        else if (engine < 0) nbody__accel_block_kernel(&f, threads > 0 ? threads : 1, block, engine == KERNEL_SYMMETRIC, simd);
        else if (e.ops->derivative(&e, c->y, c->f) != NBODY_OK) { nbody__engine_stop(&e); return -1; }
        t[r] = now() - t0;
        total += t[r];
    }
    nbody__engine_stop(&e);
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    return t[reps / 2];
}

static void cell(double s) { if (s < 0) printf(" - |"); else printf(" %.4g |", s); }

int main(int argc, char **argv) {
    static const size_t sizes[] = {2048, 4096, 8192, 16384, 32768};
    static const int engines[] = {NBODY_ENGINE_SIMPLE, NBODY_ENGINE_OPENMP, ARTICLE, NBODY_ENGINE_BLOCK, NBODY_ENGINE_TREE};
    static const char *names[] = {"simple", "openmp", "article 'openmp + block + optimization'", "block (this library)", "tree"};
    enum { NS = sizeof sizes / sizeof *sizes, NE = sizeof engines / sizeof *engines };
    double sec[NE][NS];
    size_t max_n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 32768, k;
    int e, threads = 1, flops = sizeof(nbody_real) == sizeof(float) ? 20 : 30;
    const char *real = sizeof(nbody_real) == sizeof(float) ? "float" : sizeof(nbody_real) == sizeof(double) ? "double" : "long double";
#if NBODY__OPENMP
    threads = omp_get_max_threads();
#endif
    { nbody_desc d0 = {0}; if (nbody__simd_choose(&d0, "block", &simd) != NBODY_OK) return 1; }
    printf("\n## CPU force engines, %s, %d threads, BLOCK kernel: %s\n\n", real, threads, nbody__simd_level_name(simd));
    printf("Seconds per force evaluation (median), the article's Table 2:\n\n| engine |");
    for (k = 0; k < NS && sizes[k] <= max_n; ++k) printf(" %zu |", sizes[k]);
    printf("\n| --- |");
    for (k = 0; k < NS && sizes[k] <= max_n; ++k) printf(" --- |");
    printf("\n");
    for (k = 0; k < NS && sizes[k] <= max_n; ++k) {
        bench_case c;
        if (!case_make(&c, sizes[k])) { printf("out of memory\n"); return 1; }
        for (e = 0; e < NE; ++e) sec[e][k] = time_engine(&c, engines[e], 0, 0);
        case_free(&c);
    }
    for (e = 0; e < NE; ++e) {
        if (engines[e] == NBODY_ENGINE_TREE && !nbody_engine_available(NBODY_ENGINE_TREE)) continue;
        printf("| %s |", names[e]);
        for (k = 0; k < NS && sizes[k] <= max_n; ++k) cell(sec[e][k]);
        printf("\n");
    }
    printf("\nBLOCK engine throughput (interactions = N^2, %d flops each) and ratio to the article's loop:\n\n", flops);
    printf("| N | interactions/s | GFLOP/s | article loop, interactions/s | block / article |\n| --- | --- | --- | --- | --- |\n");
    for (k = 0; k < NS && sizes[k] <= max_n; ++k) {
        double inter = (double)sizes[k] * (double)sizes[k];
        printf("| %zu | %.3g | %.1f | %.3g | %.2fx |\n", sizes[k], inter / sec[3][k], flops * inter / sec[3][k] * 1e-9,
               inter / sec[2][k], sec[2][k] / sec[3][k]);
    }
    if (simd != NBODY_SIMD_PORTABLE) {   /* the BLOCK engine's two kernels, same run: which one is the default and why */
        static const size_t kn[] = {2048, 8192, 32768};
        printf("\nBLOCK kernels, interactions/s (N^2 per evaluation; the symmetric one computes N^2/2 pairs),"
               " default: %s:\n\n| N | one-sided, 1 thread | symmetric, 1 thread | sym / one-sided |"
               " one-sided, %d threads | symmetric, %d threads | sym / one-sided |\n| --- | --- | --- | --- | --- | --- | --- |\n",
               NBODY__BLOCK_SYMMETRIC ? "symmetric" : "one-sided", threads, threads);
        for (k = 0; k < sizeof kn / sizeof *kn && kn[k] <= max_n; ++k) {
            bench_case c;
            double inter = (double)kn[k] * (double)kn[k], s[4];
            int v;
            if (!case_make(&c, kn[k])) return 1;
            for (v = 0; v < 4; ++v) s[v] = time_engine(&c, v & 1 ? KERNEL_SYMMETRIC : KERNEL_ONE_SIDED, v < 2 ? 1 : threads, 0);
            printf("| %zu | %.3g | %.3g | %.2fx | %.3g | %.3g | %.2fx |\n", kn[k], inter / s[0], inter / s[1], s[0] / s[1],
                   inter / s[2], inter / s[3], s[2] / s[3]);
            case_free(&c);
        }
    }
    {   /* thread scaling: small n must not get slower with more threads */
        static const size_t tn[] = {64, 256, 1024, 4096, 16384};
        int nt = threads < 2 ? 2 : threads, t;
        printf("\nBLOCK engine thread scaling, seconds per evaluation (speed-up over 1 thread):\n\n| N |");
        for (t = 1; t <= nt; ++t) printf(" %d thread%s |", t, t > 1 ? "s" : "");
        printf("\n| --- |");
        for (t = 1; t <= nt; ++t) printf(" --- |");
        printf("\n");
        for (k = 0; k < sizeof tn / sizeof *tn && tn[k] <= max_n; ++k) {
            bench_case c;
            double t1 = 0;
            if (!case_make(&c, tn[k])) return 1;
            printf("| %zu |", tn[k]);
            for (t = 1; t <= nt; ++t) {
                double s = time_engine(&c, NBODY_ENGINE_BLOCK, t, 0);
                if (t == 1) t1 = s;
                printf(" %.3g (%.2fx) |", s, t1 / s);
            }
            printf("\n");
            case_free(&c);
        }
    }
    return 0;
}
