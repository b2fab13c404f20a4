/* bench_steer.c - test particles: one force evaluation with 1% of the bodies active
   (desc.n_active = N/100; the rest feel them only) against the full N^2 evaluation, on one
   engine. Time per evaluation is the best of 3 after a warm-up; the full run is timed once
   when it takes over a second.
   Usage: bench_steer [engine: block | tree | cuda | cuda-tree | opencl | opencl-tree (block)]
                      [N (100000)] [active per cent (1)] [N of the full run (N)]
   A full run's N below N times the full N^2 run there and scales it by (N / its N)^2 (said in
   the line: "extrapolated"), for N where one full evaluation takes minutes. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if NBODY__OPENMP
static double now(void) { return omp_get_wtime(); }
#else
static double now(void) { return (double)clock() / CLOCKS_PER_SEC; }
#endif

static nbody_engine engine_of(const char *s) {
    int e;
    for (e = 1; e < NBODY_ENGINE_COUNT_; ++e) if (strcmp(s, nbody_engine_name((nbody_engine)e)) == 0) return (nbody_engine)e;
    return NBODY_ENGINE_BLOCK;
}

/* seconds per force evaluation: Euler steps (one evaluation each) on a simulation */
static double per_eval(const nbody_desc *d, const nbody_system *s, int *ok) {
    nbody_sim *sim;
    double best = 1e30, t0, t;
    int k, reps = 3;
    *ok = nbody_create(&sim, d, s) == NBODY_OK;
    if (!*ok) return 0;
    t0 = now();
    nbody_step(sim);                              /* warm-up (GPU tuning, tree buffers) */
    if (now() - t0 > 1) reps = 1;
    for (k = 0; k < reps; ++k) {
        t0 = now();
        if (nbody_step(sim) != NBODY_OK) *ok = 0;    /* its finiteness check waits for a GPU */
        t = now() - t0;
        if (t < best) best = t;
    }
    nbody_destroy(sim);
    return best;
}

int main(int argc, char **argv) {
    nbody_engine e = argc > 1 ? engine_of(argv[1]) : NBODY_ENGINE_BLOCK;
    size_t n = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 100000;
    double pct = argc > 3 ? atof(argv[3]) : 1;
    size_t nf = argc > 4 ? (size_t)strtoull(argv[4], NULL, 10) : n;
    nbody_system s;
    nbody_desc d;
    double full, part;
    int ok1, ok2;
    size_t na;
    memset(&s, 0, sizeof s);
    memset(&d, 0, sizeof d);
    if (n < 2 || nbody_ic_plummer(&s, n, 1) != NBODY_OK) { printf("bad N\n"); return 1; }
    na = (size_t)((double)n * pct / 100);
    if (na < 1) na = 1;
    d.engine = e; d.method = NBODY_EULER; d.softening = (nbody_real)0.01; d.dt = (nbody_real)1e-6;
    if (nf < 2 || nf > n) nf = n;
    if (nf < n) {                                 /* the full run at nf bodies, scaled by N^2 */
        nbody_system sf;
        memset(&sf, 0, sizeof sf);
        if (nbody_ic_plummer(&sf, nf, 1) != NBODY_OK) { printf("bad N of the full run\n"); return 1; }
        full = per_eval(&d, &sf, &ok1) * ((double)n / (double)nf) * ((double)n / (double)nf);
        nbody_system_free(&sf);
    } else full = per_eval(&d, &s, &ok1);
    d.n_active = na;
    part = per_eval(&d, &s, &ok2);
    printf("| engine | N | active | full N^2 (s) | test particles (s) | speed-up | interactions/s (active run) |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    if (!ok1 || !ok2) { printf("| %s | %lu | %lu | engine failed | | | |\n", nbody_engine_name(e), (unsigned long)n, (unsigned long)na); return 1; }
    printf("| %s | %lu | %lu | %.4g%s | %.4g | %.1fx | %.3g |\n", nbody_engine_name(e), (unsigned long)n, (unsigned long)na,
           full, nf < n ? " (extrapolated by N^2)" : "", part, full / part, (double)na * (double)n / part);
    if (nf < n) printf("\nfull N^2 run timed at N = %lu and scaled by (%lu / %lu)^2\n", (unsigned long)nf, (unsigned long)n, (unsigned long)nf);
    nbody_system_free(&s);
    return 0;
}
