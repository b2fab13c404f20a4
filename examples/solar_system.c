/* solar_system.c - the Sun and the four giant planets (nbody_ic_outer_solar_system) for a
   million years with NBODY_WHFAST and with NBODY_RADAU, printing the relative energy error
   abs(dE/E) once a decade and writing it at 10 samples a decade to one data file per method
   (columns: years, abs(dE/E), dE/E, steps, wall seconds), which bench/orbital_plot.sh draws.
   Also RKF 7(8) (tolerance 1e-16, compensated) and leapfrog, for comparison.
   Units: G = 1, AU, solar masses, a year is 2 pi.
       WHFast   dt = 0.5 yr (Jupiter's period is 11.86 yr), Jacobi coordinates
       RADAU    tolerance 0 (its machine-precision default)
       RKF      tolerance 1e-16, desc.compensated = 1 (slow: --rkf-years 1e5 stops it early)
       leapfrog dt = 0.5 yr
   Usage: solar_system [--years Y (1e6)] [--methods whfast,radau[,rkf,leapfrog]]
                       [--rkf-years Y (= --years)] [--out PREFIX (solar_system)]
   writes PREFIX_<method>.dat. WHFast and leapfrog sample after whole steps (nbody_step):
   nbody_advance to a time that is not a whole number of steps would add a short step.
   Build: cc -O2 -I. examples/solar_system.c -o solar_system -lm */
#define _POSIX_C_SOURCE 200809L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"

#define YEAR (2 * 3.14159265358979323846)

static int run(nbody_method m, double years, const char *prefix) {
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_invariants e0, e1;
    nbody_sim *sim = NULL;
    nbody_result r;
    double t0, dt = 0, next_print = 1, mx = 0;
    char path[512];
    FILE *f;
    int k;
    d.engine = NBODY_ENGINE_SIMPLE;            /* 5 bodies: one thread, the scalar engine */
    d.method = m;
    if (m == NBODY_WHFAST || m == NBODY_LEAPFROG) d.dt = (nbody_real)(dt = 0.5 * YEAR);
    if (m == NBODY_RKF) { d.tolerance = (nbody_real)1e-16; d.compensated = 1; d.dt = (nbody_real)0.1; }
    if ((r = nbody_ic_outer_solar_system(&s)) != NBODY_OK || (r = nbody_measure(&s, 1, 0, &e0)) != NBODY_OK ||
        (r = nbody_create(&sim, &d, &s)) != NBODY_OK) {
        fprintf(stderr, "%s: %s\n", nbody_method_name(m), nbody_result_string(r));
        nbody_system_free(&s);
        return 1;
    }
    snprintf(path, sizeof path, "%s_%s.dat", prefix, nbody_method_name(m));
    if (!(f = fopen(path, "w"))) { perror(path); nbody_destroy(sim); nbody_system_free(&s); return 1; }
    fprintf(f, "# %s, outer solar system: years abs(dE/E) dE/E steps wall_s\n", nbody_method_name(m));
    printf("%-8s %10s %10s %10s %12s %8s\n", nbody_method_name(m), "years", "abs(dE/E)", "max", "steps", "wall s");
    t0 = ex_now();
    for (k = 0; r == NBODY_OK; ++k) {          /* 10 samples a decade from 1 yr */
        double yr = pow(10.0, k / 10.0), t = yr * YEAR, de;
        if (yr > years * 1.000001) break;
        if (dt > 0) {                          /* fixed steps: whole steps, t as the library sums it */
            unsigned long long n = (unsigned long long)ceil(t / dt - 1e-9);
            while (r == NBODY_OK && nbody_get_stats(sim).steps < n) r = nbody_step(sim);
        } else {
            r = nbody_advance(sim, (nbody_real)t);
        }
        if (r != NBODY_OK || (r = nbody_get_state(sim, &s)) != NBODY_OK || (r = nbody_measure(&s, 1, 0, &e1)) != NBODY_OK)
            break;
        t = (double)s.t;
        de = (double)((e1.energy - e0.energy) / e0.energy);
        if (fabs(de) > mx) mx = fabs(de);
        fprintf(f, "%.6e %.6e %.6e %llu %.3f\n", t / YEAR, fabs(de), de, nbody_get_stats(sim).steps, ex_now() - t0);
        fflush(f);
        if (yr >= next_print * 0.999999) {
            printf("%-8s %10.3g %10.2e %10.2e %12llu %8.2f\n", "", t / YEAR, fabs(de), mx, nbody_get_stats(sim).steps,
                   ex_now() - t0);
            fflush(stdout);
            next_print *= 10;
        }
    }
    if (r != NBODY_OK) fprintf(stderr, "%s: %s\n", nbody_method_name(m), nbody_result_string(r));
    printf("%-8s wrote %s\n", "", path);
    fclose(f);
    nbody_destroy(sim);
    nbody_system_free(&s);
    return r != NBODY_OK;
}

int main(int argc, char **argv) {
    double years = 1e6, rkf_years = -1;
    const char *methods = "whfast,radau", *prefix = "solar_system";
    char list[256], *name;
    int i, fail = 0;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--years")) years = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--rkf-years")) rkf_years = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--methods")) methods = argv[i + 1];
        else if (!strcmp(argv[i], "--out")) prefix = argv[i + 1];
        else break;
    }
    if (i < argc || !(years >= 1)) {
        fprintf(stderr, "usage: %s [--years Y] [--methods whfast,radau,rkf,leapfrog] [--rkf-years Y] [--out PREFIX]\n",
                argv[0]);
        return 2;
    }
    if (rkf_years < 1) rkf_years = years;
    snprintf(list, sizeof list, "%s", methods);
    for (name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        if (!strcmp(name, "whfast")) fail |= run(NBODY_WHFAST, years, prefix);
        else if (!strcmp(name, "radau")) fail |= run(NBODY_RADAU, years, prefix);
        else if (!strcmp(name, "rkf")) fail |= run(NBODY_RKF, rkf_years, prefix);
        else if (!strcmp(name, "leapfrog")) fail |= run(NBODY_LEAPFROG, years, prefix);
        else { fprintf(stderr, "unknown method '%s'\n", name); return 2; }
    }
    return fail;
}
