/* A step that cannot move t: a fixed step below half an ulp of t (float: t = 1e4, dt = 1e-4;
   double: t = 1e13, dt = 1e-4; long double: t = 1e17) leaves t + dt == t, so a loop "until
   t reaches t_end" would never end. Every method, fixed and adaptive, must answer
   NBODY_ERR_STEP_TOO_SMALL from nbody_step and nbody_advance with the state kept.
   Built in double (test_stall), float and long double (Makefile).
   nbody_step is checked first: were it to succeed without moving t, nbody_advance would
   hang, so nbody_advance is only tried once nbody_step has refused. */
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "check.h"
#include <float.h>

/* a start time at which dt is below half an ulp */
static nbody_real stall_time(void) {
    if (sizeof(nbody_real) == sizeof(float)) return (nbody_real)1e4;
    if (sizeof(nbody_real) == sizeof(double)) return (nbody_real)1e13;
    return (nbody_real)1e17;
}

static int same_state(const nbody_system *a, const nbody_system *b) {
    size_t i;
    if (a->t != b->t) return 0;
    for (i = 0; i < a->n; ++i)
        if (a->x[i] != b->x[i] || a->y[i] != b->y[i] || a->vx[i] != b->vx[i] || a->vy[i] != b->vy[i]) return 0;
    return 1;
}

static void stall(nbody_method m, nbody_real tolerance) {
    nbody_system s = {0}, got = {0};
    nbody_desc d;
    nbody_sim *sim = NULL;
    nbody_real t0 = stall_time(), dt = (nbody_real)1e-4;
    nbody_result r;
    const char *name = nbody_method_name(m);
    memset(&d, 0, sizeof d);
    nbody_ic_figure_eight(&s);
    nbody_system_alloc(&got, s.n);
    s.t = t0;
    CHECK(t0 + dt == t0, "precondition: dt below half an ulp of t0");
    d.method = m;
    d.dt = dt;
    d.tolerance = tolerance;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "%s: create", name);
    if (!sim) goto done;
    r = nbody_step(sim);
    CHECK(r == NBODY_ERR_STEP_TOO_SMALL, "%s%s: nbody_step with dt below half an ulp of t: %s (want step too small)",
          name, tolerance > 0 ? " adaptive" : "", nbody_result_string(r));
    CHECK(nbody_get_state(sim, &got) == NBODY_OK && same_state(&got, &s), "%s: nbody_step kept the state", name);
    CHECK(nbody_get_stats(sim).steps == 0, "%s: no step counted", name);
    if (r == NBODY_OK) goto done;                    /* nbody_advance would never return */
    r = nbody_advance(sim, t0 + 1);
    CHECK(r == NBODY_ERR_STEP_TOO_SMALL, "%s: nbody_advance: %s (want step too small)", name, nbody_result_string(r));
    CHECK(nbody_get_state(sim, &got) == NBODY_OK && same_state(&got, &s), "%s: nbody_advance kept the state", name);
    /* the same simulation still lands on a target it can reach: a clipped step of t_end - t */
    r = nbody_advance(sim, t0 + (nbody_real)16 * t0 * (nbody_real)(sizeof(nbody_real) == sizeof(float) ? FLT_EPSILON : DBL_EPSILON));
    CHECK(r == NBODY_OK || r == NBODY_ERR_STEP_TOO_SMALL, "%s: advance to a resolvable t: %s", name, nbody_result_string(r));
done:
    nbody_destroy(sim);
    nbody_system_free(&s);
    nbody_system_free(&got);
}

/* an adaptive step shrunk by rejections below what t resolves ends the step with
   NBODY_ERR_STEP_TOO_SMALL in this precision, never an accepted step that leaves t alone */
static void shrinking_adaptive(void) {
    nbody_system s = {0};
    nbody_desc d;
    nbody_sim *sim = NULL;
    nbody_result r;
    nbody_real t0 = (sizeof(nbody_real) == sizeof(float) ? 64 : 16) * stall_time();   /* dt = 0.5 is resolved; its shrinks soon are not */
    memset(&d, 0, sizeof d);
    nbody_ic_pythagorean(&s);
    s.t = t0;
    d.method = NBODY_RKDP;
    d.dt = (nbody_real)0.5;
    d.tolerance = (nbody_real)(sizeof(nbody_real) == sizeof(float) ? FLT_EPSILON : sizeof(nbody_real) == sizeof(double)
                                   ? DBL_EPSILON : LDBL_EPSILON) / 16;   /* the least accepted: never met there */
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create rkdp");
    if (!sim) return;
    r = nbody_advance(sim, t0 + 10);
    CHECK(r == NBODY_ERR_STEP_TOO_SMALL, "rkdp tolerance epsilon/16 at t = %g: %s (want step too small)", (double)t0,
          nbody_result_string(r));
    CHECK(nbody_get_stats(sim).t == t0, "rkdp: t kept");
    nbody_destroy(sim);
    nbody_system_free(&s);
}

int main(void) {
    int m;
    printf("stall tests in %s (t0 = %g, dt = 1e-4)\n",
           sizeof(nbody_real) == sizeof(float) ? "float" : sizeof(nbody_real) == sizeof(double) ? "double" : "long double",
           (double)stall_time());
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m)
        if (m != NBODY_WHFAST) stall((nbody_method)m, 0);   /* whfast needs a dominant central body: tests/test_whfast.c */
    stall(NBODY_RKDP, (nbody_real)1e-8);
    stall(NBODY_RKF, (nbody_real)1e-8);
    stall(NBODY_BS, (nbody_real)1e-8);
    shrinking_adaptive();
    return check_finish();
}
