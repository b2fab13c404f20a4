/* multigpu.c - several GPUs in one process (desc.devices, NCCL): milliseconds per leapfrog
   step (one force evaluation, the positions' all-gather, the state update) on 1 and on D
   GPUs, strong scaling (the same N) and weak scaling (N per GPU fixed), dense and tree, in
   NBODY_REAL's precision. Markdown tables on stdout.
   Build: make WITH_CUDA=1 WITH_NCCL=1 build/multigpu_float (NBODY_REAL=float) or build/multigpu
   Usage: multigpu [max_devices=2] [quick]
   Timing: three warm-up steps (the one-GPU engine tunes its kernel there; the tree on several
   GPUs moves its walks' boundaries by their measured times, halfway each evaluation), then
   the median wall-clock time of up to 7 steps or 20 s; a step ends with a device-to-host copy
   (the finiteness check), so the GPUs are idle between steps. The tree on several GPUs runs
   twice: walks balanced by measured time (the engine's default) and split by body count
   (balance off, for comparison), and balanced with 1024 threads a block instead of the slices'
   default; the last column gives the share of the leaves GPU 0 walked.
   Usage: multigpu D tree LOG2N... : the tree alone, Plummer 2^LOG2N (float: softening 1e-3),
   monopoles at theta 0.5 and quadrupoles at theta 1.0 (MULTI_QUAD_THETA overrides the latter),
   one GPU against D, the engine's defaults (three warm-up steps, then the median of 3 to 15 steps
   or 5 s), and the phases of the D GPUs' evaluations
   (nbody__cuda_multi_phases): for each GPU the median over the timed steps of the positions'
   all-gather, the build, the walk, the accelerations' all-gather and the taking of its own,
   in ms; and GPU 0's build by steps (nbody__cuda_bench_build_steps: with the divided build
   its last step is the roots' all-gather, the levels above them and the subtrees the walks
   open). D GPUs run twice: the build divided over the GPUs (the engine's default) and whole
   on every GPU (nbody__cuda_multi_divide off), in that order, each with its phases.
   MULTI_WALK=1|2 forces the GPUs' monopole walk (each thread alone, the warp's union;
   MULTI_BLOCK its threads per block, 1024); MULTI_WHOLE=0 leaves the whole build's rows out.
   Usage: multigpu D size LOG2N... : how far D GPUs go: float Plummer 2^LOG2N (LOG2N may be
   fractional; `max` fills every GPU to MULTI_FILL (0.9) of its free memory at the bytes a body
   the rows before it measured), quadrupoles at theta 1.0 (MULTI_QUAD_THETA), softening 1e-3,
   the build divided; per row: the GPU memory the engine holds after the timed steps
   (cudaMemGetInfo against before nbody_create, each GPU), ms per leapfrog step (median of 3
   after 2 warm-up steps) and the relative force error (nbody_accelerations on the same GPUs)
   against the direct sum in double over MULTI_SAMPLE (1000) bodies evenly spaced in index.
   The bodies: the union of 64 Plummer spheres of seeds 1-64 made in parallel, each of mass
   1/64 (the library's generator is serial: 2^28 bodies would take minutes). */
#define _POSIX_C_SOURCE 199309L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <cuda_runtime_api.h>

int nbody__cuda_multi_walk(nbody__engine *e, size_t *w, int set, int balance);   /* nbody_cuda.cu */
int nbody__cuda_multi_phases(nbody__engine *e, double *ms);
int nbody__cuda_multi_divide(nbody__engine *e, int on);
int nbody__cuda_bench_build_steps(nbody__engine *e, double *ms);
void nbody__cuda_bench_config(nbody__engine *e, int variant, int block, int per_thread);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ms per step, -1 on failure; balance: the tree's walks on several GPUs balanced by measured
   time (1) or split by count (0); *share: the leaves GPU 0 walked last, as a fraction (-1: none) */
static double step_ms(nbody_engine engine, size_t n, int devices, int balance, int block, double *share) {
    nbody_system s = {0};
    nbody_desc d = {0};
    nbody_sim *sim = NULL;
    double t[7], total = 0;
    int k, reps = 0;
    nbody_result r = nbody_ic_plummer(&s, n, 1);
    d.engine = engine; d.devices = devices; d.softening = (nbody_real)0.01; d.dt = (nbody_real)1e-5;
    size_t w[17];
    if (r == NBODY_OK) r = nbody_create(&sim, &d, &s);
    nbody_system_free(&s);
    *share = -1;
    if (r == NBODY_OK && nbody__cuda_multi_walk(&sim->eng, w, 0, balance) > 1 && block > 0)
        nbody__cuda_bench_config(&sim->eng, 0, block, 1);   /* the tree's walks: block threads, each thread alone */
    for (k = 0; k < 3 && r == NBODY_OK; ++k) r = nbody_step(sim);
    for (k = 0; k < 7 && r == NBODY_OK && (k < 2 || total < 20); ++k, ++reps) {
        double t0 = now();
        r = nbody_step(sim);
        t[k] = 1e3 * (now() - t0);
        total += t[k] / 1e3;
    }
    if (r == NBODY_OK && nbody__cuda_multi_walk(&sim->eng, w, 0, -1) > 1) *share = (double)w[1] / (double)w[devices];
    nbody_destroy(sim);
    if (r != NBODY_OK) { fprintf(stderr, "multigpu: %s n = %lu on %d GPUs: %s\n", nbody_engine_name(engine), (unsigned long)n, devices, nbody_result_string(r)); return -1; }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

/* the tree mode: ms per step of a ready system s on `devices` GPUs, the phases' medians into
   ph[4 k + q] (several GPUs) */
#define MULTI_PHASES 5
static double tree_ms(const nbody_system *s, int devices, int quad, double theta, int divide, double *ph, double *bs) {
    nbody_desc d = {0};
    nbody_sim *sim = NULL;
    double t[15], p[15][16 * MULTI_PHASES], b[15][4], total = 0, col[15];
    int k, q, reps = 0, D = 0;
    nbody_result r;
    d.engine = NBODY_ENGINE_CUDA_TREE; d.devices = devices; d.softening = (nbody_real)1e-3; d.dt = (nbody_real)1e-5;
    d.quadrupole = quad; d.theta = (nbody_real)theta;
    r = nbody_create(&sim, &d, s);
    if (r == NBODY_OK && devices > 1) (void)nbody__cuda_multi_divide(&sim->eng, divide);
    if (r == NBODY_OK && devices > 1 && getenv("MULTI_WALK"))   /* the GPUs' walk forced: 1 thread, 2 warp (monopoles) */
        nbody__cuda_bench_config(&sim->eng, 0, getenv("MULTI_BLOCK") ? atoi(getenv("MULTI_BLOCK")) : 1024, atoi(getenv("MULTI_WALK")));
    for (k = 0; k < 3 && r == NBODY_OK; ++k) r = nbody_step(sim);
    if (r == NBODY_OK) (void)nbody__cuda_bench_build_steps(&sim->eng, b[0]);   /* from now on */
    for (k = 0; k < 15 && r == NBODY_OK && (k < 3 || total < 5); ++k, ++reps) {
        double t0 = now();
        r = nbody_step(sim);
        t[k] = 1e3 * (now() - t0);
        total += t[k] / 1e3;
        if (r == NBODY_OK && devices > 1) D = nbody__cuda_multi_phases(&sim->eng, p[k]);
        if (r == NBODY_OK && !nbody__cuda_bench_build_steps(&sim->eng, b[k])) b[k][0] = b[k][1] = b[k][2] = b[k][3] = -1;
    }
    nbody_destroy(sim);
    if (r != NBODY_OK) { fprintf(stderr, "multigpu: tree n = %lu on %d GPUs: %s\n", (unsigned long)s->n, devices, nbody_result_string(r)); return -1; }
    for (q = 0; q < D * MULTI_PHASES; ++q) {
        for (k = 0; k < reps; ++k) col[k] = p[k][q];
        qsort(col, (size_t)reps, sizeof col[0], cmp_double);
        ph[q] = col[reps / 2];
    }
    for (q = 0; q < 4; ++q) {
        for (k = 0; k < reps; ++k) col[k] = b[k][q];
        qsort(col, (size_t)reps, sizeof col[0], cmp_double);
        bs[q] = col[reps / 2];
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}
static int tree_mode(int D, int argc, char **argv) {
    const char *qt = getenv("MULTI_QUAD_THETA");
    int i, quad, k;
    printf("## The tree (%s), Plummer, softening 1e-3: ms per leapfrog step on 1 and %d GPUs, build and exchanges included\n\n",
           sizeof(nbody_real) == sizeof(float) ? "float" : "double", D);
    printf("| N | moments, theta | 1 GPU ms | %d GPUs ms | speed-up | build | phases a GPU, ms: gather / build / walk / all-gather / take | "
           "GPU 0's build, ms: sort / leaves / internal nodes / groups or rest (1 GPU; %d GPUs) |\n"
           "|---:|---|---:|---:|---:|---|---|---|\n", D, D);
    for (i = 0; i < argc; ++i) {
        size_t n = (size_t)1 << atoi(argv[i]);
        nbody_system s = {0};
        if (nbody_ic_plummer(&s, n, 1) != NBODY_OK) return 1;
        for (quad = 0; quad <= 1; ++quad) {
            double th = quad ? (qt ? atof(qt) : 1.0) : 0.5, ph[16 * MULTI_PHASES], b1[4], bD[4];
            double t1 = tree_ms(&s, 1, quad, th, 1, ph, b1);
            int divide, whole = !getenv("MULTI_WHOLE") || atoi(getenv("MULTI_WHOLE"));
            for (divide = 1; divide >= !whole; --divide) {
                double tD = tree_ms(&s, D, quad, th, divide, ph, bD);
                printf("| 2^%s | %s %.2g | %.2f | %.2f | %.2fx | %s |", argv[i], quad ? "quadrupole" : "monopole", th, t1, tD, t1 / tD,
                       divide ? "divided" : "whole");
                for (k = 0; k < D && tD > 0; ++k) {
                    int q;
                    for (q = 0; q < MULTI_PHASES; ++q) printf(" %.2f%s", ph[MULTI_PHASES * k + q], q + 1 < MULTI_PHASES ? " /" : "");
                    printf("%s", k + 1 < D ? ";" : "");
                }
                printf(" | %.2f / %.2f / %.2f / %.2f; %.2f / %.2f / %.2f / %.2f |\n", b1[0], b1[1], b1[2], b1[3], bD[0], bD[1], bD[2], bD[3]);
                fflush(stdout);
            }
        }
        nbody_system_free(&s);
    }
    return 0;
}

/* the size mode's bodies: n of them, the union of 64 Plummer spheres (seeds 1-64, each of mass
   1/64, each in its own centre-of-mass frame) made in parallel; NBODY_OK or the first failure */
#define SIZE_PARTS 64
static nbody_result size_bodies(nbody_system *s, size_t n) {
    nbody_result r = nbody_system_alloc(s, n), rp[SIZE_PARTS];
    int k;
    if (r != NBODY_OK) return r;
#pragma omp parallel for schedule(dynamic)
    for (k = 0; k < SIZE_PARTS; ++k) {
        size_t i0 = n * (size_t)k / SIZE_PARTS, i1 = n * (size_t)(k + 1) / SIZE_PARTS, i;
        nbody_system p = {0};
        rp[k] = i1 > i0 ? nbody_ic_plummer(&p, i1 - i0, (unsigned long long)k + 1) : NBODY_OK;
        for (i = 0; rp[k] == NBODY_OK && i < i1 - i0; ++i) {
            s->x[i0 + i] = p.x[i]; s->y[i0 + i] = p.y[i]; s->z[i0 + i] = p.z[i];
            s->vx[i0 + i] = p.vx[i]; s->vy[i0 + i] = p.vy[i]; s->vz[i0 + i] = p.vz[i];
            s->m[i0 + i] = (nbody_real)(1.0 / (double)n);
        }
        nbody_system_free(&p);
    }
    for (k = 0; k < SIZE_PARTS; ++k)
        if (rp[k] != NBODY_OK) r = rp[k];
    if (r != NBODY_OK) nbody_system_free(s);
    return r;
}

/* bytes in use on each of the D GPUs into used[] (cudaMemGetInfo), the least free into *low */
static int size_used(int D, double *used, double *low) {
    int g;
    *low = HUGE_VAL;
    for (g = 0; g < D; ++g) {
        size_t f = 0, t = 0;
        if (cudaSetDevice(g) != cudaSuccess || cudaMemGetInfo(&f, &t) != cudaSuccess) return 0;
        used[g] = (double)(t - f);
        if ((double)f < *low) *low = (double)f;
    }
    return 1;
}

/* the relative force errors of a (x, y, z blocks of n) against the direct sum in double
   (softening eps > 0, G = 1) at K bodies evenly spaced in index: median, p90, p99 into st[3]. The
   sum runs over blocks of sources, each thread its own partial sums of the K targets. */
static void size_errors(const nbody_system *s, const nbody_real *a, double eps, size_t K, double *st) {
    size_t n = s->n, k;
    double *ref = (double *)calloc(3 * K, sizeof(double)), *e = (double *)malloc(K * sizeof(double));
    double *tx = (double *)malloc(3 * K * sizeof(double));
    size_t *at = (size_t *)malloc(K * sizeof(size_t));
    st[0] = st[1] = st[2] = -1;
    if (!ref || !e || !tx || !at) { free(ref); free(e); free(tx); free(at); return; }
    for (k = 0; k < K; ++k) {
        at[k] = (size_t)((double)k * (double)n / (double)K);
        tx[k] = s->x[at[k]]; tx[K + k] = s->y[at[k]]; tx[2 * K + k] = s->z[at[k]];
    }
#pragma omp parallel
    {
        double *acc = (double *)calloc(3 * K, sizeof(double));
        long long jb;
#pragma omp for schedule(dynamic, 16)
        for (jb = 0; jb < (long long)((n + 4095) / 4096); ++jb) {
            size_t j, j1 = (size_t)jb * 4096 + 4096 < n ? (size_t)jb * 4096 + 4096 : n;
            for (j = (size_t)jb * 4096; acc && j < j1; ++j) {
                double xj = s->x[j], yj = s->y[j], zj = s->z[j], mj = s->m[j];
                size_t i;
                for (i = 0; i < K; ++i) {
                    double dx = xj - tx[i], dy = yj - tx[K + i], dz = zj - tx[2 * K + i];
                    double r2 = dx * dx + dy * dy + dz * dz + eps * eps;
                    double w = mj / (r2 * sqrt(r2));   /* a body on itself: dx = dy = dz = 0 (eps > 0) */
                    acc[i] += w * dx; acc[K + i] += w * dy; acc[2 * K + i] += w * dz;
                }
            }
        }
#pragma omp critical
        for (k = 0; acc && k < 3 * K; ++k) ref[k] += acc[k];
        free(acc);
    }
    for (k = 0; k < K; ++k) {
        size_t i = at[k];
        double dx = (double)a[i] - ref[k], dy = (double)a[n + i] - ref[K + k], dz = (double)a[2 * n + i] - ref[2 * K + k];
        double nr = sqrt(ref[k] * ref[k] + ref[K + k] * ref[K + k] + ref[2 * K + k] * ref[2 * K + k]);
        e[k] = sqrt(dx * dx + dy * dy + dz * dz) / (nr > 0 ? nr : 1);
        if (e[k] != e[k]) e[k] = HUGE_VAL;
    }
    qsort(e, K, sizeof(double), cmp_double);
    st[0] = e[K / 2]; st[1] = e[(K - 1) * 90 / 100]; st[2] = e[(K - 1) * 99 / 100];
    free(ref); free(e); free(tx); free(at);
}

static double now_since(double t0) { return now() - t0; }

/* one row of the size mode: n bodies on D GPUs; the slope's points (n, bytes on GPU 0) in *pts */
static int size_row(int D, size_t n, double theta, size_t K, double t0, double pts[][2], int *npts) {
    nbody_system s = {0};
    nbody_desc d = {0};
    nbody_sim *sim = NULL;
    double base[16], used[16], low, t[5], err[3] = {-1, -1, -1}, made;
    nbody_real *a = NULL;
    nbody_result r;
    int k, g;
    if (!size_used(D, base, &low)) { printf("size: cudaMemGetInfo failed\n"); return 1; }
    r = size_bodies(&s, n);
    made = now_since(t0);
    d.engine = NBODY_ENGINE_CUDA_TREE; d.devices = D; d.softening = (nbody_real)1e-3; d.dt = (nbody_real)1e-5;
    d.quadrupole = 1; d.theta = (nbody_real)theta;
    if (r == NBODY_OK) r = nbody_create(&sim, &d, &s);
    for (k = 0; k < 5 && r == NBODY_OK; ++k) {
        double ts = now();
        r = nbody_step(sim);
        t[k] = 1e3 * (now() - ts);
    }
    if (r == NBODY_OK && !size_used(D, used, &low)) r = NBODY_ERR_DEVICE;
    nbody_destroy(sim);
    if (r == NBODY_OK) {
        a = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
        r = a ? nbody_accelerations(&d, &s, a, a + n, a + 2 * n) : NBODY_ERR_OUT_OF_MEMORY;
    }
    if (r == NBODY_OK) size_errors(&s, a, 1e-3, K, err);
    printf("| %.0f (2^%.2f) | %d | quadrupole %.2g |", (double)n, log2((double)n), D, theta);
    if (r != NBODY_OK) {
        printf(" failed: %s (bodies made at %.0f s, now %.0f s) | | | |\n", nbody_result_string(r), made, now_since(t0));
    } else {
        qsort(t + 2, 3, sizeof t[0], cmp_double);
        printf(" %.1f |", t[3]);
        for (g = 0; g < D; ++g) printf(" %.2f%s", (used[g] - base[g]) / 1e9, g + 1 < D ? " /" : " |");
        printf(" %.0f | %.2e / %.2e / %.2e (%lu bodies) | %.0f s |\n", (used[0] - base[0]) / (double)n, err[0], err[1], err[2],
               (unsigned long)K, now_since(t0));
        pts[*npts][0] = (double)n; pts[*npts][1] = used[0] - base[0]; ++*npts;
    }
    fflush(stdout);
    free(a);
    nbody_system_free(&s);
    return r != NBODY_OK;
}

static int size_mode(int D, int argc, char **argv) {
    const char *qt = getenv("MULTI_QUAD_THETA"), *fill = getenv("MULTI_FILL"), *ks = getenv("MULTI_SAMPLE");
    double theta = qt ? atof(qt) : 1.0, pts[64][2], t0 = now();
    size_t K = ks ? (size_t)atol(ks) : 1000;
    int i, npts = 0, fails = 0;
    printf("## How many bodies %d GPUs hold (float, Plummer union of 64, softening 1e-3, divided build)\n\n", D);
    printf("| N | GPUs | moments, theta | ms per step | GB held a GPU | bytes a body (GPU 0) | relative force error median / p90 / p99 | "
           "since start |\n|---:|---:|---|---:|---|---:|---|---:|\n");
    for (i = 0; i < argc && i < 64 && K > 0; ++i) {
        size_t n;
        if (!strcmp(argv[i], "max")) {
            double base[16], low, b, fixed = 0;
            if (npts == 0 || !size_used(D, base, &low)) { printf("size: max needs a measured row before it\n"); return 1; }
            b = pts[npts - 1][1] / pts[npts - 1][0];
            if (npts > 1 && pts[npts - 1][0] > pts[0][0]) {   /* the slope of the first and last rows, and its intercept */
                b = (pts[npts - 1][1] - pts[0][1]) / (pts[npts - 1][0] - pts[0][0]);
                fixed = pts[0][1] - b * pts[0][0];
            }
            n = (size_t)(((fill ? atof(fill) : 0.9) * low - (fixed > 0 ? fixed : 0)) / b) / 1024 * 1024;
            printf("| (max: %.1f bytes a body + %.2f GB, %.1f GB free on the fullest GPU) | | | | | | | |\n", b, fixed / 1e9, low / 1e9);
        } else {
            n = (size_t)llround(pow(2.0, atof(argv[i])));
        }
        fails += size_row(D, n, theta, K, t0, pts, &npts);
    }
    return fails != 0;
}

int main(int argc, char **argv) {
    int D = argc > 1 ? atoi(argv[1]) : 2, quick = argc > 2 && !strcmp(argv[2], "quick"), g;
    const char *prec = sizeof(nbody_real) == sizeof(float) ? "float" : "double";
    struct { nbody_engine e; size_t n; } strong[] = {
        {NBODY_ENGINE_CUDA, (size_t)1 << 18}, {NBODY_ENGINE_CUDA, (size_t)1 << 20},
        {NBODY_ENGINE_CUDA_TREE, (size_t)1 << 22}, {NBODY_ENGINE_CUDA_TREE, (size_t)1 << 24}};
    struct { nbody_engine e; size_t per; } weak[] = {{NBODY_ENGINE_CUDA, (size_t)1 << 18}, {NBODY_ENGINE_CUDA_TREE, (size_t)1 << 23}};
    unsigned i;
    if (argc > 2 && !strcmp(argv[2], "tree")) return tree_mode(D, argc - 3, argv + 3);
    if (argc > 2 && !strcmp(argv[2], "size")) return size_mode(D, argc - 3, argv + 3);
    if (quick) { strong[1].n = (size_t)1 << 19; strong[3].n = (size_t)1 << 23; weak[1].per = (size_t)1 << 22; }
    printf("## Strong scaling (%s): ms per leapfrog step, the same N on 1..%d GPUs\n\n", prec, D);
    printf("| engine | N | GPUs | tree walks | ms / step | speed-up | efficiency | GPU 0's leaves |\n|---|---:|---:|---|---:|---:|---:|---:|\n");
    for (i = 0; i < sizeof strong / sizeof *strong; ++i) {
        double share, t1 = step_ms(strong[i].e, strong[i].n, 1, 1, 0, &share);
        int tree = strong[i].e == NBODY_ENGINE_CUDA_TREE, v;
        static const char *const walks[] = {"by time", "by count", "by time, 1024 threads"};
        printf("| %s | 2^%d | 1 | | %.3f | 1 | 100%% | |\n", nbody_engine_name(strong[i].e), (int)(__builtin_ctzll(strong[i].n)), t1);
        fflush(stdout);
        for (g = 2; g <= D; g *= 2)
            for (v = 0; v < (tree ? 3 : 1); ++v) {
                double tg = step_ms(strong[i].e, strong[i].n, g, v != 1, v == 2 ? 1024 : 0, &share);
                printf("| %s | 2^%d | %d | %s | %.3f | %.2fx | %.0f%% | ", nbody_engine_name(strong[i].e), (int)(__builtin_ctzll(strong[i].n)),
                       g, tree ? walks[v] : "", tg, t1 / tg, 100 * t1 / tg / g);
                if (share >= 0) printf("%.4f |\n", share); else printf("|\n");
                fflush(stdout);
            }
    }
    printf("\n## Weak scaling (%s): N per GPU fixed\n\n", prec);
    printf("| engine | N per GPU | GPUs | N | ms / step | interactions per GPU (dense) / bodies per GPU (tree) per s |\n|---|---:|---:|---:|---:|---:|\n");
    for (i = 0; i < sizeof weak / sizeof *weak; ++i)
        for (g = 1; g <= D; g *= 2) {
            size_t n = weak[i].per * (size_t)g;
            double share, t = step_ms(weak[i].e, n, g, 1, 0, &share);
            double rate = weak[i].e == NBODY_ENGINE_CUDA ? (double)n * (double)n / g / (t / 1e3) : (double)n / g / (t / 1e3);
            printf("| %s | 2^%d | %d | 2^%d | %.3f | %.3g |\n", nbody_engine_name(weak[i].e), (int)__builtin_ctzll(weak[i].per), g,
                   (int)__builtin_ctzll(n), t, rate);
            fflush(stdout);
        }
    return 0;
}
