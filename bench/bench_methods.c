/* bench_methods.c - the article's Figure 2: for the two-galaxy collision, the relative change
   of energy and of momentum at the end of the run against the number of force evaluations,
   for every method over a range of fixed steps (or tolerances for the adaptive ones).
   Writes bench/results/methods.csv (plot: gnuplot bench/plot_methods.gp) and prints a
   markdown table of the cheapest run of each method that reaches |dE/E| < 1e-6.
       make build/bench_methods && ./build/bench_methods [n] [t_end]            */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>

typedef struct run { nbody_method m; int order; double dt, tol; } run;

static double now(void) { return (double)clock() / CLOCKS_PER_SEC; }

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 128;
    double t_end = argc > 2 ? atof(argv[2]) : 6, softening = 0.05, target = 1e-6;
    const nbody_method fixed[] = {NBODY_EULER, NBODY_MIDPOINT, NBODY_LEAPFROG, NBODY_TRAPEZE, NBODY_RK4, NBODY_RKCK,
                                  NBODY_RKDP, NBODY_RKDVERK, NBODY_RKF, NBODY_RKGL, NBODY_RKLC, NBODY_ADAMS, NBODY_BS};
    const nbody_method adaptive[] = {NBODY_RKCK, NBODY_RKDP, NBODY_RKDVERK, NBODY_RKF, NBODY_RKLC, NBODY_BS};
    nbody_system s0 = {0}, s = {0};
    nbody_invariants i0, i1;
    double p0;
    unsigned f, k;
    FILE *csv;
    struct { char label[32]; double evals, de; int have; } best[32];
    int nbest = 0;
    if (nbody_ic_collision(&s0, n, (nbody_real)0.5, (nbody_real)3, 7) != NBODY_OK) return 1;
    nbody_system_alloc(&s, n);
    nbody_measure(&s0, 1, (nbody_real)softening, &i0);
    p0 = 0;     /* momentum scale: sum of |m v| (the total is ~0 in the centre-of-mass frame) */
    for (k = 0; k < n; ++k)
        p0 += (double)s0.m[k] * sqrt((double)(s0.vx[k] * s0.vx[k] + s0.vy[k] * s0.vy[k] + s0.vz[k] * s0.vz[k]));
    csv = fopen("bench/results/methods.csv", "w");
    if (!csv) { fprintf(stderr, "cannot write bench/results/methods.csv (run from the repository root)\n"); return 1; }
    fprintf(csv, "method,order,mode,dt,tolerance,force_evals,steps,rejected,rel_energy,rel_momentum,seconds\n");
    printf("# Methods on the two-galaxy collision (N = %lu, softening %g, t = 0..%g, double)\n\n", (unsigned long)n,
           softening, t_end);
    for (f = 0; f < sizeof fixed / sizeof fixed[0] + sizeof adaptive / sizeof adaptive[0]; ++f) {
        int is_adaptive = f >= sizeof fixed / sizeof fixed[0];
        nbody_method m = is_adaptive ? adaptive[f - sizeof fixed / sizeof fixed[0]] : fixed[f];
        int orders = m == NBODY_ADAMS ? 5 : 1, o, j;
        for (o = 1; o <= orders; ++o) {
            char label[32];
            snprintf(label, sizeof label, "%s%s%s", nbody_method_name(m), m == NBODY_ADAMS ? (o == 1 ? "1" : o == 2 ? "2" : o == 3 ? "3" : o == 4 ? "4" : "5") : "",
                     is_adaptive ? "-adaptive" : "");
            memcpy(best[nbest].label, label, sizeof label); best[nbest].have = 0; best[nbest].evals = 0; best[nbest].de = 0;
            for (j = 0; j < 8; ++j) {
                nbody_desc d;
                nbody_sim *sim;
                nbody_stats st;
                double t0, secs, de, dp;
                nbody_result r;
                memset(&d, 0, sizeof d);
                d.engine = NBODY_ENGINE_BLOCK; d.method = m; d.order = m == NBODY_ADAMS ? o : 0;
                d.softening = (nbody_real)softening;
                if (is_adaptive) { d.dt = (nbody_real)1e-3; d.tolerance = (nbody_real)pow(10, -3 - j); }
                else d.dt = (nbody_real)(0.05 / pow(2, j));
                /* keep the study short (a few minutes on 2 cores) */
                if (!is_adaptive && j > 5) continue;
                if (!is_adaptive && (m == NBODY_RKGL || m == NBODY_RKLC || m == NBODY_TRAPEZE) && j > 4) continue;
                if (is_adaptive && m == NBODY_RKLC && j > 4) continue;
                if (nbody_create(&sim, &d, &s0) != NBODY_OK) return 1;
                t0 = now();
                r = nbody_advance(sim, (nbody_real)t_end);
                secs = now() - t0;
                st = nbody_get_stats(sim);
                nbody_get_state(sim, &s);
                nbody_destroy(sim);
                if (r != NBODY_OK) { fprintf(csv, "# %s dt %g tol %g: %s\n", label, (double)d.dt, (double)d.tolerance, nbody_result_string(r)); continue; }
                nbody_measure(&s, 1, (nbody_real)softening, &i1);
                de = fabs((double)((i1.energy - i0.energy) / i0.energy));
                dp = sqrt(pow((double)(i1.px - i0.px), 2) + pow((double)(i1.py - i0.py), 2) + pow((double)(i1.pz - i0.pz), 2)) / p0;
                fprintf(csv, "%s,%d,%s,%.6g,%.3g,%llu,%llu,%llu,%.6e,%.6e,%.4f\n", label, nbody_method_order(m, o),
                        is_adaptive ? "adaptive" : "fixed", (double)d.dt, (double)d.tolerance, st.force_evals, st.steps,
                        st.rejected, de, dp, secs);
                if (de < target && (!best[nbest].have || st.force_evals < best[nbest].evals)) {
                    best[nbest].have = 1; best[nbest].evals = (double)st.force_evals; best[nbest].de = de;
                }
            }
            nbest++;
        }
    }
    fclose(csv);
    printf("| method | force evaluations to reach abs(dE/E) < %g | abs(dE/E) there |\n| --- | --- | --- |\n", target);
    for (k = 0; k < (unsigned)nbest; ++k) {
        if (best[k].have) printf("| %s | %.0f | %.1e |\n", best[k].label, best[k].evals, best[k].de);
        else printf("| %s | not reached in the range | |\n", best[k].label);
    }
    printf("\nAll runs: bench/results/methods.csv; plot: gnuplot bench/plot_methods.gp\n");
    nbody_system_free(&s0); nbody_system_free(&s);
    return 0;
}
