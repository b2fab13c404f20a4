/* bench_opencl - OpenCL engines: dense force evaluations (interactions/s) against N and the
   work-group (tile) size, and the tree engine's time per evaluation (host build + upload +
   device walk) against the CPU tree and the dense kernel. The CPU BLOCK engine, compiled in
   the same program, is the baseline of the ratio column. Precision: this file's nbody_real;
   bench_opencl_float.c includes it with float.
       make bench                   (WITH_OPENCL auto-detected)
       ./build/bench_opencl [max_n] (default 16384; NBODY_OPENCL_DEVICE picks the device) */
#define _POSIX_C_SOURCE 200112L            /* clock_gettime */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* keeps the INFO line naming the device; errors (a kernel build log, say) go to stderr */
static char device_line[512];
static void bench_log(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_INFO) { strncpy(device_line, msg, sizeof device_line - 1); }
    else fprintf(stderr, "%s\n", msg);
}

/* seconds per force evaluation of `engine` on s, repeated for at least min_s seconds, on the
   buffers of a simulation created for it; one value of f is downloaded after each batch so
   asynchronous kernels are waited for */
static double time_eval(nbody_engine engine, int block_size, const nbody_system *s, double min_s) {
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_real probe;
    double t0, t = 0;
    long reps = 0, batch = 1;
    nbody_result r;
    d.engine = engine; d.block_size = block_size; d.softening = (nbody_real)0.01; d.log.func = bench_log;
    d.method = NBODY_RK4;                  /* any method with k[0] */
    if (nbody_create(&sim, &d, s) != NBODY_OK) return -1;
    r = sim->eng.ops->derivative(&sim->eng, sim->y, sim->k[0]);              /* warm-up */
    if (r == NBODY_OK) r = sim->eng.ops->download(&sim->eng, &probe, sim->k[0], 6 * s->n - 1, 1);
    t0 = now();
    while (r == NBODY_OK && t < min_s) {
        long k;
        for (k = 0; k < batch && r == NBODY_OK; ++k) r = sim->eng.ops->derivative(&sim->eng, sim->y, sim->k[0]);
        if (r == NBODY_OK) r = sim->eng.ops->download(&sim->eng, &probe, sim->k[0], 6 * s->n - 1, 1);
        reps += batch; batch *= 2;
        t = now() - t0;
    }
    nbody_destroy(sim);
    return r == NBODY_OK ? t / (double)reps : -1;
}

static const char *precision(void) { return sizeof(nbody_real) == sizeof(float) ? "float" : "double"; }

int main(int argc, char **argv) {
    size_t max_n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 16384, n;
    size_t cpu_max = 8192;                 /* the CPU baseline beyond this takes too long */
    static const int tiles[] = {32, 64, 128, 256, 512, 1024};
    nbody_desc probe = NBODY__ZERO_INIT;
    nbody_system s = {0};
    size_t k;
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL)) {
        printf("bench_opencl: built without NBODY_WITH_OPENCL (make WITH_OPENCL=1)\n");
        return 0;
    }
    nbody_ic_plummer(&s, 3, 1);
    probe.engine = NBODY_ENGINE_OPENCL;
    {   /* the device line, through the log hook */
        nbody_sim *sim = NULL;
        nbody_result r;
        probe.log.func = bench_log;
        r = nbody_create(&sim, &probe, &s);
        nbody_destroy(sim);
        nbody_system_free(&s);
        if (r != NBODY_OK) { printf("bench_opencl: no OpenCL device (%s)\n", nbody_result_string(r)); return 0; }
    }
    printf("\n### OpenCL dense forces, %s\n\n%s\n\n", precision(), device_line);
    printf("| N | s / evaluation | interactions/s | CPU block, interactions/s | ratio |\n|---|---|---|---|---|\n");
    for (n = 1024; n <= max_n; n *= 4) {
        double t, tc = -1;
        nbody_ic_plummer(&s, n + 1, 2);    /* odd N: partial tiles included */
        t = time_eval(NBODY_ENGINE_OPENCL, 0, &s, 0.5);
        if (n + 1 <= cpu_max) tc = time_eval(NBODY_ENGINE_BLOCK, 0, &s, 0.5);
        if (tc > 0) printf("| %lu | %.3g | %.3g | %.3g | %.2f |\n", (unsigned long)(n + 1), t, (double)(n + 1) * (double)(n + 1) / t,
                           (double)(n + 1) * (double)(n + 1) / tc, tc / t);
        else printf("| %lu | %.3g | %.3g | - | - |\n", (unsigned long)(n + 1), t, (double)(n + 1) * (double)(n + 1) / t);
        nbody_system_free(&s);
    }
    if (nbody_engine_available(NBODY_ENGINE_CUDA)) {   /* the figure: OpenCL / CUDA, one run */
        printf("\n### OpenCL against the CUDA dense engine, %s\n\n", precision());
        printf("| N | opencl interactions/s | cuda interactions/s | opencl / cuda |\n|---|---|---|---|\n");
        for (n = 16384; n <= max_n; n *= 4) {
            double t, tc;
            nbody_ic_plummer(&s, n, 2);
            t = time_eval(NBODY_ENGINE_OPENCL, 0, &s, 1.0);
            tc = time_eval(NBODY_ENGINE_CUDA, 0, &s, 1.0);
            printf("| %lu | %.3g | %.3g | %.3f |\n", (unsigned long)n, (double)n * (double)n / t, (double)n * (double)n / tc, tc / t);
            nbody_system_free(&s);
        }
    }
    for (n = 1024; n * 4 <= max_n; n *= 4) {}
    printf("\n### OpenCL dense, work-group size (desc.block_size), N = %lu, %s\n\n", (unsigned long)n, precision());
    printf("| tile | interactions/s |\n|---|---|\n");
    nbody_ic_plummer(&s, n, 2);
    for (k = 0; k < sizeof tiles / sizeof *tiles; ++k) {
        double t = time_eval(NBODY_ENGINE_OPENCL, tiles[k], &s, 0.5);
        if (t > 0) printf("| %d | %.3g |\n", tiles[k], (double)n * (double)n / t);
        else printf("| %d | refused by the device |\n", tiles[k]);
    }
    nbody_system_free(&s);
    if (nbody_engine_available(NBODY_ENGINE_OPENCL_TREE)) {
        printf("\n### OpenCL tree (theta 0.5, host build + upload + device walk), %s\n\n", precision());
        printf("| N | opencl-tree s | cpu tree s | opencl dense s | dense / opencl-tree |\n|---|---|---|---|---|\n");
        for (n = 1024; n <= 4 * max_n; n *= 4) {
            double tt, tc, td;
            nbody_ic_plummer(&s, n + 1, 3);
            tt = time_eval(NBODY_ENGINE_OPENCL_TREE, 0, &s, 0.5);
            tc = time_eval(NBODY_ENGINE_TREE, 0, &s, 0.5);
            td = n <= max_n ? time_eval(NBODY_ENGINE_OPENCL, 0, &s, 0.5) : -1;
            if (td > 0) printf("| %lu | %.3g | %.3g | %.3g | %.2f |\n", (unsigned long)(n + 1), tt, tc, td, td / tt);
            else printf("| %lu | %.3g | %.3g | - | - |\n", (unsigned long)(n + 1), tt, tc);
            nbody_system_free(&s);
        }
    }
    return 0;
}
