/* hermite_kernel_ab.c - NBODY_HERMITE's BLOCK kernels of two builds of nbody.h, timed call by
   call in alternation inside one process: on a machine shared with other work (frequency and
   caches changing by the second) the ratio of the two builds' fastest calls moves by a percent
   or two where separate runs of one build differ by 20-50 %. Measured: one tile (8 targets
   against a chunk of sources), the one-target kernel (sources in the lanes) or the predictor
   (every body of a chunk), per source, at one SIMD level and order.
   bench/hermite_kernel_ab.sh builds it: the file compiled twice as a shared library, each
   against one build's nbody.h (-DKAB_SIDE=a or b, hidden symbols but two), and once as the
   driver (no KAB_SIDE) linked to both.
       driver: hermite_kernel_ab level order what chunk calls   (what: tile, lanes, predict)
   prints each side's fastest and median call in ns per source, b / a of both, whether the two
   builds gave the same sums (bits), and each side's largest relative difference of the tile's
   terms from the portable double tile. */
#define _POSIX_C_SOURCE 200112L   /* clock_gettime, posix_memalign */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct kab_result {
    double seconds, check, portable_diff;
} kab_result;

#ifdef KAB_SIDE
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#define KAB_CAT2(a, b) a##b
#define KAB_CAT(a, b) KAB_CAT2(a, b)
#define KAB_NAME(f) KAB_CAT(KAB_CAT(kab_, KAB_SIDE), f)
#define KAB_EXPORT __attribute__((visibility("default")))

static nbody_real *src_mem, *state_mem;
static unsigned long long *ticks;
static nbody__hermite_src S;
static nbody__hermite_tile_in T;
static nbody__hermite_op op;
static size_t n;

static nbody_real uniform(unsigned long long *seed) {   /* in [-0.5, 0.5) */
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (nbody_real)((double)(*seed >> 11) / 9007199254740992.0 - 0.5);
}

/* sources: positions, velocities, accelerations in [-0.5, 0.5), masses 1/n; targets: sources
   3, 3 + n/8, ...; predictor: random states, bodies at twelve levels */
KAB_EXPORT int KAB_NAME(_setup)(size_t chunk) {
    unsigned long long seed = 12345;
    size_t i, l;
    void *p;
    int k;
    n = chunk;
    /* page-aligned, so that both builds see the same layout (the predictor's speed depends on
       where its rows fall: 4K aliasing) */
    if (n < 64 || posix_memalign(&p, 4096, 10 * n * sizeof *src_mem)) return 1;
    src_mem = (nbody_real *)p;
    if (posix_memalign(&p, 4096, 27 * n * sizeof *state_mem)) return 1;
    state_mem = (nbody_real *)p;
    if (posix_memalign(&p, 4096, n * sizeof *ticks)) return 1;
    ticks = (unsigned long long *)p;
    for (i = 0; i < 9 * n; ++i) src_mem[i] = uniform(&seed);
    for (i = 9 * n; i < 10 * n; ++i) src_mem[i] = (nbody_real)(1.0 / (double)n);
    for (i = 0; i < 27 * n; ++i) state_mem[i] = uniform(&seed);
    for (i = 0; i < n; ++i) ticks[i] = (1ULL << 30) - (1ULL << (i % 12));
    S.x = src_mem; S.y = src_mem + n; S.z = src_mem + 2 * n; S.vx = src_mem + 3 * n; S.vy = src_mem + 4 * n;
    S.vz = src_mem + 5 * n; S.ax = src_mem + 6 * n; S.ay = src_mem + 7 * n; S.az = src_mem + 8 * n; S.m = src_mem + 9 * n;
    S.n = n; S.eps2 = 0;
    for (l = 0; l < NBODY__HERMITE_TW; ++l) {
        T.idx[l] = 3 + l * (n / NBODY__HERMITE_TW);
        for (k = 0; k < 9; ++k) T.t[k][l] = src_mem[(size_t)k * n + T.idx[l]];
    }
    memset(&op, 0, sizeof op);
    op.base = state_mem; op.force = state_mem + 6 * n; op.high = state_mem + 12 * n; op.pred = state_mem + 18 * n;
    op.pred_acc = state_mem + 24 * n; op.ticks = ticks; op.now = 1ULL << 30; op.tick = (nbody_real)1e-9; op.span = -1;
    return 0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the largest |a - b| / max|b| over each term row of a tile's sums */
static double tile_diff(const double *a, const double *b, int rows) {
    double w = 0;
    int k, l;
    for (k = 0; k < rows; ++k) {
        double big = 0, d = 0;
        for (l = 0; l < NBODY__HERMITE_TW; ++l) big = fmax(big, fabs(b[k * NBODY__HERMITE_TW + l]));
        for (l = 0; l < NBODY__HERMITE_TW; ++l) d = fmax(d, fabs(a[k * NBODY__HERMITE_TW + l] - b[k * NBODY__HERMITE_TW + l]));
        if (big > 0) w = fmax(w, d / big);
    }
    return w;
}

/* one call of `what` (0 tile, 1 lanes, 2 predict) at SIMD level `level` and `order` */
KAB_EXPORT kab_result KAB_NAME(_call)(int level, int order, int what) {
    nbody__hermite_tile_fn tile;
    nbody__hermite_lanes_fn lanes;
    nbody__hermite_predict_fn predict = nbody__hermite_predict_for((nbody_simd)level);
    double sums[9 * NBODY__HERMITE_TW], ref[9 * NBODY__HERMITE_TW], t0;
    kab_result r;
    size_t c;
    int k, rows = order == 6 ? 9 : 6;
    S.snap = order == 6; op.order = order;
    nbody__hermite_kernels_for((nbody_simd)level, &tile, &lanes);
    memset(sums, 0, sizeof sums);
    t0 = now();
    if (what == 0) tile(&S, 0, n, &T, sums);
    else if (what == 1) lanes(&S, 0, n, T.idx[1], sums);
    else for (c = 0; c < n; c += 256) predict(n, &op, c, c + 256 < n ? c + 256 : n);
    r.seconds = now() - t0;
    r.check = 0;
    if (what == 2) for (c = 0; c < 9 * n; ++c) r.check += (double)((const nbody_real *)op.pred)[c] * (double)(c + 1);
    else for (k = 0; k < 9 * NBODY__HERMITE_TW; ++k) r.check += sums[k] * (k + 1);
    nbody__hermite_tile_portable(&S, 0, n, &T, ref);
    if (what == 0) r.portable_diff = tile_diff(sums, ref, rows);
    else r.portable_diff = 0;
    return r;
}

#else /* the driver */
int kab_a_setup(size_t chunk);
int kab_b_setup(size_t chunk);
kab_result kab_a_call(int level, int order, int what);
kab_result kab_b_call(int level, int order, int what);

static int by_value(const void *p, const void *q) {
    double a = *(const double *)p, b = *(const double *)q;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
    static const char *whats[] = {"tile", "lanes", "predict"};
    int level, order, what = -1, calls, r, k, same = 1;
    size_t chunk;
    double *ta, *tb, per, diff_a = 0, diff_b = 0;
    if (argc != 6) {
        fprintf(stderr, "usage: %s level order tile|lanes|predict chunk calls (level: 1 portable, 2 avx2, 3 avx512)\n", argv[0]);
        return 2;
    }
    level = atoi(argv[1]); order = atoi(argv[2]); chunk = (size_t)strtoul(argv[4], NULL, 10); calls = atoi(argv[5]);
    for (k = 0; k < 3; ++k) if (strcmp(argv[3], whats[k]) == 0) what = k;
    ta = (double *)malloc((size_t)calls * sizeof *ta); tb = (double *)malloc((size_t)calls * sizeof *tb);
    if (what < 0 || calls < 1 || !ta || !tb || kab_a_setup(chunk) || kab_b_setup(chunk)) { fprintf(stderr, "bad arguments\n"); return 2; }
    for (r = 0; r < calls; ++r) {
        kab_result a = kab_a_call(level, order, what), b = kab_b_call(level, order, what);
        ta[r] = a.seconds; tb[r] = b.seconds;
        same = same && memcmp(&a.check, &b.check, sizeof a.check) == 0;
        diff_a = a.portable_diff; diff_b = b.portable_diff;
    }
    qsort(ta, (size_t)calls, sizeof *ta, by_value); qsort(tb, (size_t)calls, sizeof *tb, by_value);
    per = 1e9 / (double)chunk;
    printf("| %s | %d | %d | %lu | a %.2f / %.2f | b %.2f / %.2f | %.3f / %.3f | %s | %.1e / %.1e |\n", whats[what], level, order,
           (unsigned long)chunk, ta[0] * per, ta[calls / 2] * per, tb[0] * per, tb[calls / 2] * per, tb[0] / ta[0],
           tb[calls / 2] / ta[calls / 2], same ? "same" : "differ", diff_a, diff_b);
    free(ta); free(tb);
    return 0;
}
#endif
