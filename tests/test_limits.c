/* The limits in one place: nbody_desc_check and nbody_interval_check. Each refusal returns
   the documented result, logs exactly one ERROR line that names the field (or the body) and
   its value, and nbody_create gives the same result without writing *out. Built in double
   (test_limits) and again in float by the Makefile (the tolerance floor and the interval's
   resolution follow NBODY_REAL). */
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "check.h"
#include <float.h>
#include <math.h>

typedef struct logbook { int lines; char last[512]; } logbook;

static void log_line(nbody_log_level level, const char *msg, void *user) {
    logbook *b = (logbook *)user;
    if (level != NBODY_LOG_ERROR) return;
    b->lines++;
    snprintf(b->last, sizeof b->last, "%s", msg);
}

static nbody_desc logged(logbook *b) {
    nbody_desc d;
    memset(&d, 0, sizeof d);
    memset(b, 0, sizeof *b);
    d.log.func = log_line;
    d.log.user_data = b;
    return d;
}

static nbody_real eps(void) {
    return (nbody_real)(sizeof(nbody_real) == sizeof(float) ? FLT_EPSILON
                        : sizeof(nbody_real) == sizeof(double) ? DBL_EPSILON : LDBL_EPSILON);
}

/* desc refused by nbody_desc_check and nbody_create alike, with one line holding `word` */
static void refused(const char *what, nbody_desc d, logbook *b, const nbody_system *s, nbody_result want, const char *word) {
    nbody_sim *sim = (nbody_sim *)&sim;   /* a value nbody_create must not overwrite */
    nbody_sim *const marker = sim;
    nbody_result r;
    b->lines = 0;
    r = nbody_desc_check(&d, s);
    CHECK(r == want, "%s: desc_check gives %s, want %s", what, nbody_result_string(r), nbody_result_string(want));
    CHECK(b->lines == 1 && strstr(b->last, word), "%s: %d lines, last \"%s\" (want one naming %s)", what, b->lines,
          b->last, word);
    b->lines = 0;
    r = nbody_create(&sim, &d, s);
    CHECK(r == want && sim == marker, "%s: create gives %s, *out %s", what, nbody_result_string(r),
          sim == marker ? "kept" : "written");
    CHECK(b->lines == 1, "%s: create logged %d lines (want 1)", what, b->lines);
    if (r == NBODY_OK) nbody_destroy(sim);
}

static void desc_limits(void) {
    nbody_system s = {0};
    logbook b;
    nbody_desc d;
    nbody_ic_plummer(&s, 64, 1);
    d = logged(&b);
    CHECK(nbody_desc_check(&d, &s) == NBODY_OK && b.lines == 0, "the zero desc passes silently (%d lines)", b.lines);
    CHECK(nbody_desc_check(&d, NULL) == NBODY_OK, "the zero desc alone passes");
    CHECK(nbody_desc_check(NULL, &s) == NBODY_ERR_INVALID_ARGUMENT, "NULL desc refused");

    d = logged(&b); d.threads = 100000;              /* crashed inside OpenMP before the limit */
    refused("threads 1e5", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.threads = 100000");
    d = logged(&b); d.threads = NBODY_MAX_THREADS + 1;
    refused("threads max+1", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.threads");
    d = logged(&b); d.threads = -1;
    refused("threads -1", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.threads = -1");

    d = logged(&b); d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-30;
    refused("rkdp tolerance 1e-30", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.tolerance = 1e-30");
    d = logged(&b); d.method = NBODY_RKDP; d.tolerance = eps() / 32;
    refused("rkdp tolerance eps/32", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "epsilon");
    d = logged(&b); d.method = NBODY_RKDP; d.tolerance = eps() / 16;
    CHECK(nbody_desc_check(&d, &s) == NBODY_OK && b.lines == 0, "rkdp tolerance eps/16 accepted");
    d = logged(&b); d.method = NBODY_RK4; d.tolerance = (nbody_real)1e-6;
    refused("rk4 with a tolerance", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "rk4");
    d = logged(&b); d.tolerance = (nbody_real)1e-6;     /* the default method: leapfrog */
    refused("leapfrog with a tolerance", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "leapfrog");
    d = logged(&b); d.method = NBODY_RKDP; d.tolerance = (nbody_real)-1e-6;
    refused("negative tolerance", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.tolerance = -1e-06");

    d = logged(&b); d.engine = NBODY_ENGINE_TREE; d.theta = (nbody_real)1e6;
    refused("theta 1e6", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.theta = 1e+06");
    d = logged(&b); d.theta = (nbody_real)1.2001;
    refused("theta 1.2001", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.theta = 1.2001 must be at most 1.2");
    d = logged(&b); d.theta = (nbody_real)1.2;
    CHECK(nbody_desc_check(&d, &s) == NBODY_OK && b.lines == 0, "theta 1.2 (the bound) accepted");
    d = logged(&b); d.theta = 1;
    CHECK(nbody_desc_check(&d, &s) == NBODY_OK && b.lines == 0, "theta 1 accepted");
    d = logged(&b); d.theta = (nbody_real)-0.5;
    refused("theta -0.5", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.theta = -0.5");

    d = logged(&b); d.G = -1;
    refused("G -1", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.G = -1");
    d = logged(&b); d.softening = (nbody_real)NAN;
    refused("softening NaN", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.softening = nan");
    d = logged(&b); d.dt = (nbody_real)-1e-3;
    refused("dt < 0", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.dt = -0.001");
    d = logged(&b); d.dt = (nbody_real)INFINITY;
    refused("dt Inf", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.dt = inf");
    d = logged(&b); d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-6; d.dt_min = 1; d.dt_max = (nbody_real)0.5;
    refused("dt_min > dt_max", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.dt_min = 1");
    d = logged(&b); d.engine = (nbody_engine)99;
    refused("engine 99", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.engine = 99");
    d = logged(&b); d.method = NBODY_ADAMS; d.order = 6;
    refused("adams order 6", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.order = 6");
    d = logged(&b); d.n_active = 65;
    refused("n_active > n", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "desc.n_active = 65");
    d = logged(&b); d.method = NBODY_WHFAST; d.engine = NBODY_ENGINE_OPENCL;
    refused("whfast on opencl", d, &b, &s, NBODY_ERR_UNAVAILABLE, "whfast");

    s.m[7] = -1;
    d = logged(&b);
    refused("negative mass", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "body 7: m = -1");
    s.m[7] = (nbody_real)NAN;
    refused("NaN mass", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "body 7: m = nan");
    s.m[7] = (nbody_real)(1.0 / 64);
    s.vz[12] = (nbody_real)INFINITY;
    refused("Inf velocity", d, &b, &s, NBODY_ERR_INVALID_ARGUMENT, "body 12: vz = inf");
    nbody_system_free(&s);
}

/* the output intervals: every finite and > 0, resolved at t_end, at most NBODY_MAX_OUTPUTS */
static void interval_limits(void) {
    logbook b;
    nbody_desc d = logged(&b);
    nbody_result r;
    CHECK(nbody_interval_check(&d, 0, 1, (nbody_real)0.01, "--snapshot-every") == NBODY_OK && b.lines == 0,
          "every 0.01 to t = 1 accepted");
    r = nbody_interval_check(&d, 0, 1, (nbody_real)1e-30, "--snapshot-every");
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && b.lines == 1 && strstr(b.last, "--snapshot-every = 1e-30"),
          "every 1e-30 refused with a line naming it: %s", b.last);
    b.lines = 0;
    r = nbody_interval_check(&d, 0, 1, 1 / (nbody_real)(2.0 * NBODY_MAX_OUTPUTS), "--png-every");
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && b.lines == 1 && strstr(b.last, "NBODY_MAX_OUTPUTS"),
          "2 NBODY_MAX_OUTPUTS outputs refused: %s", b.last);
    b.lines = 0;
    r = nbody_interval_check(&d, 0, 1, 2 / (nbody_real)NBODY_MAX_OUTPUTS, "--png-every");
    CHECK(r == NBODY_OK, "NBODY_MAX_OUTPUTS / 2 outputs accepted: %s", nbody_result_string(r));
    b.lines = 0;
    r = nbody_interval_check(&d, 0, 1e4, eps() * (nbody_real)1e4, "archive every");   /* one ulp at t_end */
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && b.lines == 1 && strstr(b.last, "resolves"),
          "an ulp of t_end refused: %s", b.last);
    b.lines = 0;
    r = nbody_interval_check(&d, 0, 1, 0, "progress");
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && b.lines == 1, "every 0 refused");
    b.lines = 0;
    r = nbody_interval_check(&d, 0, 1, (nbody_real)NAN, "progress");
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && b.lines == 1, "every NaN refused");
    b.lines = 0;
    r = nbody_interval_check(&d, 2, 1, (nbody_real)0.1, "progress");
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && b.lines == 1 && strstr(b.last, "from t = 2 to 1"),
          "t_end before t_start refused: %s", b.last);
    CHECK(nbody_interval_check(NULL, 0, 1, 0, NULL) == NBODY_ERR_INVALID_ARGUMENT, "no desc: refused silently");
}

/* a refused desc on a created simulation's later calls is not the point here: nbody_create
   with threads at the cap runs a step (the cap is not set below what works) */
static void threads_at_cap(void) {
    nbody_system s = {0};
    nbody_sim *sim = NULL;
    nbody_desc d;
    memset(&d, 0, sizeof d);
    nbody_ic_plummer(&s, 2000, 2);
    d.threads = 256;
    d.engine = NBODY_ENGINE_BLOCK;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK && nbody_step(sim) == NBODY_OK, "256 threads on block step");
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* Two bodies at one point without softening: NOT_FINITE at the first step under every
   method (the adaptive ones used to shrink the step to 0 and report STEP_TOO_SMALL), the
   state kept; WHFast refuses them at create, naming the pair, and at a step after
   nbody_set_state put them there. */
static void coincident(void) {
    nbody_system s = {0};
    logbook b;
    int m, wrong = 0;
    nbody_system_alloc(&s, 3);
    s.m[0] = 1; s.m[1] = (nbody_real)1e-3; s.m[2] = (nbody_real)1e-3;
    s.x[1] = 1; s.vy[1] = 1; s.x[2] = 1; s.vy[2] = 1;     /* bodies 1 and 2 at one point */
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m) {
        nbody_desc d = logged(&b);
        nbody_sim *sim = NULL;
        nbody_result r;
        d.method = (nbody_method)m;
        if (nbody_method_adaptive(d.method) && d.method != NBODY_RADAU) d.tolerance = (nbody_real)1e-8;
        r = nbody_create(&sim, &d, &s);
        if (d.method == NBODY_WHFAST) {
            CHECK(r == NBODY_ERR_INVALID_ARGUMENT && strstr(b.last, "bodies 1 and 2"), "whfast, planets at one point: %s, \"%s\"",
                  nbody_result_string(r), b.last);
            continue;
        }
        if (r != NBODY_OK) { CHECK(0, "%s: create %s", nbody_method_name(d.method), nbody_result_string(r)); continue; }
        r = nbody_step(sim);
        if (r != NBODY_ERR_NOT_FINITE || nbody_get_stats(sim).t != 0) wrong++;
        CHECK(r == NBODY_ERR_NOT_FINITE && nbody_get_stats(sim).t == 0, "%s, coincident bodies: %s at t = %g (want not finite, "
              "t kept)", nbody_method_name(d.method), nbody_result_string(r), (double)nbody_get_stats(sim).t);
        nbody_destroy(sim);
    }
    printf("coincident bodies: %d of %d methods answered other than NOT_FINITE\n", wrong, NBODY_METHOD_COUNT_ - 2);
    {   /* whfast: a planet on top of the Sun, at create and after set_state */
        nbody_desc d = logged(&b);
        nbody_sim *sim = NULL;
        nbody_result r;
        d.method = NBODY_WHFAST;
        s.x[1] = 0; s.vy[1] = 0; s.x[2] = 2; s.vy[2] = (nbody_real)0.7;
        r = nbody_create(&sim, &d, &s);
        CHECK(r == NBODY_ERR_INVALID_ARGUMENT && strstr(b.last, "bodies 0 and 1"), "whfast, a planet on the Sun: %s, \"%s\"",
              nbody_result_string(r), b.last);
        s.x[1] = 1; s.vy[1] = 1;
        CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "whfast, apart: create");
        s.x[1] = 2; s.vy[1] = (nbody_real)0.7;          /* now on top of body 2 */
        CHECK(nbody_set_state(sim, &s) == NBODY_OK, "whfast: set_state");
        r = nbody_step(sim);
        CHECK(r == NBODY_ERR_NOT_FINITE && nbody_get_stats(sim).t == 0, "whfast, planets brought together: %s",
              nbody_result_string(r));
        nbody_destroy(sim);
    }
    nbody_system_free(&s);
}

/* nbody_advance lands exactly on a t_end that t + dt never hits in NBODY_REAL (in float,
   0.02 is not a multiple of 1e-3, and 1e4 + 0.1 is far from any sum of steps): every method
   ends with t == t_end, or with an error, never a spin (the run is a few hundred steps) */
static void lands_exactly(void) {
    static const double ends[3] = {0.02, 0.1003, 1.0 / 3.0};
    nbody_system s = {0};
    int m, k, missed = 0;
    nbody_ic_plummer(&s, 8, 5);
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m) {
        nbody_desc d;
        nbody_sim *sim = NULL;
        if (m == NBODY_WHFAST) continue;                   /* needs a central body: test_whfast */
        memset(&d, 0, sizeof d);
        d.method = (nbody_method)m;
        d.softening = (nbody_real)0.05;
        if (nbody_method_adaptive(d.method) && m != NBODY_RADAU) d.tolerance = (nbody_real)1e-5;
        if (nbody_create(&sim, &d, &s) != NBODY_OK) { missed++; continue; }
        for (k = 0; k < 3; ++k) {
            nbody_real t_end = (nbody_real)ends[k];
            nbody_result r = nbody_advance(sim, t_end);
            if (r != NBODY_OK || nbody_get_stats(sim).t != t_end) {
                missed++;
                CHECK(0, "%s: advance to %g: %s at t = %.9g", nbody_method_name(d.method), (double)t_end,
                      nbody_result_string(r), (double)nbody_get_stats(sim).t);
            }
        }
        nbody_destroy(sim);
    }
    CHECK(missed == 0, "every method lands exactly on each t_end (%d missed)", missed);
    nbody_system_free(&s);
}

int main(void) {
    lands_exactly();
    coincident();
    desc_limits();
    interval_limits();
    threads_at_cap();
    return check_finish();
}
