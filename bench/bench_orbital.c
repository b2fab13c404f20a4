/* bench_orbital.c - NBODY_RADAU figures: the outer solar system (energy error against time
   and wall time), the Pythagorean problem, NBODY_WHFAST on the outer solar system (compare
   bench/rebound_whfast.py, REBOUND as a benchmark tool), and a 3-body run's cost (compare a build with
   -fopenmp against one without: the library enters no parallel region for a few bodies).
   Usage: bench_orbital [years (default 1e4)]. Markdown on stdout. */
#define _POSIX_C_SOURCE 199309L   /* clock_gettime: wall time in both builds */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void outer(nbody_radau_control c, double years) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = {0};
    nbody_invariants e0, e1;
    double t0 = now(), mx = 0, t;
    nbody_ic_outer_solar_system(&s);
    nbody_measure(&s, 1, 0, &e0);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU; d.radau_control = c;
    if (nbody_create(&sim, &d, &s) != NBODY_OK) return;
    printf("\n| %s: years | abs(dE/E) | max so far | steps | wall s |\n| --- | --- | --- | --- | --- |\n",
           c == NBODY_RADAU_PRS23 ? "radau prs23" : "radau global");
    for (t = 10; t <= years * 1.000001; t *= sqrt(10.0)) {
        double de;
        if (nbody_advance(sim, (nbody_real)(t * 2 * 3.14159265358979323846)) != NBODY_OK) break;
        nbody_get_state(sim, &s);
        nbody_measure(&s, 1, 0, &e1);
        de = fabs((double)((e1.energy - e0.energy) / e0.energy));
        if (de > mx) mx = de;
        printf("| %.3g | %.2e | %.2e | %llu | %.2f |\n", t, de, mx, nbody_get_stats(sim).steps, now() - t0);
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
}

static void pythagorean(void) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = {0};
    nbody_invariants e0, e1;
    double t0 = now();
    nbody_ic_pythagorean(&s);
    nbody_measure(&s, 1, 0, &e0);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU;
    nbody_create(&sim, &d, &s);
    nbody_advance(sim, 70);
    nbody_get_state(sim, &s);
    nbody_measure(&s, 1, 0, &e1);
    printf("\npythagorean to t = 70, radau: abs(dE/E) %.2e, %llu steps, %.3f s\n",
           fabs((double)((e1.energy - e0.energy) / e0.energy)), nbody_get_stats(sim).steps, now() - t0);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* WHFast on the outer solar system over 1000 Jupiter periods (P_J = 2 pi 5.2^1.5), |dE/E| at
   10 outputs (the same schedule as bench/rebound_whfast.py) */
static void whfast(double dt_pj, int corrector, nbody_whfast_coordinates c) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = {0};
    nbody_invariants e0, e1;
    double pj = 2 * 3.14159265358979323846 * pow(5.2, 1.5), t0, mx = 0, de = 0;
    int k;
    nbody_ic_outer_solar_system(&s);
    nbody_measure(&s, 1, 0, &e0);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_WHFAST; d.dt = (nbody_real)(dt_pj * pj);
    d.whfast_corrector = corrector; d.whfast_coordinates = c;
    if (nbody_create(&sim, &d, &s) != NBODY_OK) return;
    t0 = now();
    for (k = 1; k <= 10; ++k) {
        nbody_advance(sim, (nbody_real)(100 * k * pj));
        nbody_get_state(sim, &s);
        nbody_measure(&s, 1, 0, &e1);
        de = fabs((double)((e1.energy - e0.energy) / e0.energy));
        if (de > mx) mx = de;
    }
    printf("| %s | %g P_J | %d | %.3e | %.3e | %llu | %.3f |\n", c == NBODY_WHFAST_JACOBI ? "jacobi" : "dem. helioc.", dt_pj,
           corrector, de, mx, nbody_get_stats(sim).steps, now() - t0);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

static void three_body(nbody_engine e, nbody_method m) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = {0};
    double t0;
    nbody_ic_figure_eight(&s);
    d.engine = e; d.method = m; d.dt = (nbody_real)1e-4;
    nbody_create(&sim, &d, &s);
    t0 = now();
    nbody_advance(sim, 20);
    printf("| %s | %s | %llu | %.3f |\n", nbody_engine_name(e), nbody_method_name(m), nbody_get_stats(sim).steps, now() - t0);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

int main(int argc, char **argv) {
    double years = argc > 1 ? atof(argv[1]) : 1e4;
    printf("# bench_orbital (%s OpenMP)\n", NBODY__OPENMP ? "with" : "without");
    outer(NBODY_RADAU_PRS23, years);
    outer(NBODY_RADAU_GLOBAL, years < 1e4 ? years : 1e4);
    pythagorean();
    printf("\n| whfast, outer solar system, 1000 P_J: coordinates | dt | corrector | abs(dE/E) end | max | steps | wall s |\n"
           "| --- | --- | --- | --- | --- | --- | --- |\n");
    whfast(1.0 / 200, 0, NBODY_WHFAST_JACOBI);
    whfast(0.0123, 0, NBODY_WHFAST_JACOBI);
    whfast(0.0123, 3, NBODY_WHFAST_JACOBI);
    whfast(0.0123, 11, NBODY_WHFAST_JACOBI);
    whfast(1.0 / 200, 0, NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC);
    printf("\n| 3 bodies, t = 20, dt 1e-4: engine | method | steps | wall s |\n| --- | --- | --- | --- |\n");
    three_body(NBODY_ENGINE_SIMPLE, NBODY_LEAPFROG);
    three_body(NBODY_ENGINE_BLOCK, NBODY_LEAPFROG);
    three_body(NBODY_ENGINE_SIMPLE, NBODY_RK4);
    three_body(NBODY_ENGINE_BLOCK, NBODY_RK4);
    return 0;
}
