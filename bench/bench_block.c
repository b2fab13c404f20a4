/* bench_block.c - BLOCK engine throughput (interactions/s = N^2 per evaluation, best of reps:
   robust on a shared machine) through the public API, at the SIMD level the library picks (or
   NBODY_SIMD names). bench/bench_dispatch.sh builds it with and without -march=native.
       cc -O2 -fopenmp -I. bench/bench_block.c -lm && ./a.out [reps] [threads] */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <time.h>
static double now(void) { return nbody__wall_seconds(); }   /* the library's monotonic wall clock */

int main(int argc, char **argv) {
    static const size_t ns[] = {4096, 8192, 16384};
    int reps = argc > 1 ? atoi(argv[1]) : 7, threads = argc > 2 ? atoi(argv[2]) : 2, r;
    size_t k;
    for (k = 0; k < sizeof ns / sizeof *ns; ++k) {
        nbody_system s = {0};
        nbody_desc d = {0};
        nbody_sim *sim = NULL;
        size_t n = ns[k];
        double best = 1e30;
        nbody_real *a = (nbody_real *)malloc(3 * n * sizeof *a);
        if (!a || nbody_ic_plummer(&s, n, 2026) != NBODY_OK) return 1;
        d.engine = NBODY_ENGINE_BLOCK; d.threads = threads; d.softening = (nbody_real)0.01;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) return 1;
        for (r = 0; r < reps; ++r) {
            double t0 = now();
            if (nbody_accelerations(&d, &s, a, a + n, a + 2 * n) != NBODY_OK) return 1;
            t0 = now() - t0;
            if (t0 < best) best = t0;
        }
        printf("BLOCK %s %s N=%zu threads=%d: %.3g interactions/s\n", sizeof(nbody_real) == sizeof(float) ? "float" : "double",
               nbody_simd_name(sim), n, threads, (double)n * (double)n / best);
        nbody_destroy(sim); nbody_system_free(&s); free(a);
    }
    return 0;
}
