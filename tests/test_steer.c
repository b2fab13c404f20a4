/* Steering a simulation (docs/steering.md): test particles (n_active) equal to the full sum
   with their masses set to zero on every engine; extra forces (time- and velocity-dependent,
   the stage time right) and hooks on every engine; leapfrog refusing a velocity-dependent
   force; exit conditions naming the bodies; collisions: a merger conserving mass, momentum
   and centre of mass to round-off on every method, a bounce keeping the energy with
   restitution 1; nbody_set_state with another n; the snapshot archive restarting bitwise. */
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "check.h"
#define REL_NAME "steer"
#include "rel_util.h"
#include <math.h>

static const nbody_engine engines[] = {NBODY_ENGINE_SIMPLE, NBODY_ENGINE_OPENMP, NBODY_ENGINE_BLOCK, NBODY_ENGINE_TREE,
                                       NBODY_ENGINE_OPENCL, NBODY_ENGINE_OPENCL_TREE, NBODY_ENGINE_CUDA,
                                       NBODY_ENGINE_CUDA_TREE};
#define NENG ((int)(sizeof engines / sizeof engines[0]))

static double max_rel(const nbody_real *a, const nbody_real *b, size_t n, double scale) {
    double w = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double e = fabs((double)a[i] - (double)b[i]) / scale;
        if (!(e <= w)) w = e;
    }
    return w;
}

/* ---- test particles: forces equal the full sum with the test particles' masses zero ---- */
static void test_particles(void) {
    const size_t n = 300, na = 30;
    nbody_system s;
    int k;
    memset(&s, 0, sizeof s);
    nbody_ic_plummer(&s, n, 7);
    for (k = 0; k < NENG; ++k) {
        nbody_desc d;
        nbody_system z;
        nbody_real *a[3], *b[3];
        double scale = 0, worst = 0;
        size_t i;
        int c, same = 1;
        if (!rel_engine_runs(engines[k])) { if (nbody_engine_available(engines[k])) check_skip(NULL, "test particles: engine not available"); continue; }
        memset(&d, 0, sizeof d);
        d.engine = engines[k];
        d.softening = (nbody_real)0.01;
        d.theta = (nbody_real)1e-6;          /* trees: every node opened, the direct sum */
        memset(&z, 0, sizeof z);
        nbody_system_alloc(&z, n);
        nbody_system_copy(&z, &s);
        for (i = na; i < n; ++i) z.m[i] = 0;
        for (c = 0; c < 3; ++c) {
            a[c] = (nbody_real *)malloc(n * sizeof(nbody_real));
            b[c] = (nbody_real *)malloc(n * sizeof(nbody_real));
        }
        CHECK(nbody_accelerations(&d, &z, a[0], a[1], a[2]) == NBODY_OK, "%s: full sum", nbody_engine_name(d.engine));
        d.n_active = na;
        CHECK(nbody_accelerations(&d, &s, b[0], b[1], b[2]) == NBODY_OK, "%s: n_active", nbody_engine_name(d.engine));
        for (c = 0; c < 3; ++c)
            for (i = 0; i < n; ++i) if (fabs((double)a[c][i]) > scale) scale = fabs((double)a[c][i]);
        for (c = 0; c < 3; ++c) {
            double w = max_rel(a[c], b[c], n, scale);
            if (w > worst) worst = w;
            if (memcmp(a[c], b[c], n * sizeof(nbody_real)) != 0) same = 0;
        }
        /* the same terms in the same order on SIMPLE; other engines may sum in another order */
        if (d.engine == NBODY_ENGINE_SIMPLE) CHECK(same, "simple: test particles not bitwise the full sum");
        CHECK(worst < (sizeof(nbody_real) == 4 ? 1e-5 : 1e-12), "%s: test particles vs full sum, rel %g",
              nbody_engine_name(d.engine), worst);
        for (c = 0; c < 3; ++c) { free(a[c]); free(b[c]); }
        nbody_system_free(&z);
    }
    nbody_system_free(&s);
}

/* the active bodies move as if the test particles were not there: bitwise on SIMPLE */
static void test_particles_run(void) {
    nbody_system s, a, b, sub;
    nbody_sim *sim;
    nbody_desc d;
    size_t i;
    int ok = 1;
    memset(&s, 0, sizeof s); memset(&a, 0, sizeof a); memset(&b, 0, sizeof b); memset(&sub, 0, sizeof sub);
    memset(&d, 0, sizeof d);
    nbody_ic_plummer(&s, 200, 3);
    d.engine = NBODY_ENGINE_SIMPLE; d.softening = (nbody_real)0.05; d.dt = (nbody_real)1e-2; d.method = NBODY_RK4;
    d.n_active = 20;
    nbody_create(&sim, &d, &s);
    CHECK(nbody_advance(sim, (nbody_real)0.5) == NBODY_OK, "n_active run");
    rel_state(sim, 200, &a);
    nbody_destroy(sim);
    nbody_system_alloc(&sub, 20);
    memcpy(sub.x, s.x, 20 * sizeof(nbody_real)); memcpy(sub.y, s.y, 20 * sizeof(nbody_real));
    memcpy(sub.z, s.z, 20 * sizeof(nbody_real)); memcpy(sub.vx, s.vx, 20 * sizeof(nbody_real));
    memcpy(sub.vy, s.vy, 20 * sizeof(nbody_real)); memcpy(sub.vz, s.vz, 20 * sizeof(nbody_real));
    memcpy(sub.m, s.m, 20 * sizeof(nbody_real));
    d.n_active = 0;
    nbody_create(&sim, &d, &sub);
    nbody_advance(sim, (nbody_real)0.5);
    rel_state(sim, 20, &b);
    nbody_destroy(sim);
    for (i = 0; i < 20; ++i)
        if (a.x[i] != b.x[i] || a.vy[i] != b.vy[i] || a.z[i] != b.z[i]) ok = 0;
    CHECK(ok, "active bodies differ from the run without test particles");
    d.n_active = 201;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT, "n_active > n accepted");
    nbody_system_free(&s); nbody_system_free(&a); nbody_system_free(&b); nbody_system_free(&sub);
}

/* ---- extra forces ---- */
typedef struct force_ctx { int calls; nbody_real k; } force_ctx;

/* a_x += cos(t) (time), a_y -= k v_y (velocity) */
static void drive_and_drag(size_t n, nbody_real t, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                           const nbody_real *vx, const nbody_real *vy, const nbody_real *vz, const nbody_real *m,
                           nbody_real *ax, nbody_real *ay, nbody_real *az, void *user) {
    force_ctx *c = (force_ctx *)user;
    size_t i;
    (void)x; (void)y; (void)z; (void)vx; (void)vz; (void)m; (void)az;
    c->calls++;
    for (i = 0; i < n; ++i) { ax[i] += (nbody_real)cos((double)t); ay[i] -= c->k * vy[i]; }
}

static void test_extra_force(void) {
    int k;
    for (k = 0; k < NENG; ++k) {
        nbody_system s;
        nbody_sim *sim;
        nbody_desc d;
        force_ctx ctx = {0, (nbody_real)0.7};
        nbody_result r;
        double ex, ey;
        if (!rel_engine_runs(engines[k])) { if (nbody_engine_available(engines[k])) check_skip(NULL, "extra force: engine not available"); continue; }
        memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
        /* two bodies far apart with tiny masses: gravity below the checks' precision */
        nbody_system_alloc(&s, 2);
        s.m[0] = s.m[1] = (nbody_real)1e-20; s.x[1] = 100; s.vy[0] = s.vy[1] = 1;
        d.engine = engines[k]; d.method = NBODY_RK4; d.dt = (nbody_real)1e-2;
        d.extra_force = drive_and_drag; d.extra_force_user_data = &ctx;
        r = nbody_create(&sim, &d, &s);
        CHECK(r == NBODY_OK, "%s: create with extra force: %s", nbody_engine_name(d.engine), nbody_result_string(r));
        if (r != NBODY_OK) { nbody_system_free(&s); continue; }
        CHECK(nbody_advance(sim, 1) == NBODY_OK, "%s: advance", nbody_engine_name(d.engine));
        nbody_get_state(sim, &s);
        /* x = 1 - cos t, y = (1 - e^{-k t}) / k: RK4 with h = 0.01 to about 1e-10 when the
           stage times are right (a wrong stage time is an O(h) error) */
        ex = fabs((double)s.x[0] - (1 - cos(1.0)));
        ey = fabs((double)s.y[0] - (1 - exp(-0.7)) / 0.7);
        CHECK(ex < 1e-9 && ey < 1e-9, "%s: extra force solution off by %g, %g", nbody_engine_name(d.engine), ex, ey);
        CHECK(ctx.calls == 400, "%s: %d callback calls for 100 RK4 steps", nbody_engine_name(d.engine), ctx.calls);
        nbody_destroy(sim);
        nbody_system_free(&s);
    }
}

static void test_leapfrog_refuses(void) {
    nbody_system s;
    nbody_sim *sim = NULL;
    nbody_desc d;
    force_ctx ctx = {0, 0};
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
    nbody_ic_figure_eight(&s);
    d.extra_force = drive_and_drag; d.extra_force_user_data = &ctx;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT, "leapfrog took a velocity-dependent force");
    d.extra_force_velocity_free = 1;       /* (k = 0: the callback really ignores velocities) */
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "leapfrog refused a velocity-free force");
    CHECK(nbody_advance(sim, (nbody_real)0.1) == NBODY_OK && ctx.calls == 101, "leapfrog with a force: %d calls", ctx.calls);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* ---- hooks ---- */
typedef struct hook_ctx { int before, after, stop_at, grow_at; } hook_ctx;

static int count_before(nbody_sim *sim, void *u) { (void)sim; ((hook_ctx *)u)->before++; return 0; }
static int count_after(nbody_sim *sim, void *u) {
    hook_ctx *c = (hook_ctx *)u;
    c->after++;
    if (c->grow_at && c->after == c->grow_at) {        /* add a body far out, at rest */
        size_t n = nbody_get_n(sim);
        nbody_system s, t;
        memset(&s, 0, sizeof s); memset(&t, 0, sizeof t);
        nbody_system_alloc(&s, n); nbody_system_alloc(&t, n + 1);
        nbody_get_state(sim, &s);
        memcpy(t.x, s.x, n * sizeof(nbody_real)); memcpy(t.y, s.y, n * sizeof(nbody_real));
        memcpy(t.z, s.z, n * sizeof(nbody_real)); memcpy(t.vx, s.vx, n * sizeof(nbody_real));
        memcpy(t.vy, s.vy, n * sizeof(nbody_real)); memcpy(t.vz, s.vz, n * sizeof(nbody_real));
        memcpy(t.m, s.m, n * sizeof(nbody_real));
        t.x[n] = 10; t.m[n] = (nbody_real)0.01; t.t = s.t;
        if (nbody_set_state(sim, &t) != NBODY_OK) c->grow_at = -1;
        nbody_system_free(&s); nbody_system_free(&t);
    }
    return c->stop_at && c->after == c->stop_at;
}

static void test_hooks(void) {
    int k;
    for (k = 0; k < NENG; ++k) {
        nbody_system s;
        nbody_sim *sim;
        nbody_desc d;
        nbody_event ev = {NBODY_EVENT_NONE, 0, 0, 0, 0, 0, 0};
        hook_ctx c = {0, 0, 0, 5};
        nbody_result r;
        if (!rel_engine_runs(engines[k])) { if (nbody_engine_available(engines[k])) check_skip(NULL, "hooks: engine not available"); continue; }
        memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
        nbody_ic_figure_eight(&s);
        d.engine = engines[k]; d.method = NBODY_ADAMS; d.dt = (nbody_real)1e-2;
        d.before_step = count_before; d.after_step = count_after; d.hook_user_data = &c;
        nbody_create(&sim, &d, &s);
        r = nbody_advance(sim, (nbody_real)0.2);
        CHECK(r == NBODY_OK && c.before == 20 && c.after == 20, "%s: hooks %d/%d for 20 steps (%s)",
              nbody_engine_name(d.engine), c.before, c.after, nbody_result_string(r));
        CHECK(c.grow_at == 5 && nbody_get_n(sim) == 4, "%s: a hook's nbody_set_state of n + 1: n = %lu",
              nbody_engine_name(d.engine), (unsigned long)nbody_get_n(sim));
        {   /* the new body fell towards the others: it moved, and the run went on */
            nbody_system t;
            memset(&t, 0, sizeof t);
            nbody_system_alloc(&t, 4);
            CHECK(nbody_get_state(sim, &t) == NBODY_OK && t.x[3] < 10 && t.x[3] > 9.9 && t.t == (nbody_real)0.2,
                  "%s: added body x = %g at t = %g", nbody_engine_name(d.engine), (double)t.x[3], (double)t.t);
            nbody_system_free(&t);
        }
        c.stop_at = c.after + 3;
        r = nbody_advance(sim, 1);
        nbody_get_event(sim, &ev);
        CHECK(r == NBODY_STOPPED && ev.kind == NBODY_EVENT_HOOK && c.after == c.stop_at,
              "%s: a hook's stop: %s", nbody_engine_name(d.engine), nbody_result_string(r));
        CHECK(nbody_get_stats(sim).steps == (unsigned long long)c.after, "%s: steps != hook calls", nbody_engine_name(d.engine));
        nbody_destroy(sim);
        nbody_system_free(&s);
    }
}

/* ---- exit conditions ---- */
static void test_exits(void) {
    nbody_system s;
    nbody_sim *sim;
    nbody_desc d;
    nbody_event ev = {NBODY_EVENT_NONE, 0, 0, 0, 0, 0, 0};
    nbody_result r;
    double dist;
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
    nbody_system_alloc(&s, 3);
    s.x[0] = -1; s.x[1] = 1; s.m[0] = s.m[1] = 1;           /* a radial infall */
    s.y[2] = 5; s.m[2] = (nbody_real)1e-3; s.vy[2] = 3;     /* and a runaway */
    d.method = NBODY_RK4; d.dt = (nbody_real)1e-3; d.engine = NBODY_ENGINE_SIMPLE;
    d.stop_distance = (nbody_real)0.5;
    nbody_create(&sim, &d, &s);
    r = nbody_advance(sim, 10);
    nbody_get_event(sim, &ev);
    nbody_get_state(sim, &s);
    dist = fabs((double)(s.x[1] - s.x[0]));
    CHECK(r == NBODY_STOPPED && ev.kind == NBODY_EVENT_CLOSE_ENCOUNTER && ev.i == 0 && ev.j == 1,
          "close encounter: %s kind %d (%lu, %lu)", nbody_result_string(r), (int)ev.kind, (unsigned long)ev.i, (unsigned long)ev.j);
    CHECK(dist < 0.5 && dist > 0.45 && fabs(dist - (double)ev.distance) < 1e-12 && ev.t == s.t && s.t < 10,
          "close encounter at distance %g (event %g), t %g", dist, (double)ev.distance, (double)s.t);
    nbody_destroy(sim);
    s.t = 0; s.x[0] = -1; s.x[1] = 1; s.vx[0] = s.vx[1] = 0; s.y[2] = 5; s.vy[2] = 3; s.x[2] = 0;
    s.vy[0] = (nbody_real)0.7; s.vy[1] = (nbody_real)-0.7;   /* now a binary that never closes to 0.5 */
    d.escape_distance = 8;
    nbody_create(&sim, &d, &s);
    r = nbody_advance(sim, 10);
    nbody_get_event(sim, &ev);
    nbody_get_state(sim, &s);
    CHECK(r == NBODY_STOPPED && ev.kind == NBODY_EVENT_ESCAPE && ev.i == 2 && ev.distance > 8 && s.y[2] > 7.9,
          "escape: %s kind %d body %lu at %g", nbody_result_string(r), (int)ev.kind, (unsigned long)ev.i, (double)ev.distance);
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* ---- collisions ---- */
static void momentum(const nbody_system *s, double *p, double *c, double *mass, double *scale) {
    size_t i;
    p[0] = p[1] = p[2] = c[0] = c[1] = c[2] = *mass = *scale = 0;
    for (i = 0; i < s->n; ++i) {
        double m = (double)s->m[i];
        p[0] += m * (double)s->vx[i]; p[1] += m * (double)s->vy[i]; p[2] += m * (double)s->vz[i];
        c[0] += m * (double)s->x[i]; c[1] += m * (double)s->y[i]; c[2] += m * (double)s->z[i];
        *mass += m;
        *scale += m * sqrt((double)(s->vx[i] * s->vx[i] + s->vy[i] * s->vy[i] + s->vz[i] * s->vz[i]));
    }
}

/* a dense cluster of spheres that merge: mass exact, momentum and centre of mass (moving
   with the total momentum) to round-off, on every method and on the direct CPU engines */
static void test_merge(void) {
    const nbody_engine eng[] = {NBODY_ENGINE_SIMPLE, NBODY_ENGINE_BLOCK, NBODY_ENGINE_OPENCL};
    int m, k;
    for (k = 0; k < 3; ++k)
        for (m = 1; m < NBODY_METHOD_COUNT_; ++m) {
            nbody_system s, e;
            nbody_sim *sim;
            nbody_desc d;
            nbody_event ev = {NBODY_EVENT_NONE, 0, 0, 0, 0, 0, 0};
            nbody_real r[64];
            double p0[3], c0[3], m0, sc0, p1[3], c1[3], m1, sc1, T = 0.5, dp = 0, dc = 0;
            nbody_result res;
            size_t i;
            int c;
            if (!rel_engine_runs(eng[k])) { if (m == 1 && nbody_engine_available(eng[k])) check_skip(NULL, "merge: engine not available"); continue; }
            if (k > 0 && m != NBODY_LEAPFROG && m != NBODY_ADAMS) continue;
            if (m == NBODY_WHFAST) continue;   /* whfast needs a dominant central body: tests/test_whfast.c */
            memset(&s, 0, sizeof s); memset(&e, 0, sizeof e); memset(&d, 0, sizeof d);
            nbody_ic_plummer(&s, 64, 11);
            for (i = 0; i < 64; ++i) { s.vx[i] += (nbody_real)0.3; r[i] = (nbody_real)0.04; }   /* drifting */
            momentum(&s, p0, c0, &m0, &sc0);
            d.engine = eng[k]; d.method = (nbody_method)m; d.dt = (nbody_real)2e-3; d.softening = (nbody_real)0.05;
            d.collision = NBODY_COLLISION_MERGE;
            /* individual (block) steps break the pairwise symmetry of the kicks: momentum is then
               kept to the integration error only; shared steps keep it to round-off */
            if (m == NBODY_HERMITE) d.stepping = NBODY_STEPPING_SHARED;
            if (m == NBODY_RKCK || m == NBODY_RKDP || m == NBODY_RKDVERK || m == NBODY_RKF || m == NBODY_RKLC || m == NBODY_BS)
                d.tolerance = (nbody_real)1e-8;
            nbody_create(&sim, &d, &s);
            nbody_set_radii(sim, r);
            res = nbody_advance(sim, (nbody_real)T);
            nbody_get_event(sim, &ev);
            CHECK(res == NBODY_OK && ev.merges > 0 && nbody_get_n(sim) == 64 - ev.merges,
                  "%s %s: merges %llu, n %lu: %s", nbody_engine_name(d.engine), nbody_method_name(d.method), ev.merges,
                  (unsigned long)nbody_get_n(sim), nbody_result_string(res));
            if (res == NBODY_OK) {
                nbody_system_alloc(&e, nbody_get_n(sim));
                nbody_get_state(sim, &e);
                momentum(&e, p1, c1, &m1, &sc1);
                for (c = 0; c < 3; ++c) {
                    double a = fabs(p1[c] - p0[c]) / sc0, b = fabs(c1[c] - (c0[c] + p0[c] * T)) / m0;
                    if (a > dp) dp = a;
                    if (b > dc) dc = b;
                }
                CHECK(fabs(m1 - m0) < 1e-15 * m0 && dp < 1e-13 && dc < 1e-13,
                      "%s %s: through %llu mergers: mass %g, momentum %g, centre of mass %g", nbody_engine_name(d.engine),
                      nbody_method_name(d.method), ev.merges, fabs(m1 - m0) / m0, dp, dc);
                nbody_system_free(&e);
            }
            nbody_destroy(sim);
            nbody_system_free(&s);
        }
}

/* two spheres head on, gravity negligible: restitution 1 keeps the kinetic energy and
   reverses the relative velocity; 0.5 halves it; STOP names the pair */
static void test_bounce(void) {
    nbody_real e;
    for (e = (nbody_real)0.5; e <= 1; e += (nbody_real)0.5) {
        nbody_system s;
        nbody_sim *sim;
        nbody_desc d;
        nbody_event ev = {NBODY_EVENT_NONE, 0, 0, 0, 0, 0, 0};
        nbody_real r[2] = {(nbody_real)0.1, (nbody_real)0.2};
        double k0, k1, u0, u1;
        memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
        nbody_system_alloc(&s, 2);
        s.x[0] = -1; s.x[1] = 1; s.y[1] = (nbody_real)0.1; s.vx[0] = 1; s.vx[1] = (nbody_real)-0.5;
        s.m[0] = (nbody_real)1e-12; s.m[1] = (nbody_real)3e-12;
        k0 = 0.5 * (double)(s.m[0] * s.vx[0] * s.vx[0] + s.m[1] * s.vx[1] * s.vx[1]);
        u0 = (double)(s.vx[1] - s.vx[0]);
        d.method = NBODY_RK4; d.dt = (nbody_real)1e-2; d.collision = NBODY_COLLISION_BOUNCE; d.restitution = e;
        d.engine = NBODY_ENGINE_BLOCK;
        nbody_create(&sim, &d, &s);
        nbody_set_radii(sim, r);
        CHECK(nbody_advance(sim, 3) == NBODY_OK, "bounce run");
        nbody_get_state(sim, &s);
        nbody_get_event(sim, &ev);
        k1 = 0.5 * ((double)s.m[0] * (double)(s.vx[0] * s.vx[0] + s.vy[0] * s.vy[0]) +
                    (double)s.m[1] * (double)(s.vx[1] * s.vx[1] + s.vy[1] * s.vy[1]));
        u1 = sqrt((double)((s.vx[1] - s.vx[0]) * (s.vx[1] - s.vx[0]) + (s.vy[1] - s.vy[0]) * (s.vy[1] - s.vy[0])));
        CHECK(ev.bounces == 1, "restitution %g: %llu bounces", (double)e, ev.bounces);
        if (e == 1) CHECK(fabs(k1 - k0) < 1e-12 * k0 && fabs(u1 - fabs(u0)) < 1e-12, "restitution 1: energy %g -> %g", k0, k1);
        /* off-centre: only the normal part is scaled; |u| lies between e|u0| and |u0| */
        else CHECK(k1 < k0 && u1 < fabs(u0) && u1 > 0.5 * fabs(u0), "restitution 0.5: energy %g -> %g, |u| %g -> %g", k0, k1, fabs(u0), u1);
        CHECK(s.x[1] - s.x[0] > 1, "the spheres went apart after the bounce");
        nbody_destroy(sim);
        s.t = 0; s.x[0] = -1; s.x[1] = 1; s.y[0] = 0; s.y[1] = (nbody_real)0.1; s.vx[0] = 1; s.vx[1] = (nbody_real)-0.5;
        s.vy[0] = s.vy[1] = 0;
        d.collision = NBODY_COLLISION_STOP;
        nbody_create(&sim, &d, &s);
        nbody_set_radii(sim, r);
        CHECK(nbody_advance(sim, 3) == NBODY_STOPPED && nbody_get_event(sim, &ev) == NBODY_OK &&
              ev.kind == NBODY_EVENT_COLLISION && ev.i == 0 && ev.j == 1 && ev.distance < (nbody_real)0.3,
              "collision stop: kind %d", (int)ev.kind);
        nbody_destroy(sim);
        nbody_system_free(&s);
    }
}

/* ---- archive: a restart from snapshot i continues bitwise ---- */
static void archive_case(nbody_desc d, int merge, const char *label) {
    const char *path = rel_path(label);
    nbody_system s, a, b;
    nbody_sim *sim, *back = NULL;
    nbody_archive *arc = NULL;
    nbody_real r[100];
    size_t i, cnt;
    nbody_result res;
    remove(path);
    memset(&s, 0, sizeof s); memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
    nbody_ic_plummer(&s, 100, 5);
    for (i = 0; i < 100; ++i) r[i] = (nbody_real)0.03;
    if (merge) d.collision = NBODY_COLLISION_MERGE;
    d.softening = (nbody_real)0.05;
    d.n_active = 60;
    nbody_create(&sim, &d, &s);
    if (merge) nbody_set_radii(sim, r);
    CHECK(nbody_archive_attach(sim, path, (nbody_real)0.1, 0, 0) == NBODY_OK, "%s: attach", label);
    res = nbody_advance(sim, 1);
    CHECK(res == NBODY_OK, "%s: run: %s", label, nbody_result_string(res));
    rel_state(sim, nbody_get_n(sim), &a);
    nbody_destroy(sim);
    CHECK(nbody_archive_open(&arc, path) == NBODY_OK, "%s: open", label);
    cnt = nbody_archive_count(arc);
    CHECK(cnt >= 9 && cnt <= 10, "%s: %lu snapshots for t = 1 every 0.1", label, (unsigned long)cnt);
    CHECK(cnt > 4 && nbody_archive_time(arc, 3) >= (nbody_real)0.4 && nbody_archive_time(arc, 3) < (nbody_real)0.45,
          "%s: snapshot 3 at t = %g", label, cnt > 4 ? (double)nbody_archive_time(arc, 3) : -1.0);
    res = cnt > 4 ? nbody_archive_load(arc, 3, &d, &back) : NBODY_ERR_FORMAT;
    CHECK(res == NBODY_OK, "%s: load 3: %s", label, nbody_result_string(res));
    if (res == NBODY_OK) {
        res = nbody_advance(back, 1);
        rel_state(back, nbody_get_n(back), &b);
        CHECK(res == NBODY_OK && rel_same(&a, &b), "%s: restart from snapshot 3 not bitwise (n %lu/%lu)", label,
              (unsigned long)a.n, (unsigned long)b.n);
        nbody_destroy(back);
    }
    CHECK(nbody_archive_load(arc, cnt, &d, &back) == NBODY_ERR_INVALID_ARGUMENT, "%s: load past the end", label);
    nbody_archive_close(arc);
    {   /* a torn last record (an append cut short) is left out, the others stay */
        FILE *f = fopen(path, "rb");
        long end;
        char *buf;
        fseek(f, 0, SEEK_END); end = ftell(f); fseek(f, 0, SEEK_SET);
        buf = (char *)malloc((size_t)end);
        if (fread(buf, 1, (size_t)end, f) != (size_t)end) end = 0;
        fclose(f);
        f = fopen(path, "wb");
        fwrite(buf, 1, (size_t)(end - 100), f);
        fclose(f);
        free(buf);
        if (nbody_archive_open(&arc, path) == NBODY_OK) {
            CHECK(nbody_archive_count(arc) == cnt - 1, "%s: torn archive: %lu records", label, (unsigned long)nbody_archive_count(arc));
            nbody_archive_close(arc);
        }
    }
    nbody_system_free(&s); nbody_system_free(&a); nbody_system_free(&b);
}

static void test_archive(void) {
    nbody_desc d;
    memset(&d, 0, sizeof d);
    d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-7; d.engine = NBODY_ENGINE_BLOCK;
    archive_case(d, 0, "arc_rkdp");
    memset(&d, 0, sizeof d);
    d.method = NBODY_ADAMS; d.dt = (nbody_real)3e-3; d.engine = NBODY_ENGINE_SIMPLE; d.compensated = 1;
    archive_case(d, 1, "arc_adams_merge");
    memset(&d, 0, sizeof d);
    d.dt = (nbody_real)3e-3; d.engine = NBODY_ENGINE_TREE;
    archive_case(d, 1, "arc_leapfrog_tree_merge");
}

int main(void) {
    test_particles();
    test_particles_run();
    test_extra_force();
    test_leapfrog_refuses();
    test_hooks();
    test_exits();
    test_merge();
    test_bounce();
    test_archive();
    return check_finish();
}
