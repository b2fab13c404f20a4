/* test_methods.c - every integrator at its nominal order, adaptive step control, and the
   physics the issue names: Kepler convergence, figure-eight, Pythagorean three-body problem,
   leapfrog energy over 1e5 steps, engine agreement and step statistics. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <math.h>

static const double PI = 3.14159265358979323846;
#define KEPLER_E 0.6

/* a test particle (mass 0) on a Kepler orbit of semi-major axis 1 and eccentricity e around a
   unit mass, starting at pericentre; period 2 pi, after which the state is exactly the start */
static void kepler(nbody_system *s, double e) {
    nbody_system_alloc(s, 2);
    s->m[0] = 1;
    s->x[1] = (nbody_real)(1 - e);
    s->vy[1] = (nbody_real)sqrt((1 + e) / (1 - e));
}

static nbody_desc desc_for(nbody_method m, int order, double dt, double tol) {
    nbody_desc d;
    memset(&d, 0, sizeof d);
    d.engine = NBODY_ENGINE_SIMPLE; d.method = m; d.order = order;
    d.dt = (nbody_real)dt; d.tolerance = (nbody_real)tol;
    return d;
}

/* |state(T) - state(0)|_1 after one Kepler period; -1 when the run fails. A non-NULL
   `lend` replaces the method row (used to show a wrong propagating row is caught). */
static double kepler_error(const nbody_desc *d, const nbody__method_info *lend, nbody_stats *st) {
    nbody_system s = {0};
    nbody_sim *sim;
    double err = -1;
    kepler(&s, KEPLER_E);
    if (nbody_create(&sim, d, &s) == NBODY_OK) {
        if (lend) sim->method = lend;
        if (nbody_advance(sim, (nbody_real)(2 * PI)) == NBODY_OK && nbody_get_state(sim, &s) == NBODY_OK)
            err = fabs((double)s.x[1] - (1 - KEPLER_E)) + fabs((double)s.y[1]) + fabs((double)s.vx[1]) +
                  fabs((double)s.vy[1] - sqrt((1 + KEPLER_E) / (1 - KEPLER_E)));
        if (st) *st = nbody_get_stats(sim);
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
    return err;
}

/* measured order from n, 2n, 4n steps per period: the mean slope of log2 error */
static double measured_order(nbody_method m, int order, int n, const nbody__method_info *lend) {
    nbody_desc d0 = desc_for(m, order, 2 * PI / n, 0), d2 = desc_for(m, order, 2 * PI / (4 * n), 0);
    double e0 = kepler_error(&d0, lend, NULL), e2 = kepler_error(&d2, lend, NULL);
    if (e0 <= 0 || e2 <= 0) return -1;
    return log2(e0 / e2) / 2;
}

/* ---- Butcher tableaux: every order condition (one per rooted tree, Butcher 1963:
   b . Phi(t) = 1 / gamma(t)) holds through the claimed order and some fails just above it */
#define MAX_TREES 500
static int tree_size[MAX_TREES], tree_nkids[MAX_TREES], tree_kid[MAX_TREES][8], trees;

static void add_trees(int size, int remaining, int max_index, int *kids, int nkids) {
    int i;
    if (remaining == 0) {
        tree_size[trees] = size; tree_nkids[trees] = nkids;
        for (i = 0; i < nkids; ++i) tree_kid[trees][i] = kids[i];
        trees++;
        return;
    }
    for (i = max_index; i >= 0; --i)
        if (tree_size[i] <= remaining) { kids[nkids] = i; add_trees(size, remaining - tree_size[i], i, kids, nkids + 1); }
}

static void make_trees(int max_size) {       /* all rooted trees, ordered by size */
    int size, kids[16], before;
    trees = 0;
    tree_size[0] = 1; tree_nkids[0] = 0; trees = 1;
    for (size = 2; size <= max_size; ++size) { before = trees; add_trees(size, size - 1, before - 1, kids, 0); }
}

static double tree_gamma(int t) {
    double g = tree_size[t];
    int i;
    for (i = 0; i < tree_nkids[t]; ++i) g *= tree_gamma(tree_kid[t][i]);
    return g;
}

/* highest p such that all conditions of order <= p hold for weights w (tolerance 1e-13) */
static int tableau_order(const nbody__tableau *T, const nbody_real *w) {
    static long double phi[MAX_TREES][16];
    int t, i, j, k, p = 99, S = T->stages;
    for (t = 0; t < trees; ++t) {
        long double sum = 0;
        for (i = 0; i < S; ++i) phi[t][i] = 1;
        for (k = 0; k < tree_nkids[t]; ++k)
            for (i = 0; i < S; ++i) {
                long double a = 0;
                for (j = 0; j < S; ++j) a += (long double)T->a[i * S + j] * phi[tree_kid[t][k]][j];
                phi[t][i] *= a;
            }
        for (i = 0; i < S; ++i) sum += (long double)w[i] * phi[t][i];
        if (fabsl(sum - 1.0L / (long double)tree_gamma(t)) > 1e-13L && tree_size[t] - 1 < p) p = tree_size[t] - 1;
    }
    return p;
}

static void test_tableaux(void) {
    struct { const char *name; const nbody__tableau *T; int order, embedded; } tabs[] = {
        {"euler", &nbody__euler_tab, 1, 0}, {"midpoint", &nbody__midpoint_tab, 2, 0}, {"kutta3", &nbody__kutta3_tab, 3, 0},
        {"rk4", &nbody__rk4_tab, 4, 0}, {"rkck", &nbody__rkck_tab, 5, 4}, {"rkdp", &nbody__rkdp_tab, 5, 4},
        {"dverk", &nbody__dverk_tab, 6, 5}, {"rkf", &nbody__rkf_tab, 8, 7}, {"trapeze", &nbody__trapeze_tab, 2, 0},
        {"lobatto3c", &nbody__lobatto_tab, 4, 2}, {"gauss3", NULL, 6, 0}};
    nbody__tableau gauss;
    nbody_real ga[9], gb[3], gc[3];
    unsigned i;
    int r, j;
    make_trees(9);
    CHECK(trees == 486, "rooted trees up to order 9: %d, expected 486", trees);
    nbody__gauss3(&gauss, ga, gb, gc);
    tabs[10].T = &gauss;
    for (i = 0; i < sizeof tabs / sizeof tabs[0]; ++i) {
        const nbody__tableau *T = tabs[i].T;
        for (r = 0; r < T->stages; ++r) {
            long double sum = 0;
            for (j = 0; j < T->stages; ++j) sum += T->a[r * T->stages + j];
            long double mag = 0;
            for (j = 0; j < T->stages; ++j) mag += fabsl((long double)T->a[r * T->stages + j]);
            CHECK(fabsl(sum - T->c[r]) <= 4 * DBL_EPSILON * (mag + 1), "%s: row %d sums to %.17Lg, c = %.17g", tabs[i].name, r,
                  sum, (double)T->c[r]);
        }
        CHECK(tableau_order(T, T->b) == tabs[i].order, "%s: propagating row has order %d, expected %d", tabs[i].name,
              tableau_order(T, T->b), tabs[i].order);
        CHECK(T->order == tabs[i].order, "%s: tableau says order %d", tabs[i].name, T->order);
        if (tabs[i].embedded) {
            CHECK(T->bhat && tableau_order(T, T->bhat) == tabs[i].embedded, "%s: embedded row has order %d, expected %d",
                  tabs[i].name, T->bhat ? tableau_order(T, T->bhat) : -1, tabs[i].embedded);
            CHECK(T->embedded_order == tabs[i].embedded, "%s: embedded_order %d", tabs[i].name, T->embedded_order);
        }
    }
}

/* ---- measured convergence order of every method on the eccentric Kepler orbit ---- */
static void test_orders(void) {
    /* n: steps per period of the coarsest run, chosen in the asymptotic range and above round-off */
    struct { nbody_method m; int order, n; double nominal; } runs[] = {
        {NBODY_EULER, 0, 16384, 1}, {NBODY_MIDPOINT, 0, 1024, 2}, {NBODY_LEAPFROG, 0, 1024, 2},
        {NBODY_TRAPEZE, 0, 1024, 2}, {NBODY_RK4, 0, 512, 4}, {NBODY_RKCK, 0, 256, 5}, {NBODY_RKDP, 0, 256, 5},
        {NBODY_RKDVERK, 0, 384, 6}, {NBODY_RKF, 0, 48, 8}, {NBODY_RKGL, 0, 128, 6}, {NBODY_RKLC, 0, 1024, 4},
        {NBODY_ADAMS, 1, 16384, 1}, {NBODY_ADAMS, 2, 2048, 2}, {NBODY_ADAMS, 3, 1024, 3}, {NBODY_ADAMS, 4, 1024, 4},
        {NBODY_ADAMS, 5, 2048, 5}, {NBODY_BS, 0, 64, 8}};
    unsigned i;
    for (i = 0; i < sizeof runs / sizeof runs[0]; ++i) {
        double p = measured_order(runs[i].m, runs[i].order, runs[i].n, NULL);
        printf("  order %-8s %d: measured %.2f, nominal %.0f\n", nbody_method_name(runs[i].m), runs[i].order, p, runs[i].nominal);
        CHECK(fabs(p - runs[i].nominal) <= 0.3, "%s(%d): measured order %.2f, nominal %.0f", nbody_method_name(runs[i].m),
              runs[i].order, p, runs[i].nominal);
        CHECK((int)runs[i].nominal == nbody_method_order(runs[i].m, runs[i].order), "%s: nbody_method_order says %d",
              nbody_method_name(runs[i].m), nbody_method_order(runs[i].m, runs[i].order));
    }
    /* the seed project's mistake, propagating with the lower-order row, fails the same check */
    {
        const nbody_method ids[4] = {NBODY_RKCK, NBODY_RKDP, NBODY_RKDVERK, NBODY_RKF};
        const int n[4] = {256, 384, 384, 128};
        nbody__method_info wrong[4];
        nbody__tableau swapped[4];
        int j;
        for (j = 0; j < 4; ++j) {
            double p;
            int nominal = nbody__methods[ids[j]].order;
            wrong[j] = nbody__methods[ids[j]];
            swapped[j] = *wrong[j].tableau;
            swapped[j].b = wrong[j].tableau->bhat; swapped[j].bhat = wrong[j].tableau->b; swapped[j].fsal = 0;
            wrong[j].tableau = &swapped[j];
            p = measured_order(ids[j], 0, n[j], &wrong[j]);
            printf("  order %-8s propagating its embedded row: measured %.2f\n", nbody_method_name(ids[j]), p);
            CHECK(fabs(p - nominal) > 0.3, "%s propagated with the embedded row measured %.2f, passes as order %d",
                  nbody_method_name(ids[j]), p, nominal);
        }
    }
}

/* ---- adaptive methods: Kepler end error falls with the tolerance; stats add up ---- */
static const nbody_method adaptive_methods[] = {NBODY_RKCK, NBODY_RKDP, NBODY_RKDVERK, NBODY_RKF, NBODY_RKLC, NBODY_BS};
#define N_ADAPTIVE (int)(sizeof adaptive_methods / sizeof adaptive_methods[0])

static void test_adaptive_kepler(void) {
    int i, t;
    for (i = 0; i < N_ADAPTIVE; ++i) {
        nbody_method m = adaptive_methods[i];
        double prev = 1e300;
        for (t = 5; t <= 11; t += 3) {
            nbody_desc d = desc_for(m, 0, 1e-2, pow(10, -t));
            nbody_stats st;
            double e = kepler_error(&d, NULL, &st);
            printf("  adaptive %-8s tol 1e-%02d: error %.2e, %llu steps, %llu rejected, %llu evaluations\n",
                   nbody_method_name(m), t, e, st.steps, st.rejected, st.force_evals);
            /* 1000 times smaller tolerance: the error falls at least 30-fold */
            CHECK(e >= 0 && e * 30 < prev, "%s: error %.3g at tolerance 1e-%d, previous %.3g", nbody_method_name(m), e, t, prev);
            if (m != NBODY_BS && m != NBODY_RKLC) {
                /* a retried step reuses f(y); FSAL reuses it on every step */
                const nbody__tableau *T = nbody__methods[m].tableau;
                unsigned long long S = (unsigned long long)T->stages;
                unsigned long long want = T->fsal ? 1 + (S - 1) * (st.steps + st.rejected) : S * st.steps + (S - 1) * st.rejected;
                CHECK(st.force_evals == want,
                      "%s: %llu evaluations for %llu steps + %llu rejected", nbody_method_name(m), st.force_evals, st.steps, st.rejected);
            }
            prev = e;
        }
    }
}

static void test_fixed_stats(void) {
    nbody_desc d;
    nbody_stats st;
    int p;
    d = desc_for(NBODY_RK4, 0, 2 * PI / 100, 0); kepler_error(&d, NULL, &st);
    CHECK(st.steps == 100 && st.rejected == 0 && st.force_evals == 400, "rk4: %llu steps %llu evals", st.steps, st.force_evals);
    d = desc_for(NBODY_LEAPFROG, 0, 2 * PI / 100, 0); kepler_error(&d, NULL, &st);
    CHECK(st.steps == 100 && st.force_evals == 101, "leapfrog: %llu steps %llu evals", st.steps, st.force_evals);
    d = desc_for(NBODY_RKDP, 0, 2 * PI / 100, 0); kepler_error(&d, NULL, &st);
    CHECK(st.steps == 100 && st.force_evals == 601, "rkdp fixed (FSAL): %llu steps %llu evals", st.steps, st.force_evals);
    for (p = 1; p <= 5; ++p) {                /* p-1 starting steps of an order-p RK, then 1 evaluation a step */
        const int stages[6] = {0, 1, 2, 3, 4, 6};
        unsigned long long want = (unsigned long long)((p - 1) * stages[p] + (100 - (p - 1)));
        d = desc_for(NBODY_ADAMS, p, 2 * PI / 100, 0); kepler_error(&d, NULL, &st);
        CHECK(st.steps == 100 && st.force_evals == want, "adams %d: %llu steps, %llu evals, expected %llu", p, st.steps,
              st.force_evals, want);
    }
    d = desc_for(NBODY_BS, 0, 2 * PI / 100, 0); kepler_error(&d, NULL, &st);
    CHECK(st.force_evals == 100 * 17, "bs fixed (n = 2,4,6,8): %llu evals", st.force_evals);
}

/* ---- Adams restarts: a clipped step, and nbody_set_state ---- */
static void test_adams_restart(void) {
    nbody_system s = {0}, s0 = {0}, a = {0};
    nbody_sim *sim;
    nbody_desc d = desc_for(NBODY_ADAMS, 5, 2 * PI / 4096, 0);
    double whole = kepler_error(&d, NULL, NULL), chunked;
    int i;
    kepler(&s, KEPLER_E); kepler(&s0, KEPLER_E); kepler(&a, KEPLER_E);
    nbody_create(&sim, &d, &s);
    for (i = 1; i <= 7; ++i) nbody_advance(sim, (nbody_real)(2 * PI * i / 7));   /* every chunk ends on a clipped step */
    nbody_get_state(sim, &s);
    chunked = fabs((double)s.x[1] - (1 - KEPLER_E)) + fabs((double)s.y[1]) + fabs((double)s.vx[1]) +
              fabs((double)s.vy[1] - sqrt((1 + KEPLER_E) / (1 - KEPLER_E)));
    printf("  adams 5 after 7 clipped chunks: error %.2e (uninterrupted %.2e), %llu evaluations\n", chunked, whole,
           nbody_get_stats(sim).force_evals);
    CHECK(chunked < 4 * whole + 1e-10, "adams 5 restarted after clipped steps: error %.3g vs %.3g", chunked, whole);
    /* set_state resets the history: the same run again gives bitwise the same state */
    nbody_set_state(sim, &s0);
    CHECK(sim->adams.history == 0, "set_state keeps history %d", sim->adams.history);
    for (i = 0; i < 50; ++i) nbody_step(sim);
    nbody_get_state(sim, &a);
    nbody_destroy(sim);
    nbody_create(&sim, &d, &s0);
    for (i = 0; i < 50; ++i) nbody_step(sim);
    nbody_get_state(sim, &s);
    CHECK(memcmp(a.x, s.x, 6 * 2 * sizeof(nbody_real)) == 0 && a.t == s.t, "adams after set_state differs from a fresh run");
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&s0); nbody_system_free(&a);
}

/* ---- figure-eight: back to the start after one period ---- */
static void test_figure_eight(void) {
    int i, j;
    for (i = 0; i < N_ADAPTIVE; ++i) {
        nbody_system s = {0}, s0 = {0};
        nbody_sim *sim;
        nbody_desc d = desc_for(adaptive_methods[i], 0, 1e-3, 1e-12);
        double dev = 0;
        nbody_result r;
        nbody_ic_figure_eight(&s); nbody_ic_figure_eight(&s0);
        nbody_create(&sim, &d, &s);
        r = nbody_advance(sim, (nbody_real)6.32591398);
        nbody_get_state(sim, &s);
        for (j = 0; j < 3; ++j) {
            dev = fmax(dev, fmax(fabs((double)(s.x[j] - s0.x[j])), fabs((double)(s.y[j] - s0.y[j]))));
            dev = fmax(dev, fmax(fabs((double)(s.vx[j] - s0.vx[j])), fabs((double)(s.vy[j] - s0.vy[j]))));
        }
        printf("  figure-eight %-8s: deviation after one period %.2e, %llu evaluations\n", nbody_method_name(adaptive_methods[i]),
               dev, nbody_get_stats(sim).force_evals);
        CHECK(r == NBODY_OK && dev < 1e-6, "%s: figure-eight off by %.3g after one period", nbody_method_name(adaptive_methods[i]), dev);
        nbody_destroy(sim);
        nbody_system_free(&s); nbody_system_free(&s0);
    }
}

/* ---- Pythagorean three-body problem (Szebehely & Peters 1967) to t = 70 ---- */
static void test_pythagorean(void) {
    const nbody_method ms[] = {NBODY_RKCK, NBODY_RKDP, NBODY_RKF, NBODY_BS};
    unsigned i;
    for (i = 0; i < sizeof ms / sizeof ms[0]; ++i) {
        nbody_system s = {0};
        nbody_sim *sim;
        nbody_desc d = desc_for(ms[i], 0, 1e-3, 1e-12);
        nbody_invariants e0, e1;
        double M, cx, cy, cvx, cvy, dx, dy, dvx, dvy, r12, mu, eb, a, h, ecc, rb, vb2, eesc, de;
        nbody_result r;
        nbody_ic_pythagorean(&s);
        nbody_measure(&s, 1, 0, &e0);
        nbody_create(&sim, &d, &s);
        r = nbody_advance(sim, 70);
        nbody_get_state(sim, &s);
        nbody_measure(&s, 1, 0, &e1);
        de = fabs((double)((e1.energy - e0.energy) / e0.energy));
        /* bodies 1 and 2 (masses 4, 5): their two-body orbit */
        M = (double)(s.m[1] + s.m[2]); mu = M;
        dx = (double)(s.x[2] - s.x[1]); dy = (double)(s.y[2] - s.y[1]);
        dvx = (double)(s.vx[2] - s.vx[1]); dvy = (double)(s.vy[2] - s.vy[1]);
        r12 = sqrt(dx * dx + dy * dy);
        eb = 0.5 * (dvx * dvx + dvy * dvy) - mu / r12;
        a = -mu / (2 * eb);
        h = dx * dvy - dy * dvx;
        ecc = sqrt(fmax(0, 1 + 2 * eb * h * h / (mu * mu)));
        /* body 0 (mass 3) against the binary's centre of mass */
        cx = (double)(s.m[1] * s.x[1] + s.m[2] * s.x[2]) / M; cy = (double)(s.m[1] * s.y[1] + s.m[2] * s.y[2]) / M;
        cvx = (double)(s.m[1] * s.vx[1] + s.m[2] * s.vx[2]) / M; cvy = (double)(s.m[1] * s.vy[1] + s.m[2] * s.vy[2]) / M;
        rb = sqrt(pow((double)s.x[0] - cx, 2) + pow((double)s.y[0] - cy, 2));
        vb2 = pow((double)s.vx[0] - cvx, 2) + pow((double)s.vy[0] - cvy, 2);
        eesc = 0.5 * vb2 - (M + (double)s.m[0]) / rb;
        printf("  pythagorean %-8s: dE/E %.1e, escaper at %.1f moving out (E %.3f), binary a %.3f e %.3f, %llu evaluations\n",
               nbody_method_name(ms[i]), de, rb, eesc, a, ecc, nbody_get_stats(sim).force_evals);
        CHECK(r == NBODY_OK, "%s: pythagorean run failed: %s", nbody_method_name(ms[i]), nbody_result_string(r));
        CHECK(de < 1e-8, "%s: pythagorean energy error %.3g", nbody_method_name(ms[i]), de);
        CHECK(rb > 10 && eesc > 0, "%s: body of mass 3 not escaping (distance %.3g, energy %.3g)", nbody_method_name(ms[i]), rb, eesc);
        CHECK(eb < 0 && a > 0 && a < 1 && ecc > 0.5 && ecc < 1, "%s: no tight eccentric binary (a %.3g, e %.3g)",
              nbody_method_name(ms[i]), a, ecc);
        nbody_destroy(sim);
        nbody_system_free(&s);
    }
}

/* ---- leapfrog: bounded energy error, no secular drift, over 1e5 steps (100 orbits) ---- */
static double kepler_energy(const nbody_system *s) {
    double r = sqrt((double)(s->x[1] * s->x[1] + s->y[1] * s->y[1]));
    return 0.5 * (double)(s->vx[1] * s->vx[1] + s->vy[1] * s->vy[1]) - 1 / r;
}

static void test_leapfrog_drift(void) {
    nbody_system s = {0};
    nbody_sim *sim;
    nbody_desc d = desc_for(NBODY_LEAPFROG, 0, 2 * PI / 1000, 0);
    double e0, first = 0, last = 0, mean_first = 0, mean_last = 0;
    long i, n = 100000;
    kepler(&s, KEPLER_E);
    e0 = kepler_energy(&s);
    nbody_create(&sim, &d, &s);
    for (i = 1; i <= n; ++i) {
        double de;
        nbody_step(sim);
        nbody_get_state(sim, &s);
        de = (kepler_energy(&s) - e0) / fabs(e0);
        if (i <= 10000) { first = fmax(first, fabs(de)); mean_first += de / 10000; }
        if (i > n - 10000) { last = fmax(last, fabs(de)); mean_last += de / 10000; }
    }
    printf("  leapfrog 1e5 steps: max |dE/E| first 10 orbits %.3e, last 10 orbits %.3e; mean %.3e -> %.3e\n", first, last,
           mean_first, mean_last);
    CHECK(last < 1.05 * first, "leapfrog energy error grows: %.3g -> %.3g", first, last);
    CHECK(fabs(mean_last - mean_first) < 0.01 * first, "leapfrog mean energy drifts: %.3g -> %.3g", mean_first, mean_last);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* ---- every method on SIMPLE, OPENMP and BLOCK (and Kahan-compensated): same trajectory ---- */
static void test_engines(void) {
    const nbody_engine engines[] = {NBODY_ENGINE_SIMPLE, NBODY_ENGINE_OPENMP, NBODY_ENGINE_BLOCK};
    int m, e, comp;
    nbody_system s0 = {0};
    nbody_ic_plummer(&s0, 7, 11);
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m) {
        int adaptive = nbody__methods[m].adaptive;
        if (m == NBODY_WHFAST) continue;   /* whfast needs a dominant central body: tests/test_whfast.c */
        nbody_system ref = {0}, s = {0};
        nbody_stats st0;
        nbody_system_alloc(&ref, 7); nbody_system_alloc(&s, 7);
        memset(&st0, 0, sizeof st0);
        for (comp = 0; comp <= 1; ++comp)
            for (e = 0; e < 3; ++e) {
                nbody_sim *sim = NULL;
                nbody_desc d = desc_for((nbody_method)m, 0, 1e-2, adaptive ? 1e-8 : 0);
                nbody_stats st;
                double dev = 0;
                size_t i;
                nbody_result r;
                d.engine = engines[e]; d.softening = (nbody_real)0.05; d.compensated = comp;
                r = nbody_create(&sim, &d, &s0);
                if (r == NBODY_OK) r = nbody_advance(sim, 1);
                if (r == NBODY_OK) r = nbody_get_state(sim, &s);
                CHECK(r == NBODY_OK, "%s on %s: %s", nbody_method_name((nbody_method)m), nbody_engine_name(engines[e]), nbody_result_string(r));
                if (r != NBODY_OK) { nbody_destroy(sim); continue; }
                st = nbody_get_stats(sim);
                nbody_destroy(sim);
                if (comp == 0 && e == 0) { nbody_system_copy(&ref, &s); st0 = st; continue; }
                for (i = 0; i < 7; ++i)
                    dev = fmax(dev, fmax(fabs((double)(s.x[i] - ref.x[i])), fabs((double)(s.vx[i] - ref.vx[i]))));
                CHECK(dev < 1e-9 && s.t == ref.t, "%s on %s%s: off the simple engine by %.3g", nbody_method_name((nbody_method)m),
                      nbody_engine_name(engines[e]), comp ? " compensated" : "", dev);
                /* RADAU's predictor-corrector sweeps stop when a correction reaches round-off, so its
                   evaluation count follows each engine's force rounding; steps and rejections do not */
                CHECK(st.steps == st0.steps && st.rejected == st0.rejected &&
                      (st.force_evals == st0.force_evals || m == NBODY_RADAU),
                      "%s on %s%s: stats %llu/%llu/%llu vs %llu/%llu/%llu", nbody_method_name((nbody_method)m),
                      nbody_engine_name(engines[e]), comp ? " compensated" : "", st.steps, st.rejected, st.force_evals,
                      st0.steps, st0.rejected, st0.force_evals);
            }
        nbody_system_free(&ref); nbody_system_free(&s);
    }
    nbody_system_free(&s0);
}

/* ---- implicit stage equations that cannot converge ---- */
static void test_implicit_limits(void) {
    nbody_system s = {0}, after = {0};
    nbody_sim *sim;
    nbody_desc d = desc_for(NBODY_RKGL, 0, 0.5, 0);   /* h |df/dy| >> 1 at pericentre */
    nbody_result r;
    kepler(&s, 0.9); kepler(&after, 0.9);
    nbody_create(&sim, &d, &s);
    r = nbody_step(sim);
    nbody_get_state(sim, &after);
    CHECK(r == NBODY_ERR_STEP_TOO_SMALL && after.t == 0 && after.x[1] == s.x[1], "rkgl with a huge fixed step: %s, t = %g",
          nbody_result_string(r), (double)after.t);
    nbody_destroy(sim);
    d = desc_for(NBODY_RKLC, 0, 0.5, 1e-6);            /* with step control it shrinks instead */
    nbody_create(&sim, &d, &s);
    r = nbody_advance(sim, 1);
    CHECK(r == NBODY_OK && nbody_get_stats(sim).rejected > 0, "rklc adaptive from a huge step: %s", nbody_result_string(r));
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&after);
}

#ifndef EXPLORE
int main(void) {
    (void)check_skip;
    test_tableaux();
    test_orders();
    test_fixed_stats();
    test_adaptive_kepler();
    test_adams_restart();
    test_figure_eight();
    test_pythagorean();
    test_leapfrog_drift();
    test_engines();
    test_implicit_limits();
    return check_finish();
}
#endif
