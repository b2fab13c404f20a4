/* gpusplit.c - the dense CUDA engine on several GPUs (desc.devices, NCCL): the two designs
   measured side by side in one run, against one GPU.
     gather: every GPU receives all positions (all-gather) and runs the one-sided kernel on
             its slice of targets against all n sources (n^2 / D interactions a GPU);
     split:  every GPU receives all positions and runs a share of the symmetric kernel's
             tournament (n^2 / 2D pairs a GPU), then a reduce-scatter of the partial forces;
     auto:   what the engine picks by itself at its first evaluation (logged at INFO).
   One GPU runs its tuned kernel (the symmetric one where it wins). The split uses the
   threads and bodies per thread one GPU chose for the symmetric kernel (128 x 4 otherwise).
   Build: make WITH_CUDA=1 WITH_NCCL=1 build/gpusplit_float (NBODY_REAL=float) or build/gpusplit
   Usage: gpusplit [devices=2] [quick]
   Timing: ms per force evaluation (e.ops->derivative, then one value downloaded from every
   GPU, which waits for all of them), the median of 5 after a warm-up evaluation (the tuning);
   ms per leapfrog step through the public API (nbody_step) for one GPU and auto, as
   bench/multigpu.c times them. Markdown tables on stdout. */
#define _POSIX_C_SOURCE 199309L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void nbody__cuda_bench_config(nbody__engine *e, int variant, int block, int bodies_per_thread);
void nbody__cuda_bench_choice(nbody__engine *e, int *block, int *bodies_per_thread, int *symmetric);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void log_line(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level <= NBODY_LOG_INFO) printf("    log: %s\n", msg);
}

/* ms per force evaluation; variant: -1 auto (tuned), 0 gather, 2 split with block x rb;
   *b, *r, *sym: the configuration that ran. -1 on failure. */
static double eval_ms(size_t n, int devices, int variant, int block, int rb, int *b, int *r, int *sym) {
    nbody_system s = {0};
    nbody_desc d = {0};
    nbody__engine e;
    nbody__buf y = NULL, f = NULL;
    const nbody_real *src[6];
    double t[5];
    int i, k, ok;
    nbody_real v;
    nbody_ic_plummer(&s, n, 1);
    d.engine = NBODY_ENGINE_CUDA; d.devices = devices; d.softening = (nbody_real)0.01;
    d.log.func = log_line;
    d = nbody__desc_defaults(&d);
    memset(&e, 0, sizeof e);
    if (nbody__engine_start(&e, &d, s.n, s.m) != NBODY_OK) { nbody_system_free(&s); return -1; }
    ok = e.ops->alloc(&e, 6 * n, &y) == NBODY_OK && e.ops->alloc(&e, 6 * n, &f) == NBODY_OK;
    src[0] = s.x; src[1] = s.y; src[2] = s.z; src[3] = s.vx; src[4] = s.vy; src[5] = s.vz;
    for (i = 0; i < 6 && ok; ++i) ok = e.ops->upload(&e, y, (size_t)i * n, src[i], n) == NBODY_OK;
    if (variant >= 0) nbody__cuda_bench_config(&e, variant, block, rb);
    for (k = -1; k < 5 && ok; ++k) {
        double t0 = now();
        int g;
        ok = e.ops->derivative(&e, y, f) == NBODY_OK;
        for (g = 0; g < devices && ok; ++g)   /* a value of every GPU's slice: waits for them all */
            ok = e.ops->download(&e, &v, f, 3 * n + (size_t)g * n / (size_t)devices, 1) == NBODY_OK;
        if (k >= 0) t[k] = 1e3 * (now() - t0);
    }
    nbody__cuda_bench_choice(&e, b, r, sym);
    e.ops->release(&e, y); e.ops->release(&e, f);
    nbody__engine_stop(&e);
    nbody_system_free(&s);
    if (!ok) return -1;
    qsort(t, 5, sizeof t[0], cmp_double);
    return t[2];
}

/* ms per leapfrog step through the public API (auto), as bench/multigpu.c */
static double step_ms(size_t n, int devices) {
    nbody_system s = {0};
    nbody_desc d = {0};
    nbody_sim *sim = NULL;
    double t[5];
    int k;
    nbody_result r = nbody_ic_plummer(&s, n, 1);
    d.engine = NBODY_ENGINE_CUDA; d.devices = devices; d.softening = (nbody_real)0.01; d.dt = (nbody_real)1e-5;
    if (r == NBODY_OK) r = nbody_create(&sim, &d, &s);
    nbody_system_free(&s);
    if (r == NBODY_OK) r = nbody_step(sim);
    for (k = 0; k < 5 && r == NBODY_OK; ++k) {
        double t0 = now();
        r = nbody_step(sim);
        t[k] = 1e3 * (now() - t0);
    }
    nbody_destroy(sim);
    if (r != NBODY_OK) return -1;
    qsort(t, 5, sizeof t[0], cmp_double);
    return t[2];
}

static const char *design(int sym) { return sym == 1 ? "split" : sym == 0 ? "gather" : "?"; }

int main(int argc, char **argv) {
    int D = argc > 1 ? atoi(argv[1]) : 2, quick = argc > 2 && !strcmp(argv[2], "quick");
    const char *prec = sizeof(nbody_real) == sizeof(float) ? "float" : "double";
    int strong[2] = {18, 20}, weak[2] = {18, 20}, i;
    if (D < 2) D = 2;
    if (quick) { strong[1] = 19; weak[1] = 19; }
    printf("## Dense %s, strong scaling: ms per force evaluation, the same N on 1 and %d GPUs\n\n", prec, D);
    printf("| N | 1 GPU (kernel) | %d GPUs gather | %d GPUs split | %d GPUs auto (design) | gather speed-up | split speed-up | auto speed-up |\n",
           D, D, D);
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    fflush(stdout);
    for (i = 0; i < 2; ++i) {
        size_t n = (size_t)1 << strong[i];
        int b1, r1, s1, bg, rg, sg, bs, rs, ss, ba, ra, sa;
        double t1 = eval_ms(n, 1, -1, 0, 0, &b1, &r1, &s1);
        double tg = eval_ms(n, D, 0, 0, 0, &bg, &rg, &sg);
        double ts = eval_ms(n, D, 2, s1 == 1 ? b1 : 128, s1 == 1 ? r1 : 4, &bs, &rs, &ss);
        double ta = eval_ms(n, D, -1, 0, 0, &ba, &ra, &sa);
        printf("| 2^%d | %.3f (%s %dx%d) | %.3f | %.3f (%dx%d) | %.3f (%s) | %.2fx | %.2fx | %.2fx |\n", strong[i], t1,
               s1 ? "symmetric" : "one-sided", b1, r1, tg, ts, bs, rs, ta, design(sa), t1 / tg, t1 / ts, t1 / ta);
        fflush(stdout);
    }
    printf("\n## Dense %s, leapfrog steps (public API, auto): ms per step\n\n", prec);
    printf("| N | 1 GPU | %d GPUs | speed-up |\n|---:|---:|---:|---:|\n", D);
    for (i = 0; i < 2; ++i) {
        size_t n = (size_t)1 << strong[i];
        double t1 = step_ms(n, 1), tD = step_ms(n, D);
        printf("| 2^%d | %.3f | %.3f | %.2fx |\n", strong[i], t1, tD, t1 / tD);
        fflush(stdout);
    }
    printf("\n## Dense %s, weak scaling: N per GPU fixed, ms per force evaluation (pair interactions per s a GPU: n^2 / GPUs / t)\n\n", prec);
    printf("| N per GPU | GPUs | N | design | ms | interactions per s a GPU |\n|---:|---:|---:|---|---:|---:|\n");
    for (i = 0; i < 2; ++i) {
        int b1, r1, s1, b, r, sy;
        size_t per = (size_t)1 << weak[i], n2 = per * (size_t)D;
        double t1 = eval_ms(per, 1, -1, 0, 0, &b1, &r1, &s1), t;
        printf("| 2^%d | 1 | 2^%d | %s | %.3f | %.3g |\n", weak[i], weak[i], s1 ? "symmetric" : "one-sided", t1,
               (double)per * (double)per / (t1 / 1e3));
        t = eval_ms(n2, D, 0, 0, 0, &b, &r, &sy);
        printf("| 2^%d | %d | %lu | gather | %.3f | %.3g |\n", weak[i], D, (unsigned long)n2, t, (double)n2 * (double)n2 / D / (t / 1e3));
        t = eval_ms(n2, D, 2, s1 == 1 ? b1 : 128, s1 == 1 ? r1 : 4, &b, &r, &sy);
        printf("| 2^%d | %d | %lu | split | %.3f | %.3g |\n", weak[i], D, (unsigned long)n2, t, (double)n2 * (double)n2 / D / (t / 1e3));
        fflush(stdout);
    }
    return 0;
}
