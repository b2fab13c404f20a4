/* check.h - the tests' tiny harness. Each test program includes it once, calls CHECK(...)
   for every assertion and returns check_finish() from main. The last line it prints,
   "RESULT passed failed skipped", is summed by tests/run.sh into make test's last line. */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define CHECK_UNUSED __attribute__((unused))
#else
#define CHECK_UNUSED
#endif

static int check_passed, check_failed, check_skipped;

#define CHECK(cond, ...) do { \
        if (cond) { check_passed++; } \
        else { check_failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
    } while (0)

/* a check that needs a runtime that is absent: skipped, or failed when the environment
   variable named by `require` is set to 1 (CI sets NBODY_REQUIRE_OPENCL=1) */
CHECK_UNUSED static void check_skip(const char *require, const char *why) {
    const char *v = require ? getenv(require) : NULL;
    if (v && strcmp(v, "1") == 0) { check_failed++; printf("FAIL (required by %s): %s\n", require, why); }
    else { check_skipped++; printf("SKIP %s\n", why); }
}

#ifdef NBODY_H_INCLUDED
#include <math.h>
/* forces compared body by body: the largest |a_i - b_i| / |b_i| over the n bodies of two
   accelerations laid out x[n], y[n], z[n] (relative to the body's acceleration, not to each
   component: a component near zero would measure only its own cancellation); NaN is largest */
CHECK_UNUSED static double check_body_rel_diff(const nbody_real *a, const nbody_real *b, size_t n) {
    double worst = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d2 = 0, b2 = 0, e;
        int c;
        for (c = 0; c < 3; ++c) {
            double d = (double)a[c * n + i] - (double)b[c * n + i];
            d2 += d * d; b2 += (double)b[c * n + i] * (double)b[c * n + i];
        }
        e = sqrt(d2 / (b2 + 1e-300));
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

/* two states' distance in phase space, body by body: d_i = sum of |a - b| over the six
   coordinates of body i. check_state_diff is the largest d_i (NaN is largest),
   check_state_rms the root mean square of the bodies' Euclidean distances */
CHECK_UNUSED static double check_state_diff(const nbody_system *a, const nbody_system *b) {
    double worst = 0;
    size_t i;
    for (i = 0; i < a->n && i < b->n; ++i) {
        double d = fabs((double)(a->x[i] - b->x[i])) + fabs((double)(a->y[i] - b->y[i])) + fabs((double)(a->z[i] - b->z[i])) +
                   fabs((double)(a->vx[i] - b->vx[i])) + fabs((double)(a->vy[i] - b->vy[i])) + fabs((double)(a->vz[i] - b->vz[i]));
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

CHECK_UNUSED static double check_state_rms(const nbody_system *a, const nbody_system *b) {
    double sum = 0;
    size_t i;
    for (i = 0; i < a->n; ++i) {
        double d[6];
        int k;
        d[0] = (double)(a->x[i] - b->x[i]); d[1] = (double)(a->y[i] - b->y[i]); d[2] = (double)(a->z[i] - b->z[i]);
        d[3] = (double)(a->vx[i] - b->vx[i]); d[4] = (double)(a->vy[i] - b->vy[i]); d[5] = (double)(a->vz[i] - b->vz[i]);
        for (k = 0; k < 6; ++k) sum += d[k] * d[k];
    }
    return sqrt(sum / (double)a->n);
}

/* two states the same bits: time, positions and velocities */
CHECK_UNUSED static int check_same_state(const nbody_system *a, const nbody_system *b) {
    size_t bytes = a->n * sizeof(nbody_real);
    return a->n == b->n && a->t == b->t && !memcmp(a->x, b->x, bytes) && !memcmp(a->y, b->y, bytes) && !memcmp(a->z, b->z, bytes) &&
           !memcmp(a->vx, b->vx, bytes) && !memcmp(a->vy, b->vy, bytes) && !memcmp(a->vz, b->vz, bytes);
}

/* n values of a and b the same: bit for bit, a NaN matching any NaN. IEEE 754 leaves the sign
   and payload of a NaN that an operation creates to the hardware (x86's default NaN is
   negative, ARM's positive) and a compiler may compute w (-d) as -(w d) (gcc on ARM: one
   negated multiply, which flips the sign of the NaN it creates), so a NaN's bits are not a
   result; its class is. */
CHECK_UNUSED static int check_same_values(const nbody_real *a, const nbody_real *b, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0 && !(a[i] != a[i] && b[i] != b[i])) return 0;
    return 1;
}
#endif

static int check_finish(void) {
    printf("RESULT %d %d %d\n", check_passed, check_failed, check_skipped);
    return check_failed != 0;
}
#endif
