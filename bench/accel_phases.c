/* accel_phases.c - where the time of one nbody_accelerations call with BLOCK goes: the engine's
   start, the two state buffers' allocation (6 n reals each, the desc's allocator), the upload,
   the evaluation (the force kernel and its threads), the download and the release, each timed
   on its own by running the call's steps (as nbody_accelerations runs them for a device engine,
   and ran them for every engine before a CPU engine's call read the caller's arrays in place)
   with the clock between them. bench/bench_block.c times the whole call; this says which part
   differs between two builds (the Windows build under Wine against the Linux build:
   bench/wine_vs_linux.sh), and what the state buffers cost.
   With "reuse" the desc's allocator keeps freed blocks for the next call (what a program that
   evaluates often can pass in desc.allocator), so the buffers' pages are not fresh each call.
   gap_ms: the caller's own work (a busy loop) before each call, untimed: longer than the worker
   set's spin (NBODY__POOL_SPIN), its workers are asleep when each evaluation starts.
       cc -O2 -fopenmp -I. bench/accel_phases.c -lm && ./a.out [n] [reps] [threads] [malloc|reuse] [gap_ms]
   Prints one line: "PHASES double avx512 N=4096 threads=2 malloc gap=0ms: best/median ms start ... total". */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>

#define PHASES 7   /* start, alloc, upload, evaluate, download, release, the call */
static const char *const phase_name[PHASES] = {"start", "alloc", "upload", "evaluate", "download", "release", "total"};

/* a last-freed block per size, handed out again (4 slots: the call allocates two blocks) */
static void *kept[4];
static size_t kept_size[4];
static void *reuse_alloc(size_t size, void *user) {
    int i;
    size_t *p;
    (void)user;
    for (i = 0; i < 4; ++i)
        if (kept[i] && kept_size[i] == size) { void *q = kept[i]; kept[i] = NULL; return q; }
    p = (size_t *)malloc(size + 64);   /* the size in front, 64 bytes: the block keeps malloc's alignment */
    if (!p) return NULL;
    p[0] = size;
    return (char *)p + 64;
}
static void reuse_free(void *q, void *user) {
    int i;
    (void)user;
    if (!q) return;
    for (i = 0; i < 4; ++i)
        if (!kept[i]) { kept[i] = q; kept_size[i] = *(size_t *)(void *)((char *)q - 64); return; }
    free((char *)q - 64);
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* one call's phases (seconds), the steps of nbody_accelerations with the clock between them */
static unsigned long y_mod64, f_mod64;   /* the state buffers' addresses mod 64 (the last call's) */
static int timed_call(const nbody_desc *desc, const nbody_system *s, nbody_real *a, double *t) {
    nbody_desc d = nbody__desc_defaults(desc);
    nbody__engine e;
    nbody__buf y = NULL, f = NULL;
    nbody_result r;
    size_t n = s->n;
    double c[PHASES];
    int i;
    c[0] = nbody__wall_seconds();
    if (nbody__engine_start(&e, &d, n, s->m) != NBODY_OK) return 0;
    c[1] = nbody__wall_seconds();
    r = e.ops->alloc(&e, 6 * n, &y);
    if (r == NBODY_OK) r = e.ops->alloc(&e, 6 * n, &f);
    c[2] = nbody__wall_seconds();
    y_mod64 = (unsigned long)((size_t)y % 64); f_mod64 = (unsigned long)((size_t)f % 64);
    if (r == NBODY_OK) r = nbody__upload_system(&e, y, s);
    c[3] = nbody__wall_seconds();
    if (r == NBODY_OK) r = e.ops->derivative(&e, y, f);
    c[4] = nbody__wall_seconds();
    if (r == NBODY_OK) r = e.ops->download(&e, a, f, 3 * n, n);
    if (r == NBODY_OK) r = e.ops->download(&e, a + n, f, 4 * n, n);
    if (r == NBODY_OK) r = e.ops->download(&e, a + 2 * n, f, 5 * n, n);
    c[5] = nbody__wall_seconds();
    if (y) e.ops->release(&e, y);
    if (f) e.ops->release(&e, f);
    nbody__engine_stop(&e);
    c[6] = nbody__wall_seconds();
    for (i = 0; i < PHASES - 1; ++i) t[i] = c[i + 1] - c[i];
    t[PHASES - 1] = c[6] - c[0];
    return r == NBODY_OK;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 4096;
    int reps = argc > 2 ? atoi(argv[2]) : 15, threads = argc > 3 ? atoi(argv[3]) : 2, r, p;
    int reuse = argc > 4 && strcmp(argv[4], "reuse") == 0;
    double gap = argc > 5 ? atof(argv[5]) * 1e-3 : 0;
    nbody_system s;
    nbody_desc d;
    nbody_sim *sim = NULL;
    nbody_real *a;
    double *t;
    if (reps < 1 || n < 2) return 1;
    a = (nbody_real *)malloc(3 * n * sizeof *a);
    t = (double *)malloc((size_t)reps * PHASES * sizeof *t);
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
    if (!a || !t || nbody_ic_plummer(&s, n, 2026) != NBODY_OK) return 1;
    d.engine = NBODY_ENGINE_BLOCK; d.threads = threads; d.softening = (nbody_real)0.01;
    if (reuse) { d.allocator.alloc = reuse_alloc; d.allocator.free = reuse_free; }
    if (nbody_create(&sim, &d, &s) != NBODY_OK) return 1;   /* as bench_block: a simulation exists */
    for (r = 0; r < reps; ++r) {
        double t0 = nbody__wall_seconds();
        while (nbody__wall_seconds() - t0 < gap) {}
        if (!timed_call(&d, &s, a, t + (size_t)r * PHASES)) return 1;
    }
    printf("PHASES %s %s N=%lu threads=%d %s gap=%gms: best/median ms", sizeof(nbody_real) == sizeof(float) ? "float" : "double",
           nbody_simd_name(sim), (unsigned long)n, threads, reuse ? "reuse" : "malloc", gap * 1e3);
    for (p = 0; p < PHASES; ++p) {
        double *v = (double *)malloc((size_t)reps * sizeof *v);
        if (!v) return 1;
        for (r = 0; r < reps; ++r) v[r] = t[(size_t)r * PHASES + (size_t)p];
        qsort(v, (size_t)reps, sizeof *v, by_value);
        printf(" %s %.3f/%.3f", phase_name[p], v[0] * 1e3, v[reps / 2] * 1e3);
        free(v);
    }
    printf(" | buffers mod 64: %lu %lu\n", y_mod64, f_mod64);
    nbody_destroy(sim); nbody_system_free(&s); free(a); free(t);
    return 0;
}
