/* Several OpenCL devices in one context (desc.devices > 1, nbody_cl.h): forces and whole runs
   of every method, fixed step and adaptive, bitwise equal to one device, for the dense and
   the tree engine, with uneven slices (and devices that own no body), run to run; refusals.
   PoCL exposes several CPU devices through POCL_DEVICES: this program sets
   POCL_DEVICES="basic basic basic" (three single-threaded CPU devices) before the first
   OpenCL call. Skips (fails under NBODY_REQUIRE_OPENCL=1) when built without
   NBODY_WITH_OPENCL or when no platform has two devices.
   tests/test_opencl_devices_float.c includes this file with NBODY_REAL float. */
#define _POSIX_C_SOURCE 200112L            /* setenv */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <math.h>

static char last_log[512];
static void on_log(nbody_log_level level, const char *msg, void *user) {
    (void)user; (void)level;
    strncpy(last_log, msg, sizeof last_log - 1);
}

static int first_device;                   /* the first device of a platform with >= 2 devices */

/* accelerations with `devices` devices; a holds 3n. Several devices run the one-sided dense
   kernel; block_size (the automatic tile on CPUs) keeps one device on it too, where from
   about a thousand bodies it would run the symmetric kernel. */
static nbody_result accel(nbody_engine eng, int devices, const nbody_system *s, nbody_real eps, nbody_real *a) {
    nbody_desc d = NBODY__ZERO_INIT;
    d.engine = eng; d.softening = eps; d.devices = devices; d.device = first_device; d.block_size = 64;
    return nbody_accelerations(&d, s, a, a + s->n, a + 2 * s->n);
}

static int same_bits(const nbody_real *a, const nbody_real *b, size_t len) { return memcmp(a, b, len * sizeof *a) == 0; }

static int same_state(const nbody_system *a, const nbody_system *b) {
    size_t n = a->n;
    return a->n == b->n && same_bits(a->x, b->x, n) && same_bits(a->y, b->y, n) && same_bits(a->z, b->z, n) &&
           same_bits(a->vx, b->vx, n) && same_bits(a->vy, b->vy, n) && same_bits(a->vz, b->vz, n) &&
           memcmp(&a->t, &b->t, sizeof a->t) == 0;
}

static void test_forces(int ndev) {
    static const size_t sizes[] = {3, 200, 1001};
    static const nbody_engine engines[] = {NBODY_ENGINE_OPENCL, NBODY_ENGINE_OPENCL_TREE};
    size_t k, e, n;
    int devices;
    for (e = 0; e < 2; ++e) {
        if (!nbody_engine_available(engines[e])) continue;
        for (k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
            nbody_system s = {0};
            nbody_real *a1, *a2;
            nbody_real eps;
            n = sizes[k];
            nbody_ic_plummer(&s, n, 11 + k);
            a1 = (nbody_real *)malloc(6 * n * sizeof(nbody_real)); a2 = a1 + 3 * n;
            for (eps = 0; eps < 0.02; eps += (nbody_real)0.01) {
                nbody_result r1 = accel(engines[e], 1, &s, eps, a1);
                for (devices = 2; devices <= ndev; ++devices) {
                    nbody_result r2;
                    memset(a2, 0, 3 * n * sizeof *a2);
                    r2 = accel(engines[e], devices, &s, eps, a2);
                    CHECK(r1 == NBODY_OK && r2 == NBODY_OK && same_bits(a1, a2, 3 * n),
                          "%s n = %u eps %g: %d devices (%s) not bitwise one device (%s)", nbody_engine_name(engines[e]),
                          (unsigned)n, (double)eps, devices, nbody_result_string(r2), nbody_result_string(r1));
                }
            }
            free(a1);
            nbody_system_free(&s);
        }
    }
}

/* one run to t_end with `devices` devices */
static nbody_result run(nbody_engine eng, int devices, nbody_method m, nbody_real tol, int comp,
                        const nbody_system *s0, nbody_system *out) {
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r;
    d.engine = eng; d.devices = devices; d.device = first_device;
    d.method = m; d.tolerance = tol; d.compensated = comp;
    d.softening = (nbody_real)0.05; d.dt = (nbody_real)2e-3;
    r = nbody_create(&sim, &d, s0);
    if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)0.1);
    if (r == NBODY_OK) r = nbody_get_state(sim, out);
    nbody_destroy(sim);
    return r;
}

/* every method, fixed step and adaptive, on the dense engine with the most devices (uneven
   slices: 200 bodies are three tiles of 64 and one of 8, so 3 devices take 128 + 64 + 8, and
   2 devices 128 + 72) */
static void test_every_method(int ndev) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    nbody_system s0 = {0}, a = {0}, b = {0};
    int m, k, devices;
    nbody_ic_plummer(&s0, 200, 5);
    nbody_system_alloc(&a, 200); nbody_system_alloc(&b, 200);
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m)
        for (k = 0; k < 2; ++k) {
            nbody_real tol = k ? (nbody_real)(dbl ? 1e-7 : 1e-4) : 0;
            nbody_result r1;
            if (k && !nbody_method_adaptive((nbody_method)m)) continue;   /* a tolerance is refused there */
            if (m == NBODY_WHFAST || m == NBODY_HERMITE) continue;   /* CPU methods: the GPU engines refuse them */
            r1 = run(NBODY_ENGINE_OPENCL, 1, (nbody_method)m, tol, 0, &s0, &b);
            if (r1 == NBODY_ERR_UNAVAILABLE) break;   /* a method not built into this nbody.h */
            for (devices = ndev; devices <= ndev; ++devices) {
                nbody_result r2 = run(NBODY_ENGINE_OPENCL, devices, (nbody_method)m, tol, 0, &s0, &a);
                CHECK(r1 == NBODY_OK && r2 == NBODY_OK && same_state(&a, &b), "%s tolerance %g: %d devices (%s) not bitwise one (%s)",
                      nbody_method_name((nbody_method)m), (double)tol, devices, nbody_result_string(r2), nbody_result_string(r1));
            }
        }
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* the tree engine and the compensated sums, a few methods; run to run */
static void test_tree_runs(int ndev) {
    static const struct { nbody_engine eng; nbody_method m; nbody_real tol; int comp; } runs[] = {
        {NBODY_ENGINE_OPENCL_TREE, NBODY_LEAPFROG, 0, 0}, {NBODY_ENGINE_OPENCL_TREE, NBODY_RK4, 0, 0},
        {NBODY_ENGINE_OPENCL_TREE, NBODY_RKDP, (nbody_real)1e-6, 0}, {NBODY_ENGINE_OPENCL, NBODY_LEAPFROG, 0, 1},
        {NBODY_ENGINE_OPENCL_TREE, NBODY_RKF, (nbody_real)1e-6, 1}};
    nbody_system s0 = {0}, a = {0}, b = {0};
    size_t k;
    int devices;
    nbody_ic_plummer(&s0, 333, 9);
    nbody_system_alloc(&a, 333); nbody_system_alloc(&b, 333);
    for (k = 0; k < sizeof runs / sizeof *runs; ++k) {
        nbody_result r1;
        if (!nbody_engine_available(runs[k].eng)) continue;
        r1 = run(runs[k].eng, 1, runs[k].m, runs[k].tol, runs[k].comp, &s0, &b);
        for (devices = 2; devices <= ndev; ++devices) {
            nbody_result r2 = run(runs[k].eng, devices, runs[k].m, runs[k].tol, runs[k].comp, &s0, &a);
            CHECK(r1 == NBODY_OK && r2 == NBODY_OK && same_state(&a, &b), "%s %s tolerance %g compensated %d: %d devices (%s) not bitwise one (%s)",
                  nbody_engine_name(runs[k].eng), nbody_method_name(runs[k].m), (double)runs[k].tol, runs[k].comp, devices,
                  nbody_result_string(r2), nbody_result_string(r1));
            r2 = run(runs[k].eng, devices, runs[k].m, runs[k].tol, runs[k].comp, &s0, &b);
            CHECK(r2 == NBODY_OK && same_state(&a, &b), "%s %s: %d devices not bitwise run to run",
                  nbody_engine_name(runs[k].eng), nbody_method_name(runs[k].m), devices);
            r1 = run(runs[k].eng, 1, runs[k].m, runs[k].tol, runs[k].comp, &s0, &b);
        }
    }
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* state set and read back through the slices, test particles, NaN forces, refusals */
static void test_edges(int ndev) {
    nbody_system s = {0}, out = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r;
    nbody_real *a1, *a2;
    size_t n = 300;
    int e;
    nbody_ic_plummer(&s, n, 21);
    nbody_system_alloc(&out, n);
    d.engine = NBODY_ENGINE_OPENCL; d.devices = 2; d.device = first_device; d.log.func = on_log;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_OK && strstr(last_log, "OpenCL devices") && strstr(last_log, "one context"), "the log names the devices: '%s'", last_log);
    printf("%s\n", last_log);
    if (r == NBODY_OK) r = nbody_get_state(sim, &out);
    CHECK(r == NBODY_OK && same_state(&s, &out), "get_state after create: %s", nbody_result_string(r));
    nbody_destroy(sim);
    /* test particles: 250 active bodies, 50 massless ones, both engines */
    a1 = (nbody_real *)malloc(6 * n * sizeof(nbody_real)); a2 = a1 + 3 * n;
    for (e = 0; e < 2; ++e) {
        nbody_engine eng = e ? NBODY_ENGINE_OPENCL_TREE : NBODY_ENGINE_OPENCL;
        nbody_desc t = NBODY__ZERO_INIT;
        nbody_result r1, r2;
        if (!nbody_engine_available(eng)) continue;
        t.engine = eng; t.softening = (nbody_real)0.01; t.n_active = 250; t.device = first_device;
        r1 = nbody_accelerations(&t, &s, a1, a1 + n, a1 + 2 * n);
        t.devices = ndev;
        r2 = nbody_accelerations(&t, &s, a2, a2 + n, a2 + 2 * n);
        CHECK(r1 == NBODY_OK && r2 == NBODY_OK && same_bits(a1, a2, 3 * n), "%s n_active 250 of 300: %d devices (%s) not bitwise one (%s)",
              nbody_engine_name(eng), ndev, nbody_result_string(r2), nbody_result_string(r1));
    }
    free(a1);
    nbody_system_free(&s); nbody_system_free(&out);
    /* coincident bodies without softening: NaN forces reported, the state kept */
    for (e = 0; e < 2; ++e) {
        nbody_system f = {0};
        nbody_desc t = NBODY__ZERO_INIT;
        sim = NULL;
        nbody_ic_plummer(&f, 150, 4);
        f.x[140] = f.x[3]; f.y[140] = f.y[3]; f.z[140] = f.z[3];
        t.engine = e ? NBODY_ENGINE_OPENCL_TREE : NBODY_ENGINE_OPENCL; t.devices = 2; t.device = first_device; t.method = NBODY_RK4;
        if (!nbody_engine_available(t.engine)) { nbody_system_free(&f); continue; }
        r = nbody_create(&sim, &t, &f);
        if (r == NBODY_OK) r = nbody_step(sim);
        CHECK(r == NBODY_ERR_NOT_FINITE, "%s, 2 devices, coincident bodies: %s", nbody_engine_name(t.engine), nbody_result_string(r));
        nbody_destroy(sim);
        nbody_system_free(&f);
    }
    /* more devices than the platform has: refused with a log line */
    nbody_ic_figure_eight(&s);
    d.devices = 64; last_log[0] = 0; sim = NULL;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_UNAVAILABLE && !sim && strstr(last_log, "devices = 64"), "devices = 64: %s, log '%s'",
          nbody_result_string(r), last_log);
    printf("%s\n", last_log);
    d.engine = NBODY_ENGINE_BLOCK; d.devices = 0;
    nbody_system_free(&s);
}

int main(void) {
    nbody_system s = {0};
    nbody_real a[9];
    nbody_result r = NBODY_ERR_UNAVAILABLE;
    int ndev = 0;
    setenv("POCL_DEVICES", "basic basic basic", 1);
    nbody_ic_figure_eight(&s);
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL)) {
        check_skip("NBODY_REQUIRE_OPENCL", "OpenCL engines compiled out (build with WITH_OPENCL=1)");
        nbody_system_free(&s);
        return check_finish();
    }
    /* the first device from which a platform offers 2 devices, and how many it offers */
    for (first_device = 0; first_device < 64; ++first_device) {
        r = accel(NBODY_ENGINE_OPENCL, 2, &s, 0, a);
        if (r != NBODY_ERR_UNAVAILABLE) break;
    }
    if (r == NBODY_OK)
        for (ndev = 2; ndev < 3 && accel(NBODY_ENGINE_OPENCL, ndev + 1, &s, 0, a) == NBODY_OK; ++ndev) {}
    nbody_system_free(&s);
    if (r != NBODY_OK) {
        check_skip("NBODY_REQUIRE_OPENCL", "no OpenCL platform with two devices (or no fp64 for a double build)");
        return check_finish();
    }
    printf("devices %d.. of one platform: testing 2..%d devices\n", first_device, ndev);
    test_forces(ndev);
    test_every_method(ndev);
    test_tree_runs(ndev);
    test_edges(ndev);
    return check_finish();
}
