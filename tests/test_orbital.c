/* test_orbital.c - NBODY_RADAU (Gauss-Radau, IAS15-class): its measured order, energy on the
   outer solar system, the Pythagorean three-body problem, its step-size criteria, and the
   outer-solar-system initial condition; its fused passes on the CPU engines against its
   engine-operation path, bit for bit; and the SIMPLE engine's pairwise kernel (each pair's
   1/sqrt once) against the row-by-row sums, bit for bit. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <math.h>

static const double PI = 3.14159265358979323846;

/* |state(T) - state(0)|_1 after `periods` periods of a test particle on an orbit of
   eccentricity e around a unit mass, n fixed RADAU steps a period; -1 when the run fails */
static double kepler_error(double e, int n, int periods) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = NBODY__ZERO_INIT;
    double err = -1;
    nbody_system_alloc(&s, 2);
    s.m[0] = 1; s.x[1] = (nbody_real)(1 - e); s.vy[1] = (nbody_real)sqrt((1 + e) / (1 - e));
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU; d.radau_control = NBODY_RADAU_FIXED;
    d.dt = (nbody_real)(2 * PI / n);
    if (nbody_create(&sim, &d, &s) == NBODY_OK) {
        if (nbody_advance(sim, (nbody_real)(2 * PI * periods)) == NBODY_OK && nbody_get_state(sim, &s) == NBODY_OK)
            err = fabs((double)s.x[1] - (1 - e)) + fabs((double)s.y[1]) + fabs((double)s.vx[1]) +
                  fabs((double)s.vy[1] - sqrt((1 + e) / (1 - e)));
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
    return err;
}

static void test_order(void) {
    /* a circular orbit over 64 periods with 3 and 4 steps a period: every step alike, so the
       error is the local error times the step count, 5e-8 and 7e-10, far above round-off
       (about 3e-11 here; eccentric orbits change the sign of the error between step counts) */
    double e1 = kepler_error(0, 3, 64), e2 = kepler_error(0, 4, 64), p = log(e1 / e2) / log(4.0 / 3.0);
    printf("  radau order: error %.3g at 3 steps a period, %.3g at 4, measured order %.2f\n", e1, e2, p);
    CHECK(e1 > 0 && e2 > 1e-10 && fabs(p - 15) <= 1, "radau: measured order %.2f (errors %.3g, %.3g), nominal 15", p, e1, e2);
    CHECK(nbody_method_order(NBODY_RADAU, 0) == 15, "radau: nominal order %d", nbody_method_order(NBODY_RADAU, 0));
    CHECK(!strcmp(nbody_method_name(NBODY_RADAU), "radau"), "name %s", nbody_method_name(NBODY_RADAU));
}

/* |dE/E| of the outer solar system after t_yr years (one year = 2 pi) */
static double outer_energy(nbody_radau_control c, double t_yr, nbody_stats *st) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_invariants e0, e1;
    double de = -1;
    nbody_ic_outer_solar_system(&s);
    nbody_measure(&s, 1, 0, &e0);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU; d.radau_control = c;
    if (nbody_create(&sim, &d, &s) == NBODY_OK) {
        if (nbody_advance(sim, (nbody_real)(t_yr * 2 * PI)) == NBODY_OK && nbody_get_state(sim, &s) == NBODY_OK &&
            nbody_measure(&s, 1, 0, &e1) == NBODY_OK)
            de = fabs((double)((e1.energy - e0.energy) / e0.energy));
        *st = nbody_get_stats(sim);
        CHECK(fabs((double)st->t - t_yr * 2 * PI) == 0, "radau: did not land on t_end (%.17g)", (double)st->t);
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
    return de;
}

static void test_outer_solar_system(void) {
    nbody_system s = {0};
    nbody_invariants inv;
    nbody_stats st;
    double de;
    CHECK(nbody_ic_outer_solar_system(&s) == NBODY_OK && s.n == 5, "outer solar system: 5 bodies");
    nbody_measure(&s, 1, 0, &inv);
    CHECK(fabs((double)inv.px) < 1e-15 && fabs((double)inv.cx) < 1e-15, "outer solar system: not in the centre-of-mass frame");
    CHECK(s.m[1] > 9.5e-4 && s.m[1] < 9.6e-4 && s.x[1] > 3 && s.x[1] < 4, "outer solar system: Jupiter");
    nbody_system_free(&s);
    CHECK(nbody_ic_outer_solar_system(NULL) == NBODY_ERR_INVALID_ARGUMENT, "NULL system accepted");
    de = outer_energy(NBODY_RADAU_PRS23, 1000, &st);
    printf("  radau prs23 outer solar system 1000 yr: |dE/E| %.2e, %llu steps, %llu rejected\n", de, st.steps, st.rejected);
    CHECK(de >= 0 && de <= 1e-14, "radau prs23: |dE/E| %.3g over 1000 yr", de);
    de = outer_energy(NBODY_RADAU_GLOBAL, 1000, &st);
    printf("  radau global outer solar system 1000 yr: |dE/E| %.2e, %llu steps, %llu rejected\n", de, st.steps, st.rejected);
    CHECK(de >= 0 && de <= 1e-14, "radau global: |dE/E| %.3g over 1000 yr", de);
}

/* Szebehely & Peters 1967 to t = 70: the mass-3 body escapes and 4 and 5 form a binary of
   a = 0.552, e = 0.989 */
static void test_pythagorean(void) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_invariants e0, e1;
    double M, dx, dy, dvx, dvy, eb, a, h, ecc, cx, cy, cvx, cvy, rb, eesc, de;
    nbody_result r;
    nbody_ic_pythagorean(&s);
    nbody_measure(&s, 1, 0, &e0);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU;
    r = nbody_create(&sim, &d, &s);
    if (r == NBODY_OK) r = nbody_advance(sim, 70);
    CHECK(r == NBODY_OK, "radau pythagorean: %s", nbody_result_string(r));
    if (r != NBODY_OK) { nbody_system_free(&s); return; }
    nbody_get_state(sim, &s);
    nbody_measure(&s, 1, 0, &e1);
    de = fabs((double)((e1.energy - e0.energy) / e0.energy));
    M = (double)(s.m[1] + s.m[2]);
    dx = (double)(s.x[2] - s.x[1]); dy = (double)(s.y[2] - s.y[1]);
    dvx = (double)(s.vx[2] - s.vx[1]); dvy = (double)(s.vy[2] - s.vy[1]);
    eb = 0.5 * (dvx * dvx + dvy * dvy) - M / sqrt(dx * dx + dy * dy);
    a = -M / (2 * eb);
    h = dx * dvy - dy * dvx;
    ecc = sqrt(fmax(0, 1 + 2 * eb * h * h / (M * M)));
    cx = (double)(s.m[1] * s.x[1] + s.m[2] * s.x[2]) / M; cy = (double)(s.m[1] * s.y[1] + s.m[2] * s.y[2]) / M;
    cvx = (double)(s.m[1] * s.vx[1] + s.m[2] * s.vx[2]) / M; cvy = (double)(s.m[1] * s.vy[1] + s.m[2] * s.vy[2]) / M;
    rb = sqrt(pow((double)s.x[0] - cx, 2) + pow((double)s.y[0] - cy, 2));
    eesc = 0.5 * (pow((double)s.vx[0] - cvx, 2) + pow((double)s.vy[0] - cvy, 2)) - (M + (double)s.m[0]) / rb;
    printf("  radau pythagorean: |dE/E| %.1e, escaper at %.2f (E %.4f), binary a %.4f e %.4f, %llu steps\n", de, rb, eesc,
           a, ecc, nbody_get_stats(sim).steps);
    /* measured 1.1e-11 (REBOUND 5.2.2 IAS15: 3.1e-11); with 1..20 equal outputs 3.4e-12 .. 1.6e-10,
       geometric mean 3.7e-11 (bench_orbital pythagorean) */
    CHECK(de <= 1e-10, "radau pythagorean: |dE/E| %.3g", de);
    CHECK(rb > 10 && eesc > 0, "radau pythagorean: mass 3 not escaping (%.3g, %.3g)", rb, eesc);
    CHECK(fabs(a - 0.552) <= 0.001 && fabs(ecc - 0.989) <= 0.0005, "radau pythagorean: binary a %.4f e %.4f", a, ecc);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

static void test_arguments(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_ic_pythagorean(&s);
    d.method = NBODY_RADAU; d.radau_control = NBODY_RADAU_CONTROL_COUNT_;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && sim == NULL, "bad radau_control accepted");
    d.radau_control = (nbody_radau_control)-1;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && sim == NULL, "negative radau_control accepted");
    nbody_system_free(&s);
}

/* ---- RADAU's fused host passes (taken when the engine's lincomb is the host one) against
   its path through the engine operations, which the GPU engines take: the same run with the
   lincomb wrapped (so the solver does not recognise the host engine) must give the same
   bits: state, compensation, every RADAU vector and the counts ---- */
static nbody_result wrapped_lincomb(nbody__engine *e, const nbody__lincomb *op) { return nbody__host_lincomb(e, op); }

static void drag_force(size_t n, nbody_real t, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                       const nbody_real *vx, const nbody_real *vy, const nbody_real *vz, const nbody_real *m,
                       nbody_real *ax, nbody_real *ay, nbody_real *az, void *u) {
    size_t i;
    (void)t; (void)x; (void)y; (void)z; (void)m; (void)u;
    for (i = 0; i < n; ++i) { ax[i] -= (nbody_real)1e-3 * vx[i]; ay[i] -= (nbody_real)1e-3 * vy[i]; az[i] -= (nbody_real)1e-3 * vz[i]; }
}

static int radau_bits_differ(nbody_sim *a, nbody_sim *b) {
    size_t bytes = a->len * sizeof(nbody_real);
    int j, differ = memcmp(a->y, b->y, bytes) || memcmp(a->comp, b->comp, bytes) ||
                    a->stats.steps != b->stats.steps || a->stats.force_evals != b->stats.force_evals ||
                    a->stats.rejected != b->stats.rejected || a->t != b->t || a->dt_next != b->dt_next;
    for (j = 0; j < NBODY__RADAU_NB; ++j)
        differ = differ || memcmp(a->radau.b_accepted[j], b->radau.b_accepted[j], bytes) ||
                 memcmp(a->radau.prediction[j], b->radau.prediction[j], bytes) ||
                 memcmp(a->radau.g[j], b->radau.g[j], bytes) || memcmp(a->radau.b_comp[j], b->radau.b_comp[j], bytes);
    return differ || memcmp(a->radau.change, b->radau.change, bytes) || memcmp(a->radau.divided, b->radau.divided, bytes) ||
           memcmp(a->radau.x_comp, b->radau.x_comp, bytes);
}

static void test_host_passes(void) {
    static const char *name[5] = {"outer prs23", "outer global", "pythagorean", "figure-eight fixed, drag", "figure-eight openmp engine, drag"};
    int c;
    for (c = 0; c < 5; ++c) {
        nbody_system s = {0};
        nbody_sim *sim[2] = {NULL, NULL};
        nbody__engine_ops wrapped;
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_real t_end = 70;
        nbody_result r = NBODY_OK;
        int w, k;
        if (c < 2) { nbody_ic_outer_solar_system(&s); t_end = (nbody_real)(300 * 2 * PI); }
        else if (c == 2) nbody_ic_pythagorean(&s);
        else { nbody_ic_figure_eight(&s); t_end = 10; d.extra_force = drag_force; }
        d.engine = c == 4 ? NBODY_ENGINE_OPENMP : NBODY_ENGINE_SIMPLE; d.method = NBODY_RADAU;
        d.radau_control = c == 1 ? NBODY_RADAU_GLOBAL : c == 3 ? NBODY_RADAU_FIXED : NBODY_RADAU_PRS23;
        d.dt = (nbody_real)0.01;
        for (w = 0; w < 2 && r == NBODY_OK; ++w) r = nbody_create(&sim[w], &d, &s);
        if (r == NBODY_OK) {
            wrapped = *sim[1]->eng.ops;
            wrapped.lincomb = wrapped_lincomb;
            sim[1]->eng.ops = &wrapped;
            for (k = 1; k <= 3 && r == NBODY_OK; ++k)      /* outputs: steps clipped to land on them */
                for (w = 0; w < 2 && r == NBODY_OK; ++w) r = nbody_advance(sim[w], t_end * (nbody_real)k / 3);
        }
        CHECK(r == NBODY_OK, "radau %s: %s", name[c], nbody_result_string(r));
        if (r == NBODY_OK) {
            printf("  radau %s: fused host passes and engine operations, %llu steps\n", name[c], sim[0]->stats.steps);
            CHECK(!radau_bits_differ(sim[0], sim[1]), "radau %s: the fused host passes differ from the engine operations", name[c]);
        }
        for (w = 0; w < 2; ++w) nbody_destroy(sim[w]);
        nbody_system_free(&s);
    }
}

/* ---- the SIMPLE engine's kernel forms each pair once: the same bits as the rows of
   nbody__accel_simple_range (every body's sum over the sources in index order), for 1 to 40
   bodies, with and without softening, coincident bodies (NaN: of either sign, check_same_values)
   and masses of 1e-6 included ---- */
static void test_pair_kernel(void) {
    nbody_real y[6 * 40], f1[6 * 40], f2[6 * 40], m[40];
    unsigned int seed = 12345u;
    int trial, differ = 0;
    for (trial = 0; trial < 600; ++trial) {
        size_t n = 1 + (size_t)(trial % 40), i;
        nbody__forces F;
        for (i = 0; i < 6 * n; ++i) {
            seed = seed * 1103515245u + 12345u;
            y[i] = (nbody_real)((double)(seed >> 8) / 16777216.0 - 0.5) * (nbody_real)pow(10, (double)(trial % 7) - 3);
        }
        for (i = 0; i < n; ++i) { seed = seed * 1103515245u + 12345u; m[i] = (nbody_real)((double)(seed >> 8) / 16777216.0 * (trial % 3 ? 1 : 1e-6)); }
        if (trial % 5 == 0 && n > 2) { y[1] = y[0]; y[n + 1] = y[n]; y[2 * n + 1] = y[2 * n]; }   /* bodies 0 and 1 coincide */
        F.x = y; F.y = y + n; F.z = y + 2 * n; F.m = m; F.n = n;
        F.G = (nbody_real)(trial % 2 ? 1 : 0.5); F.eps2 = (nbody_real)(trial % 4 == 1 ? 0.01 : 0);
        F.ax = f1 + 3 * n; F.ay = f1 + 4 * n; F.az = f1 + 5 * n;
        nbody__accel_simple_range(&F, 0, n);
        F.ax = f2 + 3 * n; F.ay = f2 + 4 * n; F.az = f2 + 5 * n;
        nbody__accel_simple(&F);
        if (!check_same_values(f1 + 3 * n, f2 + 3 * n, 3 * n)) ++differ;
    }
    CHECK(differ == 0, "simple engine: the pairwise kernel differs from the rows in %d of 600 cases", differ);
}

int main(void) {
    test_order();
    test_outer_solar_system();
    test_pythagorean();
    test_arguments();
    test_host_passes();
    test_pair_kernel();
    return check_finish();
}
