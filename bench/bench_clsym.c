/* bench_clsym - the OpenCL engine's two dense kernels, symmetric (each pair once, kernels.cl
   nbody_dense_sym) and one-sided, beside the CUDA engine when it is compiled in: interactions/s
   (N^2 counting, one force evaluation = one derivative on the device) and the force error
   against the direct sum in double on 1024 sampled bodies (Plummer, softening 1e-3, G = 1).
   Rows: the engine's own choice ("auto"), the one-sided kernel, the symmetric kernel forced
   with several work-group sizes x bodies per work-item x rounds a launch, and the CUDA engine
   (its tuner's choice).
   Precision: this file's nbody_real; bench_clsym_float.c includes it with float.
       make build/bench_clsym build/bench_clsym_float          (WITH_OPENCL=1, WITH_CUDA=1 optional)
       ./build/bench_clsym_float [max_n] [min_n]    (default 1048576 65536; N = min_n x 4^k)
   NBODY_OPENCL_DEVICE picks the OpenCL device (bench/device.sh opencl: gpu). */
#define _POSIX_C_SOURCE 200112L            /* clock_gettime */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef NBODY_WITH_OPENCL
int main(void) {
    printf("bench_clsym: built without NBODY_WITH_OPENCL (make WITH_OPENCL=1)\n");
    return 0;
}
#else
#ifdef NBODY_WITH_CUDA
void nbody__cuda_bench_choice(nbody__engine *e, int *block, int *bodies_per_thread, int *symmetric);
#endif

#define SAMPLES 1024
#define EPS 1e-3

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char info[512];
static void bench_log(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_INFO) strncpy(info, msg, sizeof info - 1);
    else fprintf(stderr, "%s\n", msg);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the direct sum in double for bodies k * step, k < count: ref[3 count] */
static double *sample_ref(const nbody_system *s, size_t step, size_t count) {
    double *ref = (double *)calloc(3 * count, sizeof(double));
    long long k;
    if (!ref) return NULL;
    NBODY__PRAGMA(omp parallel for schedule(dynamic, 4))
    for (k = 0; k < (long long)count; ++k) {
        size_t i = (size_t)k * step, j;
        double ax = 0, ay = 0, az = 0, xi = (double)s->x[i], yi = (double)s->y[i], zi = (double)s->z[i];
        for (j = 0; j < s->n; ++j) {
            double dx = (double)s->x[j] - xi, dy = (double)s->y[j] - yi, dz = (double)s->z[j] - zi;
            double r2 = dx * dx + dy * dy + dz * dz + EPS * EPS, w;
            if (j == i) continue;
            w = (double)s->m[j] / (r2 * sqrt(r2));
            ax += w * dx; ay += w * dy; az += w * dz;
        }
        ref[3 * k] = ax; ref[3 * k + 1] = ay; ref[3 * k + 2] = az;
    }
    return ref;
}

typedef struct { double rate, median, max; size_t group; int sym; } bench_row;

/* one engine configuration: kernel -1 the engine's choice, 0 one-sided, 1 symmetric with
   work-groups of group x per_item bodies (OpenCL); CUDA: its tuner. 0 on success. */
static int measure(nbody_engine eng, int kernel, int group, int per_item, int rounds, const nbody_system *s, const double *ref,
                   size_t step, size_t count, double min_s, bench_row *out) {
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    size_t n = s->n, k;
    nbody_real probe, *a = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
    double *e = (double *)malloc(count * sizeof(double)), t0, t = 0;
    long reps = 0;
    nbody_result r;
    memset(out, 0, sizeof *out);
    d.engine = eng; d.softening = (nbody_real)EPS; d.G = 1; d.method = NBODY_RK4; d.log.func = bench_log;
    r = a && e ? nbody_create(&sim, &d, s) : NBODY_ERR_OUT_OF_MEMORY;
    if (r == NBODY_OK && eng == NBODY_ENGINE_OPENCL) r = nbody__cl_dense_config(&sim->eng, kernel, group, per_item, rounds, &out->group);
    out->sym = out->group > 0;
    if (r == NBODY_OK) r = sim->eng.ops->derivative(&sim->eng, sim->y, sim->k[0]);   /* warm-up (CUDA: tuning) */
    if (r == NBODY_OK) r = sim->eng.ops->download(&sim->eng, &probe, sim->k[0], 6 * n - 1, 1);
    t0 = now();
    while (r == NBODY_OK && (t < min_s || reps < 2)) {
        r = sim->eng.ops->derivative(&sim->eng, sim->y, sim->k[0]);
        if (r == NBODY_OK) r = sim->eng.ops->download(&sim->eng, &probe, sim->k[0], 6 * n - 1, 1);
        ++reps;
        t = now() - t0;
    }
    if (r == NBODY_OK) r = sim->eng.ops->download(&sim->eng, a, sim->k[0], 3 * n, 3 * n);
#ifdef NBODY_WITH_CUDA
    if (r == NBODY_OK && eng == NBODY_ENGINE_CUDA) {
        int block = 0, per = 0, sym = 0;
        nbody__cuda_bench_choice(&sim->eng, &block, &per, &sym);
        out->group = (size_t)block; out->sym = sym;
    }
#endif
    nbody_destroy(sim);
    if (r != NBODY_OK) {
        fprintf(stderr, "bench_clsym: %s, n = %lu: %s\n", nbody_engine_name(eng), (unsigned long)n, nbody_result_string(r));
        free(a); free(e);
        return 1;
    }
    for (k = 0; k < count; ++k) {
        size_t i = k * step;
        double dx = (double)a[i] - ref[3 * k], dy = (double)a[n + i] - ref[3 * k + 1], dz = (double)a[2 * n + i] - ref[3 * k + 2];
        double nr = ref[3 * k] * ref[3 * k] + ref[3 * k + 1] * ref[3 * k + 1] + ref[3 * k + 2] * ref[3 * k + 2];
        e[k] = sqrt((dx * dx + dy * dy + dz * dz) / nr);
        if (e[k] != e[k]) e[k] = HUGE_VAL;
    }
    qsort(e, count, sizeof(double), cmp_double);
    out->rate = (double)n * (double)n * (double)reps / t;
    out->median = e[count / 2]; out->max = e[count - 1];
    free(a); free(e);
    return 0;
}

static const char *precision(void) { return sizeof(nbody_real) == sizeof(float) ? "float" : "double"; }

static void print_row(size_t n, const char *what, const char *config, const bench_row *b, double cuda) {
    char ratio[32] = "-";
    if (cuda > 0) snprintf(ratio, sizeof ratio, "%.2f", b->rate / cuda);
    printf("| %lu | %s | %s | %.3g | %s | %.2e | %.2e |\n", (unsigned long)n, what, config, b->rate, ratio, b->median, b->max);
    fflush(stdout);
}

int main(int argc, char **argv) {
    size_t max_n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 1048576, n;
    size_t min_n = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 65536;
    const int r0 = sizeof(nbody_real) == sizeof(double) ? 4 : 8;  /* the engine's bodies per work-item */
    /* group, per_item r0 >> k, rounds a launch (0: the engine's choice) */
    const int sweep[][3] = {{32, 0, 0}, {64, 0, 0}, {128, 0, 0}, {128, 1, 0}, {32, 0, 1}, {128, 0, 1}};
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc probe = NBODY__ZERO_INIT;
    nbody_result r;
    size_t k;
    nbody_ic_plummer(&s, 3, 1);
    probe.engine = NBODY_ENGINE_OPENCL; probe.log.func = bench_log;
    r = nbody_create(&sim, &probe, &s);
    nbody_destroy(sim);
    nbody_system_free(&s);
    if (r != NBODY_OK) { printf("bench_clsym: no OpenCL device (%s)\n", nbody_result_string(r)); return 0; }
    printf("\n### OpenCL dense kernels, symmetric and one-sided, %s\n\n%s\n\n", precision(), info);
    printf("Plummer, softening %g; errors: per-body relative force error against the direct sum in double, "
           "%d sampled bodies (median, max); vs CUDA: interactions/s over the CUDA engine's.\n\n", EPS, SAMPLES);
    printf("| N | engine | kernel | interactions/s | vs CUDA | median error | max error |\n|---|---|---|---|---|---|---|\n");
    for (n = min_n; n <= max_n; n *= 4) {
        size_t count = n < SAMPLES ? n : SAMPLES, step = n / count;
        double *ref, cuda = -1, min_s = 0.5;
        bench_row b;
        char cfg[64];
        nbody_ic_plummer(&s, n, 2);
        ref = sample_ref(&s, step, count);
        if (!ref) { printf("no memory\n"); return 1; }
#ifdef NBODY_WITH_CUDA
        if (measure(NBODY_ENGINE_CUDA, -1, 0, 0, 0, &s, ref, step, count, min_s, &b) == 0) {
            cuda = b.rate;
            snprintf(cfg, sizeof cfg, "tuned: %s, %lu threads", b.sym ? "symmetric" : "one-sided", (unsigned long)b.group);
            print_row(n, "cuda", cfg, &b, cuda);
        }
#endif
        if (measure(NBODY_ENGINE_OPENCL, -1, 0, 0, 0, &s, ref, step, count, min_s, &b) == 0) {
            if (b.sym) snprintf(cfg, sizeof cfg, "auto: symmetric %lu x %d", (unsigned long)b.group, r0);
            else snprintf(cfg, sizeof cfg, "auto: one-sided");
            print_row(n, "opencl", cfg, &b, cuda);
        }
        if (measure(NBODY_ENGINE_OPENCL, 0, 0, 0, 0, &s, ref, step, count, min_s, &b) == 0) print_row(n, "opencl", "one-sided", &b, cuda);
        for (k = 0; k < sizeof sweep / sizeof *sweep; ++k) {
            int per = r0 >> sweep[k][1];
            if (measure(NBODY_ENGINE_OPENCL, 1, sweep[k][0], per, sweep[k][2], &s, ref, step, count, min_s, &b) != 0) continue;
            if (sweep[k][2]) snprintf(cfg, sizeof cfg, "symmetric %lu x %d, %d rounds a launch", (unsigned long)b.group, per, sweep[k][2]);
            else snprintf(cfg, sizeof cfg, "symmetric %lu x %d", (unsigned long)b.group, per);
            print_row(n, "opencl", cfg, &b, cuda);
        }
        free(ref);
        nbody_system_free(&s);
    }
    return 0;
}
#endif
