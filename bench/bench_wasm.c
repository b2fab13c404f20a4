/* bench_wasm.c - the BLOCK engine in WebAssembly under node: interactions/s (N^2 per evaluation,
   best of reps) at each SIMD level the module has (simd128 when built with -msimd128, and
   portable), one thread, float by default. bench/bench_wasm.sh builds it with and without
   -msimd128 and prints the figures side by side:
       emcc -O2 -msimd128 -I. -DNBODY_REAL=float bench/bench_wasm.c -o bench_wasm.js
       node --no-experimental-fetch bench_wasm.js [N] [reps] */
#define _POSIX_C_SOURCE 200112L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* best time of one BLOCK evaluation of the n bodies of s at a level; 0 when it does not run */
static double best_time(const nbody_system *s, nbody_simd level, int reps, nbody_real *a) {
    nbody_desc d = NBODY_ZERO;
    double best = 1e30;
    int r;
    d.engine = NBODY_ENGINE_BLOCK; d.threads = 1; d.softening = (nbody_real)0.01; d.simd = level;
    for (r = 0; r < reps; ++r) {
        double t0 = now();
        if (nbody_accelerations(&d, s, a, a + s->n, a + 2 * s->n) != NBODY_OK) return 0;
        t0 = now() - t0;
        if (t0 < best) best = t0;
    }
    return best;
}

int main(int argc, char **argv) {
    static const nbody_simd levels[] = {NBODY_SIMD_SIMD128, NBODY_SIMD_PORTABLE};
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 4096, k;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    nbody_system s = NBODY_ZERO;
    nbody_real *a = (nbody_real *)malloc(3 * n * sizeof *a);
    if (!a || nbody_ic_plummer(&s, n, 2026) != NBODY_OK) return 1;
    for (k = 0; k < sizeof levels / sizeof *levels; ++k) {
        double t;
        if (!nbody_simd_available(levels[k])) continue;
        t = best_time(&s, levels[k], reps, a);
        if (t <= 0) return 1;
        printf("BLOCK %s %s N=%zu threads=1: %.3g interactions/s (%.2f ms per evaluation)\n",
               sizeof(nbody_real) == sizeof(float) ? "float" : "double", levels[k] == NBODY_SIMD_SIMD128 ? "simd128" : "portable",
               n, (double)n * (double)n / t, 1e3 * t);
    }
    nbody_system_free(&s); free(a);
    return 0;
}
