/* bench_orbital.c - NBODY_RADAU figures: the outer solar system (energy error against time
   and wall time), the Pythagorean problem, NBODY_WHFAST on the outer solar system (compare
   bench/rebound_whfast.py, REBOUND as a benchmark tool), and a 3-body run's cost (compare a build with
   -fopenmp against one without: the library enters no parallel region for a few bodies).
   Usage: bench_orbital [years (default 1e4)]. Markdown on stdout.
          bench_orbital brouwer [years (default 1e6)]: RADAU's energy error against time on the
          outer solar system, rms and max over half-decade windows, and the slope of their
          logarithms against log t from 10^3 years on (Brouwer's law: 1/2); with FILE (a
          data file of examples/solar_system.c, 10 samples a decade) the same from its samples:
          bench_orbital brouwer 1e6 out/orbital/ss_radau.dat
          bench_orbital brouwer-ensemble YEARS [K (default 8)] [SAMPLES]: the same over K
          realisations (Jupiter's x times 1 + r 1e-12, r = 0..K-1): per window the rms over all
          samples, its slope, and the mean and spread of the realisations' own slopes; the samples
          written to SAMPLES (lines "r yr dE/E") if given.
          bench_orbital brouwer-fit SAMPLES [YEARS] [LABEL]: the same statistics from such a file
          (python3 bench/rebound_brouwer.py writes REBOUND IAS15's).
          bench_orbital outer-ic: the outer solar system, lines "m x y z vx vy vz" (%.17g).
          bench_orbital whfast [R]: the WHFast table only, R runs a row, smallest times (compare
          python3 bench/rebound_whfast.py FILE R).
          bench_orbital pythagorean [K]: RADAU on the Pythagorean problem to t = 70 with 1..K
          equal outputs (default 20): abs(dE/E) at t = 70 of each, geometric mean and range.
          bench_orbital small: one line "name wall_s cpu_s" per few-body run (bench/orbital_openmp.sh
          runs it from a build with -fopenmp and one without and prints the ratios).
          bench_orbital radau [R]: RADAU (PRS23, SIMPLE) on the outer solar system to 10^4 yr
          with the outputs of the first table, R runs (default 3): one line each with the wall
          and processor seconds (compare python3 bench/rebound_ias15.py FILE R;
          bench/radau_rebound.sh alternates the two). */
#define _POSIX_C_SOURCE 199309L   /* clock_gettime: wall time in both builds */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>
#include <string.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* advances sim to t years (t 2 pi in these units) and returns abs(dE/E) against e0 there (-1 on
   failure); s receives the state */
static double advance_de(nbody_sim *sim, double t, nbody_system *s, const nbody_invariants *e0) {
    nbody_invariants e1;
    if (nbody_advance(sim, (nbody_real)(t * 2 * 3.14159265358979323846)) != NBODY_OK) return -1;
    nbody_get_state(sim, s);
    nbody_measure(s, 1, 0, &e1);
    return fabs((double)((e1.energy - e0->energy) / e0->energy));
}

static void outer(nbody_radau_control c, double years) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = {0};
    nbody_invariants e0;
    double t0 = now(), mx = 0, t;
    nbody_ic_outer_solar_system(&s);
    nbody_measure(&s, 1, 0, &e0);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU; d.radau_control = c;
    if (nbody_create(&sim, &d, &s) != NBODY_OK) return;
    printf("\n| %s: years | abs(dE/E) | max so far | steps | wall s |\n| --- | --- | --- | --- | --- |\n",
           c == NBODY_RADAU_PRS23 ? "radau prs23" : "radau global");
    for (t = 10; t <= years * 1.000001; t *= sqrt(10.0)) {
        double de = advance_de(sim, t, &s, &e0);
        if (de < 0) break;
        if (de > mx) mx = de;
        printf("| %.3g | %.2e | %.2e | %llu | %.2f |\n", t, de, mx, nbody_get_stats(sim).steps, now() - t0);
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* Brouwer's law: dE/E sampled 20 times a decade; rms (of the signed error) and max abs over
   the windows [10^(k/2), 10^((k+1)/2)) yr; least-squares slopes of log10(rms) and log10(max)
   against log10 of the window's geometric centre, over the windows from 10^3 yr on */
static void brouwer(double years, const char *file) {
    enum { PER_DECADE = 20, WMAX = 32 };
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d = {0};
    nbody_invariants e0, e1;
    double sum2[WMAX] = {0}, mx[WMAX] = {0}, t0 = now(), fit[2][4] = {{0}}, sxx = 0;
    int cnt[WMAX] = {0}, k, w, nw = 0, i, need = PER_DECADE / 2;
    FILE *f = NULL;
    if (file) {                                          /* examples/solar_system.c's data: 10 a decade */
        if (!(f = fopen(file, "r"))) { perror(file); return; }
        need = 4;
    } else {
        nbody_ic_outer_solar_system(&s);
        nbody_measure(&s, 1, 0, &e0);
        d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) return;
    }
    for (k = 0; ; ++k) {                                 /* samples from 10 yr */
        double yr = pow(10.0, 1 + (double)k / PER_DECADE), de;
        if (f) {
            char line[256];
            double a;
            if (!fgets(line, sizeof line, f)) break;
            if (line[0] == '#' || sscanf(line, "%lf %lf %lf", &yr, &a, &de) != 3 || yr < 10) continue;
            if (yr > years * 1.000001) break;
        } else {
            if (yr > years * 1.000001) break;
            if (nbody_advance(sim, (nbody_real)(yr * 2 * 3.14159265358979323846)) != NBODY_OK) break;
            nbody_get_state(sim, &s);
            nbody_measure(&s, 1, 0, &e1);
            de = (double)((e1.energy - e0.energy) / e0.energy);
        }
        w = (int)floor(2 * log10(yr) + 1e-9);           /* window [10^(w/2), 10^((w+1)/2)) */
        if (w >= WMAX) break;
        sum2[w] += de * de; cnt[w]++;
        if (fabs(de) > mx[w]) mx[w] = fabs(de);
        if (w + 1 > nw) nw = w + 1;
    }
    printf("\n| radau prs23, outer solar system: window (yr) | samples | rms dE/E | max abs(dE/E) |\n| --- | --- | --- | --- |\n");
    for (w = 2; w < nw; ++w) {
        double lt = (w + 0.5) / 2, rms = cnt[w] ? sqrt(sum2[w] / cnt[w]) : 0;
        if (cnt[w] < need) continue;                     /* a partial window (the last sample alone) */
        printf("| 1e%.1f - 1e%.1f | %d | %.2e | %.2e |\n", w / 2.0, (w + 1) / 2.0, cnt[w], rms, mx[w]);
        if (w < 6 || rms <= 0 || mx[w] <= 0) continue;  /* the fit: windows from 10^3 yr */
        for (i = 0; i < 2; ++i) {                        /* n, sum x, sum x y, sum y */
            double ly = log10(i ? mx[w] : rms);
            fit[i][0] += 1; fit[i][1] += lt; fit[i][2] += lt * ly; fit[i][3] += ly;
        }
        sxx += lt * lt;
    }
    {
        double slope[2];
        for (i = 0; i < 2; ++i) {
            double n = fit[i][0];
            slope[i] = n > 1 ? (n * fit[i][2] - fit[i][1] * fit[i][3]) / (n * sxx - fit[i][1] * fit[i][1]) : 0;
        }
        printf("\nbrouwer: slope of log abs(dE/E) against log t, 1e3..%g yr: rms %.3f, max %.3f (Brouwer's law 0.5, linear drift 1)",
               years, slope[0], slope[1]);
        if (sim) printf("; %llu steps, %.1f s\n", nbody_get_stats(sim).steps, now() - t0);
        else printf("; from %s\n", file);
    }
    if (f) fclose(f);
    if (sim) nbody_destroy(sim);
    nbody_system_free(&s);
}

/* Brouwer's law over an ensemble: K realisations, realisation r starting from the outer solar
   system with Jupiter's x multiplied by (1 + r 1e-12) (r = 0 is the plain start), each sampled
   as brouwer() does (20 a decade from 10 yr, dE/E against its own initial energy). Per window
   of half a decade: the rms over all realisations' samples and the max abs; the slope of the
   ensemble rms (and max) against log t over the windows from 10^3 yr, and each realisation's own
   rms slope (the fit of brouwer()), their mean and sample standard deviation. The samples can
   be written to a file (lines "r yr dE/E") and fitted again with `brouwer-fit FILE`, which is
   how bench/rebound_brouwer.py's samples of REBOUND are fitted: the same code for both. */
enum { ENS_WMAX = 32 };
typedef struct { int k; double *sum, *sum2, *mx; int *cnt; } ens_acc;

static int ens_init(ens_acc *a, int k) {
    a->k = k;
    a->sum = (double *)calloc((size_t)(k + 1) * ENS_WMAX, sizeof(double));
    a->sum2 = (double *)calloc((size_t)(k + 1) * ENS_WMAX, sizeof(double));
    a->mx = (double *)calloc((size_t)(k + 1) * ENS_WMAX, sizeof(double));
    a->cnt = (int *)calloc((size_t)(k + 1) * ENS_WMAX, sizeof(int));
    return a->sum && a->sum2 && a->mx && a->cnt;
}

static void ens_free(ens_acc *a) { free(a->sum); free(a->sum2); free(a->mx); free(a->cnt); }

/* row r < k: realisation r; row k: all of them together */
static void ens_add(ens_acc *a, int r, double yr, double de) {
    int w = (int)floor(2 * log10(yr) + 1e-9), row;      /* window [10^(w/2), 10^((w+1)/2)) */
    if (w < 0 || w >= ENS_WMAX || r < 0 || r >= a->k) return;
    for (row = r; ; row = a->k) {
        a->sum[row * ENS_WMAX + w] += de; a->sum2[row * ENS_WMAX + w] += de * de; a->cnt[row * ENS_WMAX + w]++;
        if (fabs(de) > a->mx[row * ENS_WMAX + w]) a->mx[row * ENS_WMAX + w] = fabs(de);
        if (row == a->k) break;
    }
}

/* least-squares slope of log10(rms) (what 1: log10(max abs); 2: log10 of the standard deviation
   about the window's mean, the error less its mean drift) against the windows' log10 centres,
   over the windows from 10^3 yr with at least `need` samples */
static double ens_slope(const ens_acc *a, int row, int what, int need) {
    double n = 0, sx = 0, sy = 0, sxy = 0, sxx = 0;
    int w;
    for (w = 6; w < ENS_WMAX; ++w) {
        int c = a->cnt[row * ENS_WMAX + w];
        double y = 0, lt = (w + 0.5) / 2;
        if (c < need) continue;
        if (what == 1) y = a->mx[row * ENS_WMAX + w];
        else if (what == 2) y = sqrt(fmax(0, a->sum2[row * ENS_WMAX + w] / c - pow(a->sum[row * ENS_WMAX + w] / c, 2)));
        else y = sqrt(a->sum2[row * ENS_WMAX + w] / c);
        if (y <= 0) continue;
        y = log10(y);
        n += 1; sx += lt; sy += y; sxy += lt * y; sxx += lt * lt;
    }
    return n > 1 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
}

static void ens_report(const ens_acc *a, const char *label, int need) {
    int w, r, row = a->k;
    double m = 0, v = 0, lo = 1e300, hi = -1e300;
    printf("\n| %s, %d realisations: window (yr) | samples | ensemble rms dE/E | ensemble mean dE/E | sd about the mean | max abs(dE/E) | realisations' rms min .. max |\n"
           "| --- | --- | --- | --- | --- | --- | --- |\n", label, a->k);
    for (w = 2; w < ENS_WMAX; ++w) {
        int c = a->cnt[row * ENS_WMAX + w];
        double rlo = 1e300, rhi = 0, mean;
        if (c < need * a->k) continue;                   /* a partial window */
        for (r = 0; r < a->k; ++r) {
            int cr = a->cnt[r * ENS_WMAX + w];
            double x = cr ? sqrt(a->sum2[r * ENS_WMAX + w] / cr) : 0;
            if (x < rlo) rlo = x;
            if (x > rhi) rhi = x;
        }
        mean = a->sum[row * ENS_WMAX + w] / c;
        printf("| 1e%.1f - 1e%.1f | %d | %.2e | %+.2e | %.2e | %.2e | %.2e .. %.2e |\n", w / 2.0, (w + 1) / 2.0, c,
               sqrt(a->sum2[row * ENS_WMAX + w] / c), mean, sqrt(fmax(0, a->sum2[row * ENS_WMAX + w] / c - mean * mean)), a->mx[row * ENS_WMAX + w], rlo, rhi);
    }
    printf("\nper-realisation rms slopes (1e3 yr on):");
    for (r = 0; r < a->k; ++r) {
        double s = ens_slope(a, r, 0, need);
        printf(" %.3f", s);
        m += s; v += s * s;
        if (s < lo) lo = s;
        if (s > hi) hi = s;
    }
    m /= a->k;
    v = a->k > 1 ? (v - a->k * m * m) / (a->k - 1) : 0;
    printf("\nbrouwer-ensemble %s: slope of the ensemble rms %.3f, of the ensemble max %.3f, of the sd about the mean %.3f; per realisation "
           "mean %.3f, sd %.3f (standard error of the mean %.3f), min %.3f, max %.3f (K = %d; Brouwer's law 0.5, linear drift 1)\n",
           label, ens_slope(a, row, 0, need * a->k), ens_slope(a, row, 1, need * a->k),
           ens_slope(a, row, 2, need * a->k), m, v > 0 ? sqrt(v) : 0,
           v > 0 ? sqrt(v / a->k) : 0, lo, hi, a->k);
}

static void brouwer_ensemble(double years, int k, const char *out) {
    enum { PER_DECADE = 20 };
    ens_acc a;
    FILE *f = NULL;
    int r;
    double t0 = now();
    unsigned long long steps = 0;
    if (k < 1 || !ens_init(&a, k)) return;
    if (out && !(f = fopen(out, "w"))) { perror(out); ens_free(&a); return; }
    if (f) fprintf(f, "# bench_orbital brouwer-ensemble %g %d: realisation, yr, dE/E (Jupiter's x times 1 + r 1e-12)\n", years, k);
    for (r = 0; r < k; ++r) {
        nbody_system s = {0};
        nbody_sim *sim = NULL;
        nbody_desc d = {0};
        nbody_invariants e0, e1;
        int i;
        nbody_ic_outer_solar_system(&s);
        s.x[1] = (nbody_real)((double)s.x[1] * (1 + r * 1e-12));   /* body 1: Jupiter */
        nbody_measure(&s, 1, 0, &e0);
        d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) { nbody_system_free(&s); break; }
        for (i = 0; ; ++i) {
            double yr = pow(10.0, 1 + (double)i / PER_DECADE), de;
            if (yr > years * 1.000001) break;
            if (nbody_advance(sim, (nbody_real)(yr * 2 * 3.14159265358979323846)) != NBODY_OK) break;
            nbody_get_state(sim, &s);
            nbody_measure(&s, 1, 0, &e1);
            de = (double)((e1.energy - e0.energy) / e0.energy);
            ens_add(&a, r, yr, de);
            if (f) fprintf(f, "%d %.17g %.17g\n", r, yr, de);
        }
        if (f) fflush(f);
        steps += nbody_get_stats(sim).steps;
        fprintf(stderr, "realisation %d: %llu steps, %.1f s so far\n", r, nbody_get_stats(sim).steps, now() - t0);
        nbody_destroy(sim);
        nbody_system_free(&s);
    }
    if (f) fclose(f);
    ens_report(&a, "nbody.h radau prs23", PER_DECADE / 2);
    printf("%llu steps in all, %.1f s\n", steps, now() - t0);
    ens_free(&a);
}

/* the same statistics from a file of lines "r yr dE/E" (r from 0; '#' lines skipped), up to `years` */
static void brouwer_fit(const char *file, double years, const char *label) {
    ens_acc a;
    FILE *f = fopen(file, "r");
    char line[256];
    int r, k = 0;
    double yr, de;
    if (!f) { perror(file); return; }
    while (fgets(line, sizeof line, f))                  /* first pass: the number of realisations */
        if (line[0] != '#' && sscanf(line, "%d %lf %lf", &r, &yr, &de) == 3 && r + 1 > k) k = r + 1;
    if (k < 1 || !ens_init(&a, k)) { fclose(f); return; }
    rewind(f);
    while (fgets(line, sizeof line, f))
        if (line[0] != '#' && sscanf(line, "%d %lf %lf", &r, &yr, &de) == 3 && yr >= 10 && yr <= years * 1.000001)
            ens_add(&a, r, yr, de);
    fclose(f);
    ens_report(&a, label, 10);
    ens_free(&a);
}

/* the Pythagorean problem to t = 70 with K equal outputs (each run lands on other times):
   abs(dE/E) at t = 70, K = 1 (the direct run) .. kmax, and their geometric mean and range */
static void pythagorean_outputs(int kmax) {
    double lsum = 0, lo = 1e300, hi = 0;
    int K, k;
    printf("\n| pythagorean, radau: outputs K | abs(dE/E) at t = 70 | steps | binary a | e |\n| --- | --- | --- | --- | --- |\n");
    for (K = 1; K <= kmax; ++K) {
        nbody_system s = {0};
        nbody_sim *sim;
        nbody_desc d = {0};
        nbody_invariants e0, e1;
        nbody_orbit o;
        double de;
        nbody_ic_pythagorean(&s);
        nbody_measure(&s, 1, 0, &e0);
        d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) return;
        for (k = 1; k <= K; ++k) nbody_advance(sim, (nbody_real)(70.0 * k / K));
        nbody_get_state(sim, &s);
        nbody_measure(&s, 1, 0, &e1);
        nbody_get_orbit(&s, 1, 2, 1, &o);     /* body 2 about body 1 (masses 5 and 4): their binary */
        de = fabs((double)((e1.energy - e0.energy) / e0.energy));
        printf("| %d | %.2e | %llu | %.4f | %.4f |\n", K, de, nbody_get_stats(sim).steps, (double)o.a, (double)o.e);
        lsum += log(de);
        if (de < lo) lo = de;
        if (de > hi) hi = de;
        nbody_destroy(sim);
        nbody_system_free(&s);
    }
    printf("\npythagorean K = 1..%d: geometric mean %.2e, range %.2e .. %.2e\n", kmax, exp(lsum / kmax), lo, hi);
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
   10 outputs (the same schedule as bench/rebound_whfast.py); repeat runs: the smallest wall
   time and the smallest processor time of them */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void whfast(double dt_pj, int corrector, nbody_whfast_coordinates c, int repeat) {
    double pj = 2 * 3.14159265358979323846 * pow(5.2, 1.5), mx = 0, de = 0, wall = 1e30, cpu = 1e30;
    unsigned long long steps = 0;
    int k, rep;
    for (rep = 0; rep < repeat; ++rep) {
        nbody_system s = {0};
        nbody_sim *sim;
        nbody_desc d = {0};
        nbody_invariants e0, e1;
        double t0, c0;
        nbody_ic_outer_solar_system(&s);
        nbody_measure(&s, 1, 0, &e0);
        d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_WHFAST; d.dt = (nbody_real)(dt_pj * pj);
        d.whfast_corrector = corrector; d.whfast_coordinates = c;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) return;
        t0 = now(); c0 = cpu_now(); mx = 0;
        for (k = 1; k <= 10; ++k) {
            nbody_advance(sim, (nbody_real)(100 * k * pj));
            nbody_get_state(sim, &s);
            nbody_measure(&s, 1, 0, &e1);
            de = fabs((double)((e1.energy - e0.energy) / e0.energy));
            if (de > mx) mx = de;
        }
        t0 = now() - t0; c0 = cpu_now() - c0;
        if (t0 < wall) wall = t0;
        if (c0 < cpu) cpu = c0;
        steps = nbody_get_stats(sim).steps;
        nbody_destroy(sim);
        nbody_system_free(&s);
    }
    printf("| %s | %g P_J | %d | %.3e | %.3e | %llu | %.4f | %.4f |\n", c == NBODY_WHFAST_JACOBI ? "jacobi" : "dem. helioc.",
           dt_pj, corrector, de, mx, steps, wall, cpu);
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

/* one few-body run: its wall time in seconds (t_end in the problem's units); *cpu: the
   process's processor time (no thread but this one runs in either build) */
static double small_cpu;
static double small_run(int ic, nbody_engine e, nbody_method m, double dt, double t_end) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = {0};
    double t0;
    if (ic == 0) nbody_ic_figure_eight(&s);
    else if (ic == 1) nbody_ic_pythagorean(&s);
    else nbody_ic_outer_solar_system(&s);
    d.engine = e; d.method = m; d.dt = (nbody_real)dt;
    if (nbody_create(&sim, &d, &s) != NBODY_OK) { nbody_system_free(&s); return -1; }
    small_cpu = (double)clock();
    t0 = now();
    nbody_advance(sim, (nbody_real)t_end);
    t0 = now() - t0;
    small_cpu = ((double)clock() - small_cpu) / CLOCKS_PER_SEC;
    nbody_destroy(sim);
    nbody_system_free(&s);
    return t0;
}

/* RADAU to 10^4 yr, the outputs of outer() (10 yr, then sqrt(10) apart), R runs */
static void radau_runs(int repeat) {
    int rep;
    for (rep = 0; rep < repeat; ++rep) {
        nbody_system s = {0};
        nbody_sim *sim;
        nbody_desc d = {0};
        nbody_invariants e0;
        double t, mx = 0, w, c;
        nbody_ic_outer_solar_system(&s);
        nbody_measure(&s, 1, 0, &e0);
        d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) return;
        w = now(); c = cpu_now();
        for (t = 10; t <= 1e4 * 1.000001; t *= sqrt(10.0)) {
            double de = advance_de(sim, t, &s, &e0);
            if (de < 0) break;
            if (de > mx) mx = de;
        }
        w = now() - w; c = cpu_now() - c;
        printf("nbody.h radau prs23 1e4 yr (%s OpenMP): max abs(dE/E) %.3g, %llu steps, wall %.3f s, cpu %.3f s\n",
               NBODY__OPENMP ? "with" : "without", mx, nbody_get_stats(sim).steps, w, c);
        nbody_destroy(sim);
        nbody_system_free(&s);
    }
}

static void small(void) {
    double yr = 2 * 3.14159265358979323846, w;
    w = small_run(0, NBODY_ENGINE_SIMPLE, NBODY_LEAPFROG, 1e-4, 20); printf("3body-simple-leapfrog %.4f %.4f\n", w, small_cpu);
    w = small_run(0, NBODY_ENGINE_OPENMP, NBODY_LEAPFROG, 1e-4, 20); printf("3body-openmp-leapfrog %.4f %.4f\n", w, small_cpu);
    w = small_run(0, NBODY_ENGINE_BLOCK, NBODY_LEAPFROG, 1e-4, 20); printf("3body-block-leapfrog %.4f %.4f\n", w, small_cpu);
    w = small_run(0, NBODY_ENGINE_SIMPLE, NBODY_RK4, 1e-4, 10); printf("3body-simple-rk4 %.4f %.4f\n", w, small_cpu);
    w = small_run(0, NBODY_ENGINE_BLOCK, NBODY_RK4, 1e-4, 10); printf("3body-block-rk4 %.4f %.4f\n", w, small_cpu);
    w = small_run(1, NBODY_ENGINE_SIMPLE, NBODY_RADAU, 0, 70); printf("3body-simple-radau(pythagorean,t=70) %.4f %.4f\n", w, small_cpu);
    w = small_run(2, NBODY_ENGINE_SIMPLE, NBODY_RADAU, 0, 1000 * yr); printf("5body-simple-radau(outer,1000yr) %.4f %.4f\n", w, small_cpu);
    w = small_run(2, NBODY_ENGINE_BLOCK, NBODY_RADAU, 0, 1000 * yr); printf("5body-block-radau(outer,1000yr) %.4f %.4f\n", w, small_cpu);
    w = small_run(2, NBODY_ENGINE_SIMPLE, NBODY_WHFAST, 0.5 * yr, 1e4 * yr); printf("5body-simple-whfast(outer,1e4yr) %.4f %.4f\n", w, small_cpu);
    w = small_run(2, NBODY_ENGINE_SIMPLE, NBODY_RKF, 0.01 * yr, 100 * yr); printf("5body-simple-rkf(outer,dt=0.01yr,100yr) %.4f %.4f\n", w, small_cpu);
}

int main(int argc, char **argv) {
    double years = argc > 1 ? atof(argv[1]) : 1e4;
    if (argc > 1 && !strcmp(argv[1], "small")) { small(); return 0; }
    if (argc > 1 && !strcmp(argv[1], "radau")) { radau_runs(argc > 2 ? atoi(argv[2]) : 3); return 0; }
    if (argc > 1 && !strcmp(argv[1], "pythagorean")) { pythagorean_outputs(argc > 2 ? atoi(argv[2]) : 20); return 0; }
    if (argc > 1 && !strcmp(argv[1], "outer-ic")) {  /* the start bench/rebound_whfast.py reads */
        nbody_system s = {0};
        size_t i;
        nbody_ic_outer_solar_system(&s);
        for (i = 0; i < s.n; ++i)
            printf("%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", (double)s.m[i], (double)s.x[i], (double)s.y[i],
                   (double)s.z[i], (double)s.vx[i], (double)s.vy[i], (double)s.vz[i]);
        nbody_system_free(&s);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "whfast")) {   /* the whfast table only, R runs a row */
        int r = argc > 2 ? atoi(argv[2]) : 1;
        printf("| whfast, outer solar system, 1000 P_J: coordinates | dt | corrector | abs(dE/E) end | max | steps | wall s | cpu s |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
        whfast(1.0 / 200, 0, NBODY_WHFAST_JACOBI, r);
        whfast(0.0123, 0, NBODY_WHFAST_JACOBI, r);
        whfast(0.0123, 3, NBODY_WHFAST_JACOBI, r);
        whfast(0.0123, 11, NBODY_WHFAST_JACOBI, r);
        whfast(1.0 / 200, 0, NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC, r);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "brouwer")) {
        printf("# bench_orbital brouwer (%s OpenMP)\n", NBODY__OPENMP ? "with" : "without");
        brouwer(argc > 2 ? atof(argv[2]) : 1e6, argc > 3 ? argv[3] : NULL);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "brouwer-ensemble")) {
        printf("# bench_orbital brouwer-ensemble (%s OpenMP)\n", NBODY__OPENMP ? "with" : "without");
        brouwer_ensemble(atof(argv[2]), argc > 3 ? atoi(argv[3]) : 8, argc > 4 ? argv[4] : NULL);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "brouwer-fit")) {
        brouwer_fit(argv[2], argc > 3 ? atof(argv[3]) : 1e300, argc > 4 ? argv[4] : argv[2]);
        return 0;
    }
    printf("# bench_orbital (%s OpenMP)\n", NBODY__OPENMP ? "with" : "without");
    outer(NBODY_RADAU_PRS23, years);
    outer(NBODY_RADAU_GLOBAL, years < 1e4 ? years : 1e4);
    pythagorean();
    printf("\n| whfast, outer solar system, 1000 P_J: coordinates | dt | corrector | abs(dE/E) end | max | steps | wall s | cpu s |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    whfast(1.0 / 200, 0, NBODY_WHFAST_JACOBI, 1);
    whfast(0.0123, 0, NBODY_WHFAST_JACOBI, 1);
    whfast(0.0123, 3, NBODY_WHFAST_JACOBI, 1);
    whfast(0.0123, 11, NBODY_WHFAST_JACOBI, 1);
    whfast(1.0 / 200, 0, NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC, 1);
    printf("\n| 3 bodies, t = 20, dt 1e-4: engine | method | steps | wall s |\n| --- | --- | --- | --- |\n");
    three_body(NBODY_ENGINE_SIMPLE, NBODY_LEAPFROG);
    three_body(NBODY_ENGINE_BLOCK, NBODY_LEAPFROG);
    three_body(NBODY_ENGINE_SIMPLE, NBODY_RK4);
    three_body(NBODY_ENGINE_BLOCK, NBODY_RK4);
    return 0;
}
