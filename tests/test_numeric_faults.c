/* Numerical faults. A step whose result would hold NaN or Inf returns NBODY_ERR_NOT_FINITE at
   that step, and the simulation keeps the state from before it bit for bit (readable, savable,
   replaceable with nbody_set_state). An adaptive step that collapses below dt_min returns
   NBODY_ERR_STEP_TOO_SMALL the same way. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <float.h>
#define REL_NAME "numeric_faults"
#include "rel_util.h"

/* two bodies on the x axis; massless so they move in straight lines at constant speed */
static void pair(nbody_system *s, nbody_real x0, nbody_real v0, nbody_real x1, nbody_real v1, nbody_real m) {
    memset(s, 0, sizeof *s);
    nbody_system_alloc(s, 2);
    s->x[0] = x0; s->vx[0] = v0; s->x[1] = x1; s->vx[1] = v1;
    s->m[0] = s->m[1] = m;
}

/* step until an error; returns it and checks that the error left the state of the step before
   it untouched; *failed_step = number of the step that failed (1-based) */
static nbody_result step_until_error(nbody_sim *sim, int max_steps, int *failed_step, const char *label) {
    nbody_system prev, now;
    nbody_stats st0, st1;
    nbody_result r = NBODY_OK;
    int i;
    memset(&prev, 0, sizeof prev); memset(&now, 0, sizeof now);
    if (!rel_state(sim, sim->n, &prev) || nbody_system_alloc(&now, sim->n) != NBODY_OK) return NBODY_ERR_OUT_OF_MEMORY;
    *failed_step = 0;
    for (i = 1; i <= max_steps; ++i) {
        st0 = nbody_get_stats(sim);
        r = nbody_step(sim);
        st1 = nbody_get_stats(sim);
        CHECK(nbody_get_state(sim, &now) == NBODY_OK, "%s: state unreadable after step %d", label, i);
        if (r != NBODY_OK) {
            *failed_step = i;
            CHECK(rel_same(&prev, &now), "%s: failing step %d changed the state", label, i);
            CHECK(st1.steps == st0.steps && memcmp(&st1.t, &st0.t, sizeof st0.t) == 0,
                  "%s: failing step %d counted (steps %llu -> %llu)", label, i, st0.steps, st1.steps);
            /* trying again fails the same way and still changes nothing */
            CHECK(nbody_step(sim) == r && nbody_get_state(sim, &now) == NBODY_OK && rel_same(&prev, &now),
                  "%s: retry after the fault differs", label);
            break;
        }
        nbody_system_copy(&prev, &now);
    }
    nbody_system_free(&prev); nbody_system_free(&now);
    return r;
}

static void not_finite(int method) {
    nbody_desc d;
    nbody_system s, later;
    nbody_sim *sim = NULL;
    nbody_result r;
    int step = 0;
    char label[96];
    memset(&d, 0, sizeof d);
    d.method = (nbody_method)method; d.order = method == NBODY_ADAMS ? 4 : 0;
    d.softening = 0; d.dt = (nbody_real)0.25;
    /* every method takes the fixed steps d.dt here (RADAU controls its step even at
       tolerance 0, unless told not to), so the fault comes at a known step */
    d.radau_control = NBODY_RADAU_FIXED;
    /* head-on: both reach x = 0 exactly at t = 1 (4 steps; every value is a dyadic rational
       for methods whose coefficients are dyadic: euler, midpoint, leapfrog, rk4; the others'
       weights sum to 1 only up to rounding, so they pass by at 1e-17 instead: covered by the
       mid-run overflow below); there 0 * (1/0)^3 = NaN */
    if (method == NBODY_EULER || method == NBODY_MIDPOINT || method == NBODY_LEAPFROG || method == NBODY_RK4) {
        pair(&s, -1, 1, 1, -1, 0);
        snprintf(label, sizeof label, "%s, head-on collision", nbody_method_name((nbody_method)method));
        r = nbody_create(&sim, &d, &s);
        CHECK(r == NBODY_OK, "%s: create: %s", label, nbody_result_string(r));
        if (r == NBODY_OK) {
            r = step_until_error(sim, 20, &step, label);
            /* the first step that evaluates forces at the collision: the one landing on t = 1
               when the method evaluates at its end point, else the one after */
            CHECK(r == NBODY_ERR_NOT_FINITE && (step == 4 || step == 5), "%s: %s at step %d", label, nbody_result_string(r), step);
            CHECK(nbody_get_stats(sim).t == (step == 4 ? (nbody_real)0.75 : 1), "%s: last good time %g", label, (double)nbody_get_stats(sim).t);
            /* the good state is usable: checkpointed, and replaced to carry on */
            CHECK(nbody_checkpoint_save(sim, rel_path("fault")) == NBODY_OK, "%s: checkpoint after the fault", label);
            memset(&later, 0, sizeof later);
            pair(&later, -1, -1, 1, 1, 0);
            later.t = 1;
            CHECK(nbody_set_state(sim, &later) == NBODY_OK && nbody_advance(sim, 2) == NBODY_OK, "%s: no recovery by set_state", label);
            nbody_system_free(&later);
        }
        nbody_destroy(sim);
        nbody_system_free(&s);
    }

    /* mid-run overflow, for every method: a massless body 3.5e305 below DBL_MAX moving at
       1e305 per unit time is finite after step 3 and overflows in step 4 (stage sums stay far
       from overflow even with Fehlberg's large coefficients) */
    sim = NULL;
    pair(&s, (nbody_real)(DBL_MAX - 3.5e305), (nbody_real)1e305, -1, 0, 0);
    d.dt = 1;
    snprintf(label, sizeof label, "%s, overflow mid-run", nbody_method_name((nbody_method)method));
    /* (hermite picks its own steps, so the step of the overflow is not known: its faults are
       in tests/test_hermite.c) */
    if (sizeof(nbody_real) == sizeof(double) && method != NBODY_HERMITE && nbody_create(&sim, &d, &s) == NBODY_OK) {
        r = step_until_error(sim, 10, &step, label);
        CHECK(r == NBODY_ERR_NOT_FINITE && step == 4, "%s: %s at step %d", label, nbody_result_string(r), step);
        CHECK(nbody_get_stats(sim).t == 3, "%s: last good time %g", label, (double)nbody_get_stats(sim).t);
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
    d.dt = (nbody_real)0.25;

    /* an overflow: 1e308 + 1 * 1e308 = Inf in the first step */
    sim = NULL;
    pair(&s, (nbody_real)1e308, (nbody_real)1e308, 0, 0, 0);
    d.dt = 1;
    snprintf(label, sizeof label, "%s, overflow to Inf", nbody_method_name((nbody_method)method));
    if (sizeof(nbody_real) == sizeof(double) && nbody_create(&sim, &d, &s) == NBODY_OK) {
        r = step_until_error(sim, 3, &step, label);
        CHECK(r == NBODY_ERR_NOT_FINITE && step == 1, "%s: %s at step %d", label, nbody_result_string(r), step);
        /* through nbody_advance the same: it stops and keeps t where the fault began */
        CHECK(nbody_advance(sim, 5) == NBODY_ERR_NOT_FINITE && nbody_get_stats(sim).t == 0, "%s: advance", label);
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* step until the adaptive control gives up; the state before the failing step must be kept.
   forced != NULL replaces the method after create (the white-box case below) */
static void collapse(const nbody_desc *d, nbody_system *s, const nbody__method_info *forced, const char *label) {
    nbody_sim *sim = NULL;
    int step = 0;
    nbody_result r = nbody_create(&sim, d, s);
    CHECK(r == NBODY_OK, "%s: create: %s", label, nbody_result_string(r));
    if (r == NBODY_OK) {
        if (forced) { sim->method = forced; sim->desc.tolerance = (nbody_real)1e-8; }   /* rk4 takes none at create */
        r = step_until_error(sim, 1000000, &step, label);
        CHECK(r == NBODY_ERR_STEP_TOO_SMALL, "%s: %s at step %d", label, nbody_result_string(r), step);
        CHECK(nbody_get_stats(sim).rejected > 0, "%s: no rejection before the collapse", label);
        if (forced) CHECK(sim->t > (nbody_real)0.05 && sim->t < (nbody_real)0.2, "%s: stopped at t = %g", label, (double)sim->t);
    }
    nbody_destroy(sim);
    nbody_system_free(s);
}

/* Adaptive collapse, the real thing: two bodies falling onto each other without softening
   under a Dormand-Prince step control with dt_min; fails until NBODY_RKDP is built. */
static void collapse_rkdp(void) {
    nbody_desc d;
    nbody_system s;
    memset(&d, 0, sizeof d);
    d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-10; d.dt = (nbody_real)1e-2; d.dt_min = (nbody_real)1e-6;
    pair(&s, (nbody_real)-0.5, 0, (nbody_real)0.5, 0, 1);
    collapse(&d, &s, NULL, "rkdp collapse");
}

/* The mechanism in nbody__step_to with a method that exists today: RK4 made 'adaptive' with
   an error estimate that rejects every step after t = 0.05. */
static nbody__method_info collapsing;
static nbody_result attempt_collapsing(nbody_sim *s, nbody_real h, nbody_real *err) {
    nbody_result r = nbody__attempt_erk(s, h, err);
    *err = s->t > (nbody_real)0.05 ? (nbody_real)1e3 : (nbody_real)0.5;
    return r;
}
static void collapse_mechanism(nbody_real dt_min, const char *label) {
    nbody_desc d;
    nbody_system s;
    memset(&d, 0, sizeof d);
    memset(&s, 0, sizeof s);
    d.method = NBODY_RK4; d.dt = (nbody_real)0.01; d.dt_min = dt_min;
    d.softening = (nbody_real)0.1;
    collapsing = nbody__methods[NBODY_RK4];
    collapsing.adaptive = 1;
    collapsing.attempt = attempt_collapsing;
    nbody_ic_figure_eight(&s);
    collapse(&d, &s, &collapsing, label);
}

int main(void) {
    int m;
    (void)check_skip;
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m) not_finite(m);
    collapse_rkdp();
    collapse_mechanism((nbody_real)1e-6, "forced collapse, dt_min 1e-6");
    collapse_mechanism(0, "forced collapse, round-off limit");
    return check_finish();
}
