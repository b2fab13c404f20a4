/* python_ref.c - bench/python_bench.py's C side: the run the Python benchmark times, from C.
   usage: python_ref N STEPS ENGINE THREADS
   Plummer sphere of N bodies (seed 42), leapfrog, dt 1e-3, softening 0.01, desc.threads
   THREADS: for every line read from stdin, nbody_create, then nbody_advance over STEPS steps
   timed, then nbody_destroy; prints the advance's wall seconds, one line each (flushed). The
   benchmark keeps this process open and alternates its runs with the Python ones, so both
   sides see the same machine at the same moments. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* wall-clock seconds: OpenMP's clock (the Python side uses time.perf_counter) */
static double now(void) {
#if NBODY__OPENMP
    return omp_get_wtime();
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

int main(int argc, char **argv) {
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    char line[64];
    int steps, e;
    if (argc != 5) { fprintf(stderr, "usage: python_ref N STEPS ENGINE THREADS (then one line per run on stdin)\n"); return 2; }
    steps = atoi(argv[2]);
    for (e = 0; e < NBODY_ENGINE_COUNT_ && strcmp(nbody_engine_name((nbody_engine)e), argv[3]); ++e) {}
    if (e == NBODY_ENGINE_COUNT_ || nbody_ic_plummer(&s, (size_t)atol(argv[1]), 42) != NBODY_OK) return 2;
    d.engine = (nbody_engine)e;
    d.method = NBODY_LEAPFROG;
    d.dt = 1e-3;
    d.softening = 0.01;
    d.threads = atoi(argv[4]);
    while (fgets(line, sizeof line, stdin)) {
        nbody_sim *sim;
        double t0;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) return 1;
        t0 = now();
        if (nbody_advance(sim, steps * 1e-3) != NBODY_OK) return 1;
        t0 = now() - t0;
        nbody_destroy(sim);
        printf("%.6f\n", t0);
        fflush(stdout);
    }
    nbody_system_free(&s);
    return 0;
}
