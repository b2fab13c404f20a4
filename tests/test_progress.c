/* desc.progress: nbody_advance calls it after every accepted step (interval 0) with true
   figures, a nonzero return cancels with NBODY_ERR_CANCELLED and the state of the last
   accepted step (bitwise the run stopped there by hand, and a later nbody_advance ends
   bitwise where the run straight through ends), a bad interval is refused; and the
   WARNING of nbody_create for an adaptive tolerance below the tree's force error. */
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "check.h"
#include <math.h>

typedef struct counter {
    int calls, cancel_at, monotonic, sane;
    nbody_real last_t;
    unsigned long long last_steps;
} counter;

static int count_calls(const nbody_progress_info *p, void *user_data) {
    counter *c = (counter *)user_data;
    c->calls++;
    if (p->t <= c->last_t || p->steps <= c->last_steps) c->monotonic = 0;
    if (!(p->t > p->t_start && p->t <= p->t_end && p->dt > 0 && p->elapsed >= 0)) c->sane = 0;
    c->last_t = p->t;
    c->last_steps = p->steps;
    return c->cancel_at > 0 && c->calls >= c->cancel_at;
}

static int same(const nbody_system *a, const nbody_system *b) {
    size_t i;
    if (a->t != b->t) return 0;
    for (i = 0; i < a->n; ++i)
        if (a->x[i] != b->x[i] || a->y[i] != b->y[i] || a->z[i] != b->z[i] || a->vx[i] != b->vx[i] ||
            a->vy[i] != b->vy[i] || a->vz[i] != b->vz[i])
            return 0;
    return 1;
}

static counter fresh(int cancel_at) {
    counter c;
    memset(&c, 0, sizeof c);
    c.cancel_at = cancel_at;
    c.monotonic = c.sane = 1;
    c.last_t = -1;
    return c;
}

/* every accepted step reports, for a fixed-step and an adaptive method */
static void test_every_step(nbody_method m, nbody_real tol) {
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim = NULL;
    counter c = fresh(0);
    nbody_result r;
    nbody_ic_plummer(&s, 64, 3);
    d.method = m;
    d.tolerance = tol;
    d.softening = (nbody_real)0.05;
    d.dt = (nbody_real)0.01;
    d.progress.func = count_calls;
    d.progress.user_data = &c;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    r = nbody_advance(sim, (nbody_real)0.5);
    CHECK(r == NBODY_OK, "%s: advance %s", nbody_method_name(m), nbody_result_string(r));
    CHECK((unsigned long long)c.calls == nbody_get_stats(sim).steps, "%s: %d calls for %llu accepted steps",
          nbody_method_name(m), c.calls, nbody_get_stats(sim).steps);
    CHECK(c.monotonic && c.sane, "%s: t and steps grow, t in (t_start, t_end], dt > 0", nbody_method_name(m));
    CHECK(c.last_t == (nbody_real)0.5, "%s: the last call is at t_end (%g)", nbody_method_name(m), (double)c.last_t);
    /* nbody_step does not call it */
    c = fresh(0);
    CHECK(nbody_step(sim) == NBODY_OK && c.calls == 0, "nbody_step makes no progress call");
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* cancel after k steps: NBODY_ERR_CANCELLED, the state of step k, and the run goes on exactly */
static void test_cancel(nbody_method m, nbody_real tol) {
    nbody_system s = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO, plain;
    nbody_sim *sim = NULL, *ref = NULL;
    counter c = fresh(7);
    nbody_result r;
    int k;
    nbody_ic_plummer(&s, 64, 4);
    nbody_system_alloc(&a, s.n);
    nbody_system_alloc(&b, s.n);
    d.method = m;
    d.tolerance = tol;
    d.softening = (nbody_real)0.05;
    d.dt = (nbody_real)0.01;
    plain = d;
    d.progress.func = count_calls;
    d.progress.user_data = &c;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK && nbody_create(&ref, &plain, &s) == NBODY_OK, "create");
    r = nbody_advance(sim, 1);
    CHECK(r == NBODY_ERR_CANCELLED, "%s: cancel returns %s", nbody_method_name(m), nbody_result_string(r));
    CHECK(nbody_get_stats(sim).steps == 7, "%s: cancelled after the 7th step (%llu)", nbody_method_name(m),
          nbody_get_stats(sim).steps);
    for (k = 0; k < 7; ++k) nbody_step(ref);
    nbody_get_state(sim, &a);
    nbody_get_state(ref, &b);
    CHECK(same(&a, &b), "%s: the state is the 7th accepted step, bitwise", nbody_method_name(m));
    c.cancel_at = 0;
    r = nbody_advance(sim, 1);
    CHECK(r == NBODY_OK && nbody_advance(ref, 1) == NBODY_OK, "%s: advance again after the cancel", nbody_method_name(m));
    nbody_get_state(sim, &a);
    nbody_get_state(ref, &b);
    CHECK(same(&a, &b), "%s: after the cancel the run ends bitwise where the straight run ends", nbody_method_name(m));
    nbody_destroy(sim);
    nbody_destroy(ref);
    nbody_system_free(&s); nbody_system_free(&a); nbody_system_free(&b);
}

static int always_cancel(const nbody_progress_info *p, void *user_data) { (void)p; ++*(int *)user_data; return 1; }

/* with an interval: a cancel during rejected steps keeps the last accepted state */
static void test_cancel_interval(void) {
    nbody_system s = NBODY_ZERO, a = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim = NULL;
    nbody_result r;
    int calls = 0;
    nbody_ic_pythagorean(&s);
    nbody_system_alloc(&a, s.n);
    d.method = NBODY_RKDP;
    d.tolerance = (nbody_real)1e-12;
    d.dt = 1;                                     /* far too large: rejected again and again */
    d.progress.func = always_cancel;
    d.progress.user_data = &calls;
    d.progress.interval = 1e-300;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    r = nbody_advance(sim, 10);
    CHECK(r == NBODY_ERR_CANCELLED || (r == NBODY_OK && calls == 0), "interval: %s after %d calls", nbody_result_string(r), calls);
    CHECK(nbody_get_state(sim, &a) == NBODY_OK && (a.t == 0 || nbody_get_stats(sim).steps >= 1),
          "interval: the state is an accepted one (t = %g)", (double)a.t);
    CHECK(nbody_get_stats(sim).steps <= 1, "interval: stopped at the first call (%llu steps)", nbody_get_stats(sim).steps);
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&a);
}

static void test_bad_interval(void) {
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim = NULL;
    nbody_ic_figure_eight(&s);
    d.progress.interval = -1;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && !sim, "interval -1 refused");
    d.progress.interval = NAN;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && !sim, "interval NaN refused");
    d.progress.interval = HUGE_VAL;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && !sim, "interval Inf refused");
    CHECK(strcmp(nbody_result_string(NBODY_ERR_CANCELLED), "unknown result") != 0, "NBODY_ERR_CANCELLED has a name");
    nbody_system_free(&s);
}

/* the WARNING for an adaptive method on a tree (with the bound when the tolerance is below the
   tree's force error): given where it should be, not elsewhere */
static int warnings;
static void on_log(nbody_log_level level, const char *message, void *user_data) {
    (void)user_data;
    if (level == NBODY_LOG_WARNING && (strstr(message, "tolerance") || strstr(message, "adaptive"))) warnings++;
}

static int warned(nbody_engine e, nbody_method m, double tol, double theta, int quadrupole) {
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim = NULL;
    nbody_ic_plummer(&s, 32, 1);
    d.engine = e; d.method = m; d.tolerance = (nbody_real)tol; d.theta = (nbody_real)theta; d.quadrupole = quadrupole;
    d.log.func = on_log;
    warnings = 0;
    if (nbody_create(&sim, &d, &s) != NBODY_OK) warnings = -1;
    nbody_destroy(sim);
    nbody_system_free(&s);
    return warnings;
}

static void test_tolerance_warning(void) {
    CHECK(warned(NBODY_ENGINE_TREE, NBODY_RKDP, 1e-8, 0.5, 0) == 1, "tree, rkdp, tolerance 1e-8: one warning");
    CHECK(warned(NBODY_ENGINE_TREE, NBODY_BS, 1e-10, 0, 0) == 1, "tree, bs, tolerance 1e-10, default theta: one warning");
    CHECK(warned(NBODY_ENGINE_TREE, NBODY_RKDP, 1e-8, 0.5, 1) == 1, "tree with quadrupoles, tolerance 1e-8: warning");
    CHECK(warned(NBODY_ENGINE_BLOCK, NBODY_RKDP, 1e-8, 0.5, 0) == 0, "block, tolerance 1e-8: no warning");
    /* every adaptive run on a tree is warned about, whatever the tolerance (the force is not smooth) */
    CHECK(warned(NBODY_ENGINE_TREE, NBODY_RKDP, 1e-2, 0.5, 0) == 1, "tree, tolerance 1e-2: one warning");
    CHECK(warned(NBODY_ENGINE_TREE, NBODY_RKDP, 1e-5, 0.05, 0) == 1, "tree at theta 0.05, tolerance 1e-5: one warning");
    CHECK(warned(NBODY_ENGINE_TREE, NBODY_RADAU, 0, 0.5, 0) == 1, "tree, radau at its default tolerance: one warning");
    CHECK(warned(NBODY_ENGINE_BLOCK, NBODY_RADAU, 0, 0.5, 0) == 0, "block, radau: no warning");
    CHECK(warned(NBODY_ENGINE_TREE, NBODY_LEAPFROG, 0, 0.5, 0) == 0, "tree, leapfrog (fixed step): no warning");
    CHECK(warned(NBODY_ENGINE_TREE, NBODY_LEAPFROG, 1e-8, 0.5, 0) == -1, "tree, leapfrog with a tolerance: refused");
}

int main(void) {
    test_every_step(NBODY_LEAPFROG, 0);
    test_every_step(NBODY_RKDP, (nbody_real)1e-6);
    test_cancel(NBODY_LEAPFROG, 0);
    test_cancel(NBODY_RKDP, (nbody_real)1e-6);
    test_cancel(NBODY_ADAMS, 0);
    test_cancel_interval();
    test_bad_interval();
    test_tolerance_warning();
    return check_finish();
}
