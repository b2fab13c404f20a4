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
   default; the last column gives the share of the leaves GPU 0 walked. */
#define _POSIX_C_SOURCE 199309L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int nbody__cuda_multi_walk(nbody__engine *e, size_t *w, int set, int balance);   /* nbody_cuda.cu */
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

int main(int argc, char **argv) {
    int D = argc > 1 ? atoi(argv[1]) : 2, quick = argc > 2 && !strcmp(argv[2], "quick"), g;
    const char *prec = sizeof(nbody_real) == sizeof(float) ? "float" : "double";
    struct { nbody_engine e; size_t n; } strong[] = {
        {NBODY_ENGINE_CUDA, (size_t)1 << 18}, {NBODY_ENGINE_CUDA, (size_t)1 << 20},
        {NBODY_ENGINE_CUDA_TREE, (size_t)1 << 22}, {NBODY_ENGINE_CUDA_TREE, (size_t)1 << 24}};
    struct { nbody_engine e; size_t per; } weak[] = {{NBODY_ENGINE_CUDA, (size_t)1 << 18}, {NBODY_ENGINE_CUDA_TREE, (size_t)1 << 23}};
    unsigned i;
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
