/* test_whfast.c - NBODY_WHFAST (Wisdom-Holman with a universal Kepler solver and symplectic
   correctors) and the orbital elements: the Kepler drift against analytic propagation on every
   conic, energy on the outer solar system against REBOUND's figures, no secular energy drift
   over 10^6 steps, correctors, democratic heliocentric coordinates, bitwise checkpoint restart,
   refusals, and elements -> state -> elements round trips. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <math.h>

static const double PI = 3.14159265358979323846;

/* ---- the Kepler drift against analytic propagation ---- */
/* position after dt on the orbit through (pos, vel), by the elements and Kepler's equation
   (parabola: Barker's equation solved in closed form) */
static void analytic(double mu, const nbody_real pos[3], const nbody_real vel[3], double dt, nbody_real out[3]) {
    nbody_orbit o;
    nbody_real v[3];
    nbody_orbit_from_state((nbody_real)mu, pos, vel, &o);
    if (o.e < 1 || o.e > 1) {
        double a = fabs((double)o.a), n = sqrt(mu / (a * a * a));
        o.M = (nbody_real)((double)o.M + n * dt);
        nbody_orbit_to_state((nbody_real)mu, &o, NBODY_ANOMALY_MEAN, out, v);
    }
}

static double kepler_case(double e, double dt_periods) {
    /* pericentre q = 1 on the x axis, mu = 1, inclined and turned so every component moves */
    double mu = 1, q = 1, vq = sqrt(mu * (1 + e) / q), period = e < 1 ? 2 * PI * sqrt(pow(q / (1 - e), 3) / mu) : 2 * PI;
    double dt = dt_periods * period, err = 0, scale;
    nbody_orbit o;
    nbody_real pos[3], vel[3], ref[3], x, y, z, vx, vy, vz;
    pos[0] = (nbody_real)q; pos[1] = 0; pos[2] = 0; vel[0] = 0; vel[1] = (nbody_real)vq; vel[2] = 0;
    if (e != 1) {                       /* turn it: Omega 0.3, inc 0.7, omega 1.1, start at f = 0.4 */
        o.a = (nbody_real)(q / (1 - e)); o.e = (nbody_real)e; o.inc = (nbody_real)0.7; o.Omega = (nbody_real)0.3;
        o.omega = (nbody_real)1.1; o.f = (nbody_real)0.4; o.M = 0;
        nbody_orbit_to_state((nbody_real)mu, &o, NBODY_ANOMALY_TRUE, pos, vel);
        analytic(mu, pos, vel, dt, ref);
    } else {                            /* parabola in the plane: W = 3 sqrt(mu / (2 q^3)) dt, D^3 + 3D = 2W... */
        double W = 1.5 * sqrt(mu / (2 * q * q * q)) * dt, yb = cbrt(W + sqrt(W * W + 1)), D = yb - 1 / yb;
        double f = 2 * atan(D), r = 2 * q / (1 + cos(f));
        ref[0] = (nbody_real)(r * cos(f)); ref[1] = (nbody_real)(r * sin(f)); ref[2] = 0;
    }
    x = pos[0]; y = pos[1]; z = pos[2]; vx = vel[0]; vy = vel[1]; vz = vel[2];
    nbody__kepler_drift((nbody_real)mu, (nbody_real)dt, &x, &y, &z, &vx, &vy, &vz);
    scale = sqrt((double)(ref[0] * ref[0] + ref[1] * ref[1] + ref[2] * ref[2]));
    err = fabs((double)(x - ref[0])) + fabs((double)(y - ref[1])) + fabs((double)(z - ref[2]));
    return err / scale;
}

static void test_kepler(void) {
    static const double es[] = {0, 0.1, 0.5, 0.9, 0.99, 1, 1.01, 1.5, 3, 10};
    static const double spans[] = {1e-3, 0.1, 0.49, 0.8, 3.3, 117.25, -0.3, -2.7};
    size_t i, j;
    double worst = 0;
    for (i = 0; i < sizeof es / sizeof *es; ++i)
        for (j = 0; j < sizeof spans / sizeof *spans; ++j) {
            double err = kepler_case(es[i], spans[j]);
            /* many periods: the time's own round-off (|dt| eps) moves the body by v |dt| eps */
            double tol = 1e-13 * (1 + fabs(spans[j]) * (es[i] < 1 ? 1 / pow(1 - es[i], 1.5) : 1));
            if (err > worst) worst = err;
            CHECK(err <= tol, "kepler drift e %g over %g periods: relative error %.3g (tolerance %.3g)", es[i], spans[j], err, tol);
        }
    printf("  kepler drift: worst relative error %.2e over %d cases (e 0..10, parabola included)\n", worst,
           (int)(sizeof es / sizeof *es * sizeof spans / sizeof *spans));
}

/* ---- energy on the outer solar system ---- */
static double jupiter_period(void) { return 2 * PI * sqrt(pow(5.2, 3)); }

static double outer_whfast(double dt, int corrector, nbody_whfast_coordinates c, double t_end, unsigned long long *steps) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_invariants e0, e1;
    double de = -1;
    nbody_ic_outer_solar_system(&s);
    nbody_measure(&s, 1, 0, &e0);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_WHFAST; d.dt = (nbody_real)dt;
    d.whfast_corrector = corrector; d.whfast_coordinates = c;
    if (nbody_create(&sim, &d, &s) == NBODY_OK) {
        if (nbody_advance(sim, (nbody_real)t_end) == NBODY_OK && nbody_get_state(sim, &s) == NBODY_OK &&
            nbody_measure(&s, 1, 0, &e1) == NBODY_OK)
            de = fabs((double)((e1.energy - e0.energy) / e0.energy));
        if (steps) *steps = nbody_get_stats(sim).steps;
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
    return de;
}

static void test_outer(void) {
    double pj = jupiter_period(), de;
    unsigned long long steps = 0;
    int k;
    static const int orders[] = {3, 5, 7, 17};
    CHECK(!strcmp(nbody_method_name(NBODY_WHFAST), "whfast") && nbody_method_order(NBODY_WHFAST, 0) == 2, "whfast name/order");
    de = outer_whfast(pj / 200, 0, NBODY_WHFAST_JACOBI, 1000 * pj, &steps);
    printf("  whfast dt = P_J/200, 1000 P_J: |dE/E| %.3e (%llu steps; REBOUND 5.2.2 WHFast on the same start and steps: 2.829e-08)\n", de, steps);
    /* REBOUND's WHFast gives 2.829e-8 here: the same splitting gives the same error */
    CHECK(de >= 0 && de < 2.9e-8, "whfast P_J/200: |dE/E| %.3g over 1000 Jupiter periods", de);
    de = outer_whfast(0.0123 * pj, 11, NBODY_WHFAST_JACOBI, 1000 * pj, &steps);
    printf("  whfast corrector 11, dt = 0.0123 P_J, 1000 P_J: |dE/E| %.3e (REBOUND: 9.2e-11)\n", de);
    CHECK(de >= 0 && de < 1e-9, "whfast corrector 11: |dE/E| %.3g", de);
    de = outer_whfast(0.0123 * pj, 0, NBODY_WHFAST_JACOBI, 100 * pj, NULL);
    printf("  whfast no corrector, dt = 0.0123 P_J, 100 P_J: |dE/E| %.3e\n", de);
    CHECK(de > 1e-8, "whfast without corrector at 0.0123 P_J: |dE/E| %.3g, expected about 1.7e-7", de);
    for (k = 0; k < 4; ++k) {
        double dk = outer_whfast(0.0123 * pj, orders[k], NBODY_WHFAST_JACOBI, 100 * pj, NULL);
        printf("  whfast corrector %d, dt = 0.0123 P_J, 100 P_J: |dE/E| %.3e\n", orders[k], dk);
        CHECK(dk >= 0 && dk < 1e-9 && dk < de / 100, "whfast corrector %d: |dE/E| %.3g", orders[k], dk);
    }
    de = outer_whfast(pj / 200, 0, NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC, 100 * pj, NULL);
    printf("  whfast democratic heliocentric, dt = P_J/200, 100 P_J: |dE/E| %.3e\n", de);
    /* 1.77e-8 with the jumps beside the kick (REBOUND's arrangement; 1000 P_J: 1.890e-8, REBOUND 5.2.2
       the same); 4.7e-8 with the jumps beside the Kepler drift */
    CHECK(de >= 0 && de < 3e-8, "whfast democratic heliocentric: |dE/E| %.3g", de);
}

/* ---- no secular drift over 10^6 steps: Sun, Jupiter, Saturn; the largest |dE/E| of the
   last tenth is no more than that of the first tenth (times 1.5), and the mean moves far less
   than the oscillation's amplitude ---- */
static void test_symplectic(void) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_invariants e0, e1;
    nbody_orbit o = {5.2, 0.048, 0.02, 1.75, 0.26, 0.35, 0};
    double max_first = 0, max_last = 0, mean_first = 0, mean_last = 0, dt = jupiter_period() / 100;
    int k, samples = 1000, per = 1000;
    nbody_system_alloc(&s, 1);
    s.m[0] = 1;
    nbody_add_orbit(&s, 1, (nbody_real)9.5e-4, &o, NBODY_ANOMALY_TRUE, 0);
    o.a = (nbody_real)9.55; o.e = (nbody_real)0.054; o.inc = (nbody_real)0.043; o.f = (nbody_real)2.1;
    nbody_add_orbit(&s, 1, (nbody_real)2.86e-4, &o, NBODY_ANOMALY_TRUE, NBODY_JACOBI);
    nbody_move_to_com(&s);
    nbody_measure(&s, 1, 0, &e0);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_WHFAST; d.dt = (nbody_real)dt;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "whfast create");
    for (k = 1; k <= samples; ++k) {
        int j;
        double de;
        for (j = 0; j < per; ++j) nbody_step(sim);
        nbody_get_state(sim, &s);
        nbody_measure(&s, 1, 0, &e1);
        de = (double)((e1.energy - e0.energy) / e0.energy);
        if (k <= samples / 10) { if (fabs(de) > max_first) max_first = fabs(de); mean_first += de / (samples / 10); }
        if (k > samples - samples / 10) { if (fabs(de) > max_last) max_last = fabs(de); mean_last += de / (samples / 10); }
    }
    printf("  whfast 10^6 steps (dt = P_J/100): max |dE/E| first tenth %.3e, last tenth %.3e; mean %.3e -> %.3e\n",
           max_first, max_last, mean_first, mean_last);
    CHECK(nbody_get_stats(sim).steps == 1000000ULL, "steps %llu", nbody_get_stats(sim).steps);
    CHECK(max_last <= 1.5 * max_first, "whfast: energy error grew from %.3g to %.3g", max_first, max_last);
    CHECK(fabs(mean_last - mean_first) <= 0.1 * max_first, "whfast: mean energy error drifted %.3g -> %.3g", mean_first, mean_last);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* ---- deferred synchronization: nbody_advance without observers joins the closing half drift
   of a step to the next step's opening one and applies the inverse corrector only where the
   state is read; an after_step hook turns that off (every step drift(h/2) kick drift(h/2) and
   synchronized). The two agree to round-off (drift(h) against two drifts of h/2), at whole
   steps and at an end time between steps, with the same step counts: the largest difference
   of a coordinate over |x| (positions) or |v| (velocities) of its body stays below 1e-14 per
   step (measured: 5.5e-12 after 3338 steps, 41 Jupiter periods, about what a start moved by one
   ulp gives; a misplaced drift or kick would give 1e-8 or more) ---- */
static int count_steps(nbody_sim *sim, void *user) { (void)sim; ++*(int *)user; return 0; }

/* a small time-dependent pull along x on every body (velocity-free) */
static void tide_force(size_t n, nbody_real t, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                       const nbody_real *vx, const nbody_real *vy, const nbody_real *vz, const nbody_real *m,
                       nbody_real *ax, nbody_real *ay, nbody_real *az, void *u) {
    size_t i;
    (void)x; (void)y; (void)z; (void)vx; (void)vy; (void)vz; (void)m; (void)u; (void)ay; (void)az;
    for (i = 0; i < n; ++i) ax[i] += (nbody_real)1e-7 * (nbody_real)cos((double)t / 50);
}

static double state_difference(const nbody_system *a, const nbody_system *b) {
    double worst = 0;
    size_t i;
    int c;
    for (i = 0; i < a->n; ++i) {
        double r = sqrt((double)(a->x[i] * a->x[i] + a->y[i] * a->y[i] + a->z[i] * a->z[i]));
        double v = sqrt((double)(a->vx[i] * a->vx[i] + a->vy[i] * a->vy[i] + a->vz[i] * a->vz[i]));
        const nbody_real *pa[6], *pb[6];
        pa[0] = a->x; pa[1] = a->y; pa[2] = a->z; pa[3] = a->vx; pa[4] = a->vy; pa[5] = a->vz;
        pb[0] = b->x; pb[1] = b->y; pb[2] = b->z; pb[3] = b->vx; pb[4] = b->vy; pb[5] = b->vz;
        for (c = 0; c < 6; ++c) {
            double dif = fabs((double)(pa[c][i] - pb[c][i])) / (c < 3 ? r : v);
            if (dif > worst) worst = dif;
        }
    }
    return worst;
}

static void test_deferred(void) {
    static const int correctors[4] = {11, 0, 0, 0};
    static const nbody_whfast_coordinates coords[4] = {NBODY_WHFAST_JACOBI, NBODY_WHFAST_JACOBI,
                                                       NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC, NBODY_WHFAST_JACOBI};
    double pj = jupiter_period(), ends[3] = {20, 20.37, 41};
    int j;
    for (j = 0; j < 4; ++j) {   /* the last with an extra force (joined without a corrector) */
        nbody_system s = {0}, a = {0}, b = {0};
        nbody_sim *sa, *sb;
        nbody_desc d = NBODY__ZERO_INIT;
        int hooked = 0, k;
        double worst = 0;
        nbody_ic_outer_solar_system(&s);
        nbody_system_alloc(&a, 5); nbody_system_alloc(&b, 5);
        d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_WHFAST; d.dt = (nbody_real)(0.0123 * pj);
        d.whfast_corrector = correctors[j]; d.whfast_coordinates = coords[j];
        if (j == 3) { d.extra_force = tide_force; d.extra_force_velocity_free = 1; }
        CHECK(nbody_create(&sa, &d, &s) == NBODY_OK, "whfast create");
        d.after_step = count_steps; d.hook_user_data = &hooked;
        CHECK(nbody_create(&sb, &d, &s) == NBODY_OK, "whfast create with a hook");
        for (k = 0; k < 3; ++k) {
            double dif;
            nbody_advance(sa, (nbody_real)(ends[k] * pj)); nbody_advance(sb, (nbody_real)(ends[k] * pj));
            nbody_get_state(sa, &a); nbody_get_state(sb, &b);
            dif = state_difference(&a, &b);
            if (dif > worst) worst = dif;
            CHECK(dif < 1e-14 * (double)nbody_get_stats(sa).steps && a.t == b.t && nbody_get_stats(sa).steps == nbody_get_stats(sb).steps,
                  "whfast %s corrector %d: joined drifts differ from every step's by %.3g at t = %g P_J",
                  coords[j] ? "dem. helioc." : "jacobi", correctors[j], dif, ends[k]);
        }
        printf("  whfast %s corrector %d%s: joined drifts against every step synchronized, 41 P_J: largest relative "
               "difference %.3g\n", coords[j] ? "dem. helioc." : "jacobi", correctors[j], j == 3 ? " extra force" : "", worst);
        CHECK(hooked == (int)nbody_get_stats(sb).steps, "the hook ran %d times in %llu steps", hooked, nbody_get_stats(sb).steps);
        nbody_destroy(sa); nbody_destroy(sb);
        nbody_system_free(&s); nbody_system_free(&a); nbody_system_free(&b);
    }
}

/* ---- a checkpoint restarts WHFast (corrector on) bitwise ---- */
static void test_checkpoint(void) {
    nbody_system s = {0}, a = {0}, b = {0};
    nbody_sim *sim, *back;
    nbody_desc d = NBODY__ZERO_INIT;
    const char *path = "build/test_whfast.ckp";
    double pj = jupiter_period();
    nbody_ic_outer_solar_system(&s);
    nbody_system_alloc(&a, 5); nbody_system_alloc(&b, 5);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_WHFAST; d.dt = (nbody_real)(0.0123 * pj); d.whfast_corrector = 5;
    nbody_create(&sim, &d, &s);
    nbody_advance(sim, (nbody_real)(3 * pj));
    for (int k = 0; k < 7; ++k) nbody_step(sim);
    CHECK(nbody_checkpoint_save(sim, path) == NBODY_OK, "whfast checkpoint save");
    CHECK(nbody_checkpoint_load(&back, &d, path) == NBODY_OK, "whfast checkpoint load");
    nbody_advance(sim, (nbody_real)(9 * pj)); nbody_advance(back, (nbody_real)(9 * pj));
    nbody_get_state(sim, &a); nbody_get_state(back, &b);
    CHECK(!memcmp(a.x, b.x, 6 * 5 * sizeof(nbody_real)) && a.t == b.t, "whfast: checkpoint restart is not bitwise");
    nbody_destroy(back);
    d.whfast_corrector = 7;
    CHECK(nbody_checkpoint_load(&back, &d, path) == NBODY_ERR_INVALID_ARGUMENT, "checkpoint accepted another corrector");
    d.whfast_corrector = 5; d.whfast_coordinates = NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC;
    CHECK(nbody_checkpoint_load(&back, &d, path) == NBODY_ERR_INVALID_ARGUMENT, "checkpoint accepted other coordinates");
    remove(path);
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&a); nbody_system_free(&b);
}

static void velocity_force(size_t n, nbody_real t, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                           const nbody_real *vx, const nbody_real *vy, const nbody_real *vz, const nbody_real *m,
                           nbody_real *ax, nbody_real *ay, nbody_real *az, void *u) {
    size_t i;
    (void)t; (void)x; (void)y; (void)z; (void)vz; (void)m; (void)u; (void)az;
    for (i = 0; i < n; ++i) { ax[i] -= (nbody_real)1e-6 * vx[i]; ay[i] -= (nbody_real)1e-6 * vy[i]; }
}

static void test_arguments(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_ic_outer_solar_system(&s);
    d.method = NBODY_WHFAST; d.engine = NBODY_ENGINE_SIMPLE;
    d.whfast_corrector = 4;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && !sim, "corrector 4 accepted");
    d.whfast_corrector = 11; d.whfast_coordinates = NBODY_WHFAST_DEMOCRATIC_HELIOCENTRIC;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && !sim, "corrector with democratic heliocentric accepted");
    d.whfast_corrector = 0; d.whfast_coordinates = NBODY_WHFAST_COORDINATES_COUNT_;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && !sim, "bad coordinates accepted");
    d.whfast_coordinates = NBODY_WHFAST_JACOBI; d.engine = NBODY_ENGINE_CUDA;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_UNAVAILABLE && !sim, "whfast on a GPU engine accepted");
    d.engine = NBODY_ENGINE_SIMPLE; d.extra_force = velocity_force;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && !sim, "velocity-dependent extra force accepted");
    d.extra_force = NULL;
    s.m[2] = (nbody_real)0.2;                       /* Saturn of 0.2 solar masses: the Sun no longer dominates */
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && !sim, "non-dominant central body accepted");
    s.m[2] = (nbody_real)0.09;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "dominant central body refused");
    s.m[2] = (nbody_real)0.5;                       /* nbody_set_state to such a system: the next step refuses */
    CHECK(nbody_set_state(sim, &s) == NBODY_OK && nbody_step(sim) == NBODY_ERR_INVALID_ARGUMENT, "set_state to a non-dominant system");
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* ---- orbital elements ---- */
static double angle_diff(double a, double b) { double d = fmod(a - b, 2 * PI); if (d > PI) d -= 2 * PI; if (d < -PI) d += 2 * PI; return fabs(d); }

static void test_elements(void) {
    static const double es[] = {0, 1e-3, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.01, 1.5, 3, 10};
    double worst_a = 0, worst_e = 0, worst_ang = 0, worst_w = 0;
    size_t i;
    int k;
    for (i = 0; i < sizeof es / sizeof *es; ++i)
        for (k = 0; k < 8; ++k) {
            double e = es[i], f = -2.5 + 0.7 * k;
            nbody_orbit o, b;
            nbody_real pos[3], vel[3];
            if (e > 1 && 1 + e * cos(f) <= 0.05) f = 0.3 * k - 1;   /* inside the asymptotes */
            o.a = (nbody_real)(e < 1 ? 1.7 : -1.7); o.e = (nbody_real)e; o.inc = (nbody_real)(0.2 + 0.35 * k);
            o.Omega = (nbody_real)(-2.9 + 0.8 * k); o.omega = (nbody_real)(e == 0 ? 0 : 2.8 - 0.75 * k); o.f = (nbody_real)f; o.M = 0;
            CHECK(nbody_orbit_to_state((nbody_real)1.3, &o, NBODY_ANOMALY_TRUE, pos, vel) == NBODY_OK, "to state e %g", e);
            CHECK(nbody_orbit_from_state((nbody_real)1.3, pos, vel, &b) == NBODY_OK, "from state e %g", e);
            /* a = 1 / (2/r - v^2/mu): a rounded state fixes it only to about eps 2|a|/r (200 eps at the
               pericentre of e = 0.99), the condition number of a on the state, divided out here */
            worst_a = fmax(worst_a, fabs((double)(b.a - o.a) / (double)o.a) /
                                        fmax(1, 2 * fabs((double)o.a) / sqrt((double)(pos[0] * pos[0] + pos[1] * pos[1] + pos[2] * pos[2]))));
            worst_e = fmax(worst_e, fabs((double)(b.e - o.e)));
            worst_ang = fmax(worst_ang, fmax(angle_diff((double)b.inc, (double)o.inc), angle_diff((double)b.Omega, (double)o.Omega)));
            worst_ang = fmax(worst_ang, angle_diff((double)(b.omega + b.f), (double)(o.omega + o.f)));
            if (e > 0) worst_w = fmax(worst_w, e * fmax(angle_diff((double)b.omega, (double)o.omega), angle_diff((double)b.f, (double)o.f)));
            /* the mean anomaly places the body at the same point */
            if (e > 0) {
                nbody_real p2[3], v2[3];
                b.f = 0;
                nbody_orbit_to_state((nbody_real)1.3, &b, NBODY_ANOMALY_MEAN, p2, v2);
                CHECK(fabs((double)(p2[0] - pos[0])) + fabs((double)(p2[1] - pos[1])) + fabs((double)(p2[2] - pos[2])) <=
                          1e-13 * sqrt((double)(pos[0] * pos[0] + pos[1] * pos[1] + pos[2] * pos[2])),
                      "mean anomaly e %g f %g: position off", e, f);
            }
        }
    printf("  elements round trip (e 0..0.99, 1.01..10): a %.1e (relative, over 2|a|/r), e %.1e, inc/Omega/omega+f %.1e, e * (omega, f) %.1e\n",
           worst_a, worst_e, worst_ang, worst_w);
    CHECK(worst_a <= 1e-14 && worst_e <= 1e-14 && worst_ang <= 1e-14 && worst_w <= 1e-14,
          "elements round trip: a %.3g e %.3g angles %.3g e*omega %.3g", worst_a, worst_e, worst_ang, worst_w);
}

static void test_add_orbit(void) {
    nbody_system s = {0};
    nbody_orbit o = {1, 0.2, 0.1, 0.5, 1.0, 2.0, 0}, b;
    nbody_invariants inv;
    nbody_system_alloc(&s, 1);
    s.m[0] = 1; s.x[0] = 3; s.vy[0] = 2;
    CHECK(nbody_add_orbit(&s, 1, (nbody_real)1e-3, &o, NBODY_ANOMALY_TRUE, 0) == NBODY_OK && s.n == 2, "add about body 0");
    o.a = 3;
    CHECK(nbody_add_orbit(&s, 1, (nbody_real)1e-4, &o, NBODY_ANOMALY_TRUE, NBODY_JACOBI) == NBODY_OK && s.n == 3, "add Jacobi");
    CHECK(nbody_get_orbit(&s, 1, 2, NBODY_JACOBI, &b) == NBODY_OK && fabs((double)b.a - 3) < 1e-14 && fabs((double)b.f - 2) < 1e-14,
          "Jacobi orbit back: a %.17g f %.17g", (double)b.a, (double)b.f);
    CHECK(nbody_get_orbit(&s, 1, 1, 0, &b) == NBODY_OK && fabs((double)b.a - 1) < 1e-14 && fabs((double)b.e - 0.2) < 1e-14,
          "orbit about body 0 back: a %.17g e %.17g", (double)b.a, (double)b.e);
    CHECK(nbody_move_to_com(&s) == NBODY_OK && nbody_measure(&s, 1, 0, &inv) == NBODY_OK &&
              fabs((double)inv.px) < 1e-15 && fabs((double)inv.cx) < 1e-15, "centre-of-mass frame");
    CHECK(nbody_get_orbit(&s, 1, 2, NBODY_JACOBI, &b) == NBODY_OK && fabs((double)b.a - 3) < 1e-13, "orbit survives the frame change");
    o.e = 1;
    CHECK(nbody_add_orbit(&s, 1, 0, &o, NBODY_ANOMALY_TRUE, 0) == NBODY_ERR_INVALID_ARGUMENT && s.n == 3, "parabola by a accepted");
    o.e = 2; o.a = 1;
    CHECK(nbody_add_orbit(&s, 1, 0, &o, NBODY_ANOMALY_TRUE, 0) == NBODY_ERR_INVALID_ARGUMENT, "hyperbola with a > 0 accepted");
    o.e = (nbody_real)0.5;
    CHECK(nbody_add_orbit(&s, 1, 0, &o, NBODY_ANOMALY_TRUE, 7) == NBODY_ERR_INVALID_ARGUMENT, "primary out of range accepted");
    CHECK(nbody_get_orbit(&s, 1, 0, NBODY_JACOBI, &b) == NBODY_ERR_INVALID_ARGUMENT, "Jacobi orbit of body 0 accepted");
    CHECK(nbody_move_to_com(NULL) == NBODY_ERR_INVALID_ARGUMENT, "NULL accepted");
    nbody_system_free(&s);
}

int main(void) {
    test_kepler();
    test_elements();
    test_add_orbit();
    test_arguments();
    test_outer();
    test_checkpoint();
    test_deferred();
    test_symplectic();
    return check_finish();
}
