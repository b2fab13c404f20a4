/* bench_gpu.c - the CUDA engines: dense interactions/s against the plain tile kernel (the
   article's and the CUDA sample's design, compiled into the same nbody_cuda.o), tree time per
   force evaluation (build included) against N and theta, block-size sweeps like the
   article's Tables 5-7, and its Table 3 (best CPU engine against the GPU).
   Precision is NBODY_REAL's: `make bench-cuda` builds and runs a double and a float binary.
   Times are medians of wall-clock times of e.ops->derivative followed by a download of one
   value (the download waits for the GPU). Without NBODY_WITH_CUDA it says so and exits 0.
   Optional argument: "quick" (smaller sizes). */
#define _POSIX_C_SOURCE 199309L
#define NBODY_IMPLEMENTATION
#include "../nbody.h"
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifndef NBODY_WITH_CUDA
int main(void) {
    printf("bench_gpu: built without CUDA (make bench-cuda WITH_CUDA=1)\n");
    return 0;
}
#else
void nbody__cuda_bench_config(nbody__engine *e, int variant, int block, int bodies_per_thread);
void nbody__cuda_bench_choice(nbody__engine *e, int *block, int *bodies_per_thread, int *symmetric);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct bench {
    nbody__engine e;
    nbody__buf y, f;
    int ok;
} bench;

static int bench_open(bench *b, nbody_engine engine, const nbody_system *s, double theta, int block) {
    nbody_desc d = {0};
    const nbody_real *f[6];
    int i;
    memset(b, 0, sizeof *b);
    d.engine = engine; d.softening = (nbody_real)1e-3; d.theta = (nbody_real)theta; d.block_size = block;
    d = nbody__desc_defaults(&d);
    if (nbody__engine_start(&b->e, &d, s->n, s->m) != NBODY_OK) return 0;
    if (b->e.ops->alloc(&b->e, 6 * s->n, &b->y) != NBODY_OK || b->e.ops->alloc(&b->e, 6 * s->n, &b->f) != NBODY_OK) return 0;
    f[0] = s->x; f[1] = s->y; f[2] = s->z; f[3] = s->vx; f[4] = s->vy; f[5] = s->vz;
    for (i = 0; i < 6; ++i)
        if (b->e.ops->upload(&b->e, b->y, (size_t)i * s->n, f[i], s->n) != NBODY_OK) return 0;
    b->ok = 1;
    return 1;
}

static void bench_close(bench *b) {
    if (b->e.ops) { b->e.ops->release(&b->e, b->y); b->e.ops->release(&b->e, b->f); }
    nbody__engine_stop(&b->e);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median seconds per derivative over reps runs, after one untimed run (tuning, loading) */
static double bench_time(bench *b, int reps) {
    double t[16];
    nbody_real one;
    int k;
    if (!b->ok) return -1;
    if (b->e.ops->derivative(&b->e, b->y, b->f) != NBODY_OK || b->e.ops->download(&b->e, &one, b->f, 3 * b->e.n, 1) != NBODY_OK)
        return -1;
    if (reps > 16) reps = 16;
    for (k = 0; k < reps; ++k) {
        double t0 = now();
        if (b->e.ops->derivative(&b->e, b->y, b->f) != NBODY_OK || b->e.ops->download(&b->e, &one, b->f, 3 * b->e.n, 1) != NBODY_OK)
            return -1;
        t[k] = now() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp);
    return t[reps / 2];
}

/* variant (CUDA dense): 0 the one-sided kernel, 1 the plain tile kernel, 2 the symmetric;
   block 0: tuned, and the choice returned through chosen_* (kernel: "" or " sym") */
static double time_engine(nbody_engine engine, const nbody_system *s, double theta, int block, int variant, int rb,
                          int reps, int *chosen_block, int *chosen_rb, const char **chosen_kernel) {
    bench b;
    double t = -1;
    if (bench_open(&b, engine, s, theta, block)) {
        if (engine == NBODY_ENGINE_CUDA || engine == NBODY_ENGINE_CUDA_TREE) nbody__cuda_bench_config(&b.e, variant, block, rb);
        t = bench_time(&b, reps);
        if (chosen_block) {
            int sym = 0;
            nbody__cuda_bench_choice(&b.e, chosen_block, chosen_rb, &sym);
            if (chosen_kernel) *chosen_kernel = sym ? " sym" : "";
        }
    }
    bench_close(&b);
    return t;
}

static void plummer(nbody_system *s, size_t n) {
    nbody_system_free(s);
    nbody_ic_plummer(s, n, 42);
}

/* masses spread by +-20% about their value (same total within rounding): the dense
   kernel's general form, where equal masses take the UNI form */
static void unequal_masses(nbody_system *s) {
    size_t i;
    for (i = 0; i < s->n; ++i) s->m[i] *= (nbody_real)(1 + 0.2 * (((double)((i * 2654435761u) % 1000) / 999.0) * 2 - 1));
}

/* dense /s for forced B x R, N = s->n, equal masses | unequal: variant 0 one-sided, 2 symmetric */
static void forced_table(const nbody_system *s, int variant, const int *blocks, int nblocks) {
    double inter = (double)s->n * (double)s->n;
    nbody_system u = {0};
    int k, r;
    nbody_system_alloc(&u, s->n);
    nbody_system_copy(&u, s);
    unequal_masses(&u);
    printf("\n## probe, %s: dense %s forced, N = %lu, /s (equal masses | unequal)\n\n| B \\ R | 1 | 2 | 4 | 8 |\n"
           "| ---: | ---: | ---: | ---: | ---: |\n", sizeof(nbody_real) == sizeof(float) ? "float" : "double",
           variant == 2 ? "symmetric" : "one-sided", (unsigned long)s->n);
    for (k = 0; k < nblocks; ++k) {
        printf("| %d |", blocks[k]);
        for (r = 1; r <= 8; r *= 2)
            printf(" %.3g \\| %.3g |", inter / time_engine(NBODY_ENGINE_CUDA, s, 0, blocks[k], variant, r, 3, NULL, NULL, NULL),
                   inter / time_engine(NBODY_ENGINE_CUDA, &u, 0, blocks[k], variant, r, 3, NULL, NULL, NULL));
        printf("\n");
        fflush(stdout);
    }
    nbody_system_free(&u);
}

/* `bench_gpu probe`: the figures the issue names, tuned and against forced configurations,
   for tuning the kernels (dense at 2^18..2^20 with equal and unequal masses; tree up to 2^24
   with both walks); `bench_gpu tuned`: the first table alone */
static void probe(int full) {
    static const int bs[] = {128, 256, 512, 1024}, sym_bs[] = {64, 96, 128, 192, 256};
    const char *prec = sizeof(nbody_real) == sizeof(float) ? "float" : "double";
    nbody_system s = {0};
    int lg, k, r, cb, cr;
    const char *ck = "";
    printf("## probe, %s: dense tuned\n\n| N | masses | s | /s | B x R |\n| ---: | --- | ---: | ---: | ---: |\n", prec);
    for (lg = 18; lg <= 20; ++lg) {
        double inter = (double)((size_t)1 << lg) * (double)((size_t)1 << lg), t;
        plummer(&s, (size_t)1 << lg);
        for (k = 0; k < 2; ++k) {
            if (k) unequal_masses(&s);
            t = time_engine(NBODY_ENGINE_CUDA, &s, 0, 0, 0, 0, 3, &cb, &cr, &ck);
            printf("| 2^%d | %s | %.4g | %.3g | %d x %d%s |\n", lg, k ? "unequal" : "equal", t, inter / t, cb, cr, ck);
            fflush(stdout);
        }
    }
    if (!full) {
        nbody_system_free(&s);
        return;
    }
    plummer(&s, (size_t)1 << 19);
    forced_table(&s, 0, bs, 4);
    forced_table(&s, 2, sym_bs, 5);
    printf("\n## probe, %s: tree theta 0.5, s per evaluation (tuned; forced B x walk 1 = thread, 2 = warp)\n\n| N | tuned | B x walk |", prec);
    for (k = 0; k < 4; ++k) printf(" %d x 1 | %d x 2 |", bs[k], bs[k]);
    printf("\n| ---: | ---: | ---: |");
    for (k = 0; k < 8; ++k) printf(" ---: |");
    printf("\n");
    for (lg = 20; lg <= 24; lg += 2) {
        double t;
        plummer(&s, (size_t)1 << lg);
        t = time_engine(NBODY_ENGINE_CUDA_TREE, &s, 0.5, 0, 0, 0, 3, &cb, &cr, &ck);
        printf("| 2^%d | %.4g | %d x %d |", lg, t, cb, cr);
        for (k = 0; k < 4; ++k)
            for (r = 1; r <= 2; ++r) printf(" %.4g |", time_engine(NBODY_ENGINE_CUDA_TREE, &s, 0.5, bs[k], 0, r, 3, NULL, NULL, NULL));
        printf("\n");
        fflush(stdout);
    }
    nbody_system_free(&s);
}

int main(int argc, char **argv) {
    static const int blocks[] = {8, 16, 32, 64, 128, 256, 512, 1024};
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    const char *prec = sizeof(nbody_real) == sizeof(float) ? "float" : "double";
    nbody_system s = {0};
    int lg, k;
    const char *ck = "";

    if (argc > 1 && (strcmp(argv[1], "probe") == 0 || strcmp(argv[1], "tuned") == 0)) {
        probe(argv[1][0] == 'p');
        return 0;
    }
    if (argc > 4 && (strcmp(argv[1], "one") == 0 || strcmp(argv[1], "sym") == 0)) {
        /* one|sym N B R [u]: forced dense runs, one-sided or symmetric kernel (B, R = 0: 128..1024, 1..8) */
        size_t n = (size_t)atol(argv[2]);
        int b0 = atoi(argv[3]), r0 = atoi(argv[4]), b, r, variant = argv[1][0] == 's' ? 2 : 0;
        plummer(&s, n);
        if (argc > 5) unequal_masses(&s);
        for (b = b0 ? b0 : 128; b <= (b0 ? b0 : 1024); b *= 2)
            for (r = r0 ? r0 : 1; r <= (r0 ? r0 : 8); r *= 2) {
                double t = time_engine(NBODY_ENGINE_CUDA, &s, 0, b, variant, r, 3, NULL, NULL, NULL);
                printf("%s: N %lu %s B %d R %d: %.4g s, %.3g /s\n", argv[1], (unsigned long)n, argc > 5 ? "unequal" : "equal", b, r, t,
                       (double)n * (double)n / t);
            }
        nbody_system_free(&s);
        return 0;
    }
    printf("## Dense forces, %s, one evaluation (interactions = N^2)\n\n", prec);
    printf("| N | plain tile kernel (B=256) s | plain /s | nbody cuda s | nbody /s | tuned B x R | speed-up | unequal masses /s |\n");
    printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (lg = 14; lg <= (quick ? 17 : 20); ++lg) {
        size_t n = (size_t)1 << lg;
        double inter = (double)n * (double)n, tp, tn;
        int cb = 0, cr = 0;
        plummer(&s, n);
        tp = time_engine(NBODY_ENGINE_CUDA, &s, 0, 256, 1, 0, 3, NULL, NULL, NULL);
        tn = time_engine(NBODY_ENGINE_CUDA, &s, 0, 0, 0, 0, 3, &cb, &cr, &ck);
        printf("| 2^%d | %.4g | %.3g | %.4g | %.3g | %d x %d%s | %.2f |", lg, tp, inter / tp, tn, inter / tn, cb, cr, ck, tp / tn);
        if (lg >= 18) {        /* the general kernel (equal masses take the UNI form) */
            unequal_masses(&s);
            printf(" %.3g |\n", inter / time_engine(NBODY_ENGINE_CUDA, &s, 0, 0, 0, 0, 3, NULL, NULL, NULL));
        } else {
            printf(" |\n");
        }
        fflush(stdout);
    }

    printf("\n## Tree (CUDA_TREE), %s, Plummer, theta 0.5, one evaluation with the GPU build\n\n", prec);
    printf("| N | time s | tuned B x walk (1 thread, 2 warp) |\n| ---: | ---: | ---: |\n");
    for (lg = 16; lg <= (quick ? 20 : 24); lg += (lg < 20 ? 2 : 1)) {
        int cb = 0, cr = 0;
        double t;
        plummer(&s, (size_t)1 << lg);
        t = time_engine(NBODY_ENGINE_CUDA_TREE, &s, 0.5, 0, 0, 0, 3, &cb, &cr, &ck);
        printf("| 2^%d | %.4g | %d x %d |\n", lg, t, cb, cr);
        fflush(stdout);
    }

    printf("\n## Tree against theta, %s, Plummer N = 2^20\n\n| theta | time s |\n| ---: | ---: |\n", prec);
    plummer(&s, (size_t)1 << 20);
    for (k = 0; k < 5; ++k) {
        static const double th[] = {0.25, 0.35, 0.5, 0.7, 1.0};
        printf("| %.2f | %.4g |\n", th[k], time_engine(NBODY_ENGINE_CUDA_TREE, &s, th[k], 0, 0, 0, 3, NULL, NULL, NULL));
        fflush(stdout);
    }

    {
        size_t nd = quick ? (size_t)1 << 15 : (size_t)1 << 17;
        printf("\n## Block size sweep (as the article's Tables 5-7), %s, seconds per evaluation; dense N = %lu, tree N = 2^20\n\n",
               prec, (unsigned long)nd);
        printf("| kernel \\ B |");
        for (k = 0; k < 8; ++k) printf(" %d |", blocks[k]);
        printf("\n| --- |");
        for (k = 0; k < 8; ++k) printf(" ---: |");
        printf("\n");
        plummer(&s, nd);
        printf("| cuda+dense plain tile |");
        for (k = 0; k < 8; ++k) printf(" %.4g |", time_engine(NBODY_ENGINE_CUDA, &s, 0, blocks[k], 1, 0, 1, NULL, NULL, NULL));
        printf("\n| cuda+dense nbody, R=1 |");
        for (k = 0; k < 8; ++k) printf(" %.4g |", time_engine(NBODY_ENGINE_CUDA, &s, 0, blocks[k], 0, 1, 1, NULL, NULL, NULL));
        printf("\n| cuda+dense nbody, R=4 |");
        for (k = 0; k < 8; ++k) printf(" %.4g |", time_engine(NBODY_ENGINE_CUDA, &s, 0, blocks[k], 0, 4, 1, NULL, NULL, NULL));
        plummer(&s, (size_t)1 << 20);
        printf("\n| cuda+heap+nested+ldg+stackless, GPU build, thread walk |");
        for (k = 0; k < 8; ++k) printf(" %.4g |", time_engine(NBODY_ENGINE_CUDA_TREE, &s, 0.5, blocks[k], 0, 1, 3, NULL, NULL, NULL));
        printf("\n| same, warp walk |");
        for (k = 0; k < 8; ++k) printf(" %.4g |", time_engine(NBODY_ENGINE_CUDA_TREE, &s, 0.5, blocks[k], 0, 2, 3, NULL, NULL, NULL));
        printf("\n");
        fflush(stdout);
    }

    printf("\n## Table 3: seconds per evaluation, best CPU engine (BLOCK, all host cores) against the GPU, %s\n\n", prec);
    printf("| engine \\ N | 4096 | 8192 | 16384 | 32768 | 65536 | 131072 |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    {
        static const nbody_engine engines[] = {NBODY_ENGINE_BLOCK, NBODY_ENGINE_CUDA, NBODY_ENGINE_CUDA_TREE};
        static const char *names[] = {"CPU block (openmp+block+simd)", "CUDA dense, H100", "CUDA tree theta 0.5, H100"};
        int e;
        for (e = 0; e < 3; ++e) {
            printf("| %s |", names[e]);
            for (lg = 12; lg <= 17; ++lg) {
                plummer(&s, (size_t)1 << lg);
                if (e == 0 && quick && lg > 14) { printf(" - |"); continue; }
                printf(" %.4g |", time_engine(engines[e], &s, 0.5, 0, 0, 0, e == 0 ? 1 : 3, NULL, NULL, NULL));
                fflush(stdout);
            }
            printf("\n");
        }
    }
    nbody_system_free(&s);
    return 0;
}
#endif
