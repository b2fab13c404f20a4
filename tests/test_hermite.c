/* test_hermite.c - NBODY_HERMITE (4th and 6th order) on the block scheduler: the orders on a
   shared-step Kepler orbit, block against shared steps, energy on Plummer spheres, landing on
   t_end, bitwise restarts from checkpoints (synchronised and in the middle of a block cycle),
   every CPU engine and SIMD level against BLOCK, test particles, collisions, the refusals
   (each with its log line), and the OpenCL engine (PoCL on the CPU here) through
   tests/hermite_engine.h, which tests/cuda_engines.c runs on the CUDA engine. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "hermite_engine.h"

static int log_lines;
static char log_last[512];
static void count_log(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level != NBODY_LOG_ERROR) return;
    ++log_lines;
    snprintf(log_last, sizeof log_last, "%s", msg);
}

static void test_orders(void) {
    static const int orders[2] = {4, 6};
    static const double eta0[2] = {2.5e-3, 2.5e-2};
    int k, o;
    if (!DBL) { printf("orders: measured in double only (float's round-off is above the errors measured)\n"); return; }
    CHECK(!strcmp(nbody_method_name(NBODY_HERMITE), "hermite") && nbody_method_order(NBODY_HERMITE, 0) == 4 &&
          nbody_method_order(NBODY_HERMITE, 6) == 6, "hermite name and orders");
    for (o = 0; o < 2; ++o) {
        double err[3];
        unsigned long long steps[3] = {0, 0, 0};
        for (k = 0; k < 3; ++k) err[k] = kepler_error(NBODY_ENGINE_SIMPLE, orders[o], eta0[o] / pow(4, k), &steps[k]);
        for (k = 0; k < 2; ++k) {
            double p = log2(err[k] / err[k + 1]) / log2((double)steps[k + 1] / (double)steps[k]);
            printf("order %d: %.2f\n", orders[o], p);
        CHECK(err[k + 1] > 0 && fabs(p - orders[o]) < 0.5, "order %d: measured %.2f (errors %.3g -> %.3g, steps %llu -> %llu)",
                  orders[o], p, err[k], err[k + 1], steps[k], steps[k + 1]);
        }
    }
}

static void test_plummer_energy(void) {
    static const int orders[2] = {4, 6};
    static const double limit[2] = {2e-6, 1e-7};   /* measured 1.5e-7 and 1.7e-9 at N = 256 */
    int o;
    for (o = 0; o < 2; ++o) {
        nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, orders[o], NBODY_STEPPING_DEFAULT, 0);
        run_out r;
        if (orders[o] == 6 && !DBL) { printf("order 6: double only (refused in float, tested below)\n"); continue; }
        r = run_plummer(&d, 128, 1);
        CHECK(r.r == NBODY_OK && r.de < (DBL ? limit[o] : 1e-4), "order %d Plummer N = 128 to t = 1: %s, |dE/E| %.3g (limit %.1g)",
              orders[o], nbody_result_string(r.r), r.de, DBL ? limit[o] : 1e-4);
        CHECK(r.stats.t == 1 && r.s.t == 1, "order %d lands on t = 1 exactly (t %.17g)", orders[o], (double)r.s.t);
        CHECK(r.stats.body_steps < r.stats.steps * 128 / 4, "order %d block steps: %llu body steps in %llu steps (a shared step "
              "would advance 128 a step)", orders[o], r.stats.body_steps, r.stats.steps);
        nbody_system_free(&r.s);
    }
}

/* block against shared steps on the same bodies: the same trajectory within the error of
   either, and the block steps cost a fraction of the shared ones' force terms */
static void test_block_vs_shared(void) {
    nbody_desc b = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_BLOCK, 0.01);
    nbody_desc s = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_SHARED, 0.01);
    run_out rb = run_plummer(&b, 128, 0.5), rs = run_plummer(&s, 128, 0.5);
    double diff = check_state_diff(&rb.s, &rs.s);
    CHECK(rb.r == NBODY_OK && rs.r == NBODY_OK && diff < (DBL ? 1e-5 : 1e-2), "block vs shared steps: states differ by %.3g", diff);
    CHECK(rs.stats.body_steps == rs.stats.steps * 128 && rb.stats.interactions * 3 < rs.stats.interactions,
          "block steps: %.3g pair terms, shared %.3g (%llu shared steps)", (double)rb.stats.interactions,
          (double)rs.stats.interactions, rs.stats.steps);
    CHECK(rb.de < (DBL ? 1e-6 : 1e-4) && rs.de < (DBL ? 1e-6 : 1e-4), "energy: block %.3g, shared %.3g", rb.de, rs.de);
    nbody_system_free(&rb.s); nbody_system_free(&rs.s);
}

/* every CPU engine and SIMD level against BLOCK's best level, both orders */
static void test_engines(void) {
    static const nbody_engine engines[3] = {NBODY_ENGINE_SIMPLE, NBODY_ENGINE_OPENMP, NBODY_ENGINE_BLOCK};
    static const nbody_simd levels[3] = {NBODY_SIMD_PORTABLE, NBODY_SIMD_AVX2, NBODY_SIMD_AVX512};
    int o, e, l;
    for (o = 4; o <= (DBL ? 6 : 4); o += 2) {
        nbody_desc ref = hermite_desc(NBODY_ENGINE_BLOCK, o, NBODY_STEPPING_DEFAULT, 0);
        run_out r0;
        ref.softening = (nbody_real)0.01;
        r0 = run_plummer(&ref, 300, 0.25);                  /* more sources than a chunk? no: 300 < 4096 */
        for (e = 0; e < 3; ++e)
            for (l = 0; l < 3; ++l) {
                nbody_desc d = ref;
                run_out r;
                double diff;
                if (engines[e] != NBODY_ENGINE_BLOCK && l > 0) continue;
                if (!nbody_simd_available(levels[l])) { printf("SIMD level %s not on this CPU\n", nbody__simd_level_name(levels[l])); continue; }
                d.engine = engines[e]; d.simd = levels[l]; d.threads = 2;
                r = run_plummer(&d, 300, 0.25);
                diff = check_state_diff(&r.s, &r0.s);
                CHECK(r.r == NBODY_OK && diff < (DBL ? 1e-9 : 1e-3) && r.stats.steps == r0.stats.steps,
                      "order %d %s/%d against block: %s, states differ by %.3g, steps %llu vs %llu", o,
                      nbody_engine_name(engines[e]), (int)levels[l], nbody_result_string(r.r), diff, r.stats.steps, r0.stats.steps);
                nbody_system_free(&r.s);
            }
        nbody_system_free(&r0.s);
    }
}

/* more sources than one chunk of the BLOCK engine's schedule (NBODY__HERMITE_CHUNK 4096: at
   the start every body is active, two chunks), two threads against one. NBODY_TEST_QUICK
   (emulated builds): 4099 bodies, the fewest with two chunks (the second partial, as 5000's) */
#ifdef NBODY_TEST_QUICK
#define CHUNKS_N 4099
#else
#define CHUNKS_N 5000
#endif
static void test_chunks(void) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sa = NULL, *sb = NULL;
    int k, ok = 1;
    nbody_ic_plummer(&s0, CHUNKS_N, 2);
    nbody_system_alloc(&a, CHUNKS_N); nbody_system_alloc(&b, CHUNKS_N);
    d.softening = (nbody_real)0.01;
    ok = nbody_create(&sa, &d, &s0) == NBODY_OK;
    d.threads = 2;
    ok = ok && nbody_create(&sb, &d, &s0) == NBODY_OK;
    for (k = 0; k < 3 && ok; ++k) ok = nbody_step(sa) == NBODY_OK && nbody_step(sb) == NBODY_OK;
    ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
    CHECK(ok && check_same_state(&a, &b), "BLOCK, %d bodies (two chunks of sources): 1 and 2 threads give the same bits", CHUNKS_N);
    nbody_destroy(sa); nbody_destroy(sb);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* BLOCK steps in the engine (ops.hermite_step: the correction in the forces' parallel region)
   and through the host's correction (the same engine with that op taken out): the same bits,
   both orders, 1 and 2 threads, on 1100 softened Plummer bodies (steps with 1 to 1100 active).
   NBODY_TEST_QUICK (emulated builds): to t = 1/16 instead of 1/8, still 176-278 block steps
   (683 and 412 to 1/8; the check asks for more than 20), the first with all 1100 active */
#ifdef NBODY_TEST_QUICK
#define STEP_IN_ENGINE_T 0.0625
#else
#define STEP_IN_ENGINE_T 0.125
#endif
static void test_step_in_engine(void) {
    int o, th;
    for (o = 4; o <= (DBL ? 6 : 4); o += 2)
        for (th = 1; th <= 2; ++th) {
            nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
            nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, o, NBODY_STEPPING_DEFAULT, 0);
            nbody_sim *sa = NULL, *sb = NULL;
            nbody__engine_ops host;
            nbody_stats ta, tb;
            int ok;
            nbody_ic_plummer(&s0, 1100, 5);
            nbody_system_alloc(&a, 1100); nbody_system_alloc(&b, 1100);
            d.softening = (nbody_real)0.001; d.threads = th;
            ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_create(&sb, &d, &s0) == NBODY_OK;
            ok = ok && sa->eng.ops->hermite_step != NULL;
            if (ok) { host = *sb->eng.ops; host.hermite_step = NULL; sb->eng.ops = &host; }
            ok = ok && nbody_advance(sa, (nbody_real)STEP_IN_ENGINE_T) == NBODY_OK && nbody_advance(sb, (nbody_real)STEP_IN_ENGINE_T) == NBODY_OK;
            ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
            ta = nbody_get_stats(sa); tb = nbody_get_stats(sb);
            CHECK(ok && check_same_state(&a, &b) && ta.steps == tb.steps && ta.body_steps == tb.body_steps && ta.steps > 20,
                  "order %d, %d thread(s): BLOCK's step in the engine gives the host correction's bits (%llu block steps, "
                  "%llu body steps)", o, th, ta.steps, ta.body_steps);
            nbody_destroy(sa); nbody_destroy(sb);
            nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
        }
}

/* BLOCK's forces on an active list against SIMPLE's (index-order sums), at every SIMD level:
   few active sources (one target a task, the sources in the lanes) and many (tiles), 1000
   sources (a partial vector at the end), the targets at every lane position and at the ends,
   both orders; a, jerk and snap to 1e-13 of each body's */
static void test_block_forces(void) {
    static const nbody_simd levels[3] = {NBODY_SIMD_PORTABLE, NBODY_SIMD_AVX2, NBODY_SIMD_AVX512};
    static const size_t counts[4] = {1, 3, 7, 40};
    size_t list[40], n = 1000;
    int o, l, c, k;
    nbody_system s0 = NBODY_ZERO;
    nbody_ic_plummer(&s0, n, 3);
    for (o = 4; o <= (DBL ? 6 : 4); o += 2) {
        nbody_desc ref = hermite_desc(NBODY_ENGINE_SIMPLE, o, NBODY_STEPPING_DEFAULT, 0);
        nbody_sim *sr = NULL;
        CHECK(nbody_create(&sr, &ref, &s0) == NBODY_OK && nbody_step(sr) == NBODY_OK, "simple order %d", o);
        for (l = 0; l < 3 && sr; ++l) {
            nbody_desc d = ref;
            nbody_sim *sb = NULL;
            if (!nbody_simd_available(levels[l])) continue;
            d.engine = NBODY_ENGINE_BLOCK; d.simd = levels[l]; d.threads = 2;
            if (nbody_create(&sb, &d, &s0) != NBODY_OK || nbody_step(sb) != NBODY_OK) { CHECK(0, "block level %d", l); continue; }
            for (c = 0; c < 4; ++c) {
                size_t m = counts[c], q;
                double worst = 0;
                for (q = 0; q < m; ++q) list[q] = q == 0 ? 0 : q == m - 1 ? n - 1 : q * 997 % (n - 2) + 1;
                for (q = 1; q < m; ++q) {   /* rising */
                    size_t v = list[q], j = q;
                    while (j > 0 && list[j - 1] > v) { list[j] = list[j - 1]; --j; }
                    list[j] = v;
                }
                CHECK(nbody__hermite_forces(sr, list, m, 1ULL << 30, -1) == NBODY_OK &&
                      nbody__hermite_forces(sb, list, m, 1ULL << 30, -1) == NBODY_OK, "forces");
                for (k = 0; k < (o == 6 ? 3 : 2); ++k) {
                    double e = check_body_rel_diff(sb->hermite.out + 3 * k * m, sr->hermite.out + 3 * k * m, m);
                    if (!(e <= worst)) worst = e;
                }
                CHECK(worst < (DBL ? 1e-13 : 1e-5), "order %d %s, %lu active of %lu: block against simple %.3g", o,
                      nbody__simd_level_name(levels[l]), (unsigned long)m, (unsigned long)n, worst);
            }
            nbody_destroy(sb);
        }
        nbody_destroy(sr);
    }
    nbody_system_free(&s0);
}

/* restart: bitwise from a checkpoint between block times and at t_end
   (check_hermite_engine_restart); a desc with another eta or stepping is refused by name */
static void test_restart(void) {
    char path[64];
    int order;
    check_hermite_engine_restart(NBODY_ENGINE_BLOCK);
    snprintf(path, sizeof path, "build/test_hermite_%d.ckp", (int)sizeof(nbody_real));   /* float and double apart */
    for (order = 4; order <= (DBL ? 6 : 4); order += 2) {
        nbody_system s0 = NBODY_ZERO;
        nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, order, NBODY_STEPPING_DEFAULT, 0), e = d;
        nbody_sim *sa = NULL, *sb = NULL;
        int ok;
        nbody_ic_plummer(&s0, 100, 5);
        ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_checkpoint_save(sa, path) == NBODY_OK;
        e.timestep_eta = (nbody_real)0.5; e.log.func = count_log; log_lines = 0;
        CHECK(ok && nbody_checkpoint_load(&sb, &e, path) == NBODY_ERR_INVALID_ARGUMENT && log_lines == 1 &&
              strstr(log_last, "timestep_eta"), "checkpoint with another timestep_eta refused: %s", log_last);
        e = d; e.stepping = NBODY_STEPPING_SHARED; e.log.func = count_log; log_lines = 0;
        CHECK(nbody_checkpoint_load(&sb, &e, path) == NBODY_ERR_INVALID_ARGUMENT && strstr(log_last, "stepping"),
              "checkpoint with another stepping refused: %s", log_last);
        nbody_destroy(sa);
        remove(path);
        nbody_system_free(&s0);
    }
}

/* nbody_step takes one block step: get_state is every body at the same t (predicted), close
   to what a run landing there gives */
static void test_synchronised_state(void) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = hermite_desc(NBODY_ENGINE_SIMPLE, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sa = NULL, *sb = NULL;
    int k, ok;
    nbody_ic_plummer(&s0, 64, 9);
    nbody_system_alloc(&a, 64); nbody_system_alloc(&b, 64);
    ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_create(&sb, &d, &s0) == NBODY_OK;
    for (k = 0; k < 20 && ok; ++k) ok = nbody_step(sa) == NBODY_OK;
    ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_advance(sb, a.t) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
    CHECK(ok && a.t == b.t && a.t > 0 && check_state_diff(&a, &b) < (DBL ? 1e-6 : 1e-3), "state after 20 block steps (t = %g) "
          "against a run landing there: %.3g", (double)a.t, check_state_diff(&a, &b));
    nbody_destroy(sa); nbody_destroy(sb);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* collisions merge bodies; the integration restarts from the merged state and goes on */
static void test_collisions(void) {
    nbody_system s0 = NBODY_ZERO;
    nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sim = NULL;
    nbody_real r[64];
    nbody_event ev;
    size_t i;
    int ok;
    nbody_ic_plummer(&s0, 64, 8);
    for (i = 0; i < 64; ++i) r[i] = (nbody_real)0.05;
    d.collision = NBODY_COLLISION_MERGE; d.softening = (nbody_real)0.01;
    ok = nbody_create(&sim, &d, &s0) == NBODY_OK && nbody_set_radii(sim, r) == NBODY_OK;
    ok = ok && nbody_advance(sim, (nbody_real)1) == NBODY_OK;
    nbody_get_event(sim, &ev);
    CHECK(ok && ev.merges > 0 && nbody_get_n(sim) == 64 - ev.merges && nbody_get_stats(sim).t == 1,
          "merging collisions under hermite: %llu merges, n = %lu", ev.merges, (unsigned long)nbody_get_n(sim));
    nbody_destroy(sim);
    nbody_system_free(&s0);
}

/* hooks run after every block step; an exit condition stops the run there */
static int hook_calls;
static int count_hook(nbody_sim *sim, void *user) {
    nbody_system s = NBODY_ZERO;
    int bad = 0;
    (void)user;
    ++hook_calls;
    nbody_system_alloc(&s, nbody_get_n(sim));
    bad = nbody_get_state(sim, &s) != NBODY_OK || s.t != nbody_get_stats(sim).t;
    nbody_system_free(&s);
    return bad;
}
static void test_hooks_and_exits(void) {
    nbody_system s0 = NBODY_ZERO;
    nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sim = NULL;
    nbody_event ev;
    nbody_result r;
    nbody_ic_plummer(&s0, 64, 12);
    d.after_step = count_hook; hook_calls = 0;
    r = nbody_create(&sim, &d, &s0);
    if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)0.25);
    CHECK(r == NBODY_OK && hook_calls > 0 && (unsigned long long)hook_calls == nbody_get_stats(sim).steps,
          "after_step hook: %d calls, %llu steps, the state at the step's time", hook_calls, nbody_get_stats(sim).steps);
    nbody_destroy(sim); sim = NULL;
    d.after_step = NULL; d.escape_distance = (nbody_real)30;
    s0.x[5] = (nbody_real)29.9; s0.vx[5] = (nbody_real)3;     /* leaving */
    r = nbody_create(&sim, &d, &s0);
    if (r == NBODY_OK) r = nbody_advance(sim, 1);
    nbody_get_event(sim, &ev);
    CHECK(r == NBODY_STOPPED && ev.kind == NBODY_EVENT_ESCAPE && ev.i == 5 && ev.distance > 30 && nbody_get_stats(sim).t < 1,
          "escape stops the run after the block step that crosses: %s, body %lu at t = %g", nbody_result_string(r),
          (unsigned long)ev.i, (double)ev.t);
    nbody_destroy(sim);
    nbody_system_free(&s0);
}

/* The OpenCL engine runs NBODY_HERMITE here when it is compiled in and a device (PoCL on the
   CPU, or a GPU) takes the program: 1; else 0 with a note (compiled out: not a skip, the
   cross builds have no OpenCL) or a skip (compiled in, no device; a failure under
   NBODY_REQUIRE_OPENCL=1) */
static int opencl_runs(void) {
    nbody_system s0 = NBODY_ZERO;
    nbody_desc d = hermite_desc(NBODY_ENGINE_OPENCL, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sim = NULL;
    nbody_result r;
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL)) {
        printf("OpenCL compiled out: hermite on opencl not tested in this build\n");
        return 0;
    }
    nbody_ic_plummer(&s0, 16, 1);
    r = nbody_create(&sim, &d, &s0);
    nbody_destroy(sim);
    nbody_system_free(&s0);
    if (r == NBODY_ERR_UNAVAILABLE) check_skip("NBODY_REQUIRE_OPENCL", "no OpenCL device (or no fp64 for a double build)");
    else CHECK(r == NBODY_OK, "hermite on opencl: %s", nbody_result_string(r));
    return r == NBODY_OK;
}

/* refusals: one log line each, nothing created */
static void test_refusals(void) {
    nbody_system s0 = NBODY_ZERO;
    nbody_sim *sim = NULL;
    nbody_desc d;
    nbody_ic_plummer(&s0, 16, 1);
    d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_BLOCK, 0); d.method = NBODY_RK4; d.log.func = count_log; log_lines = 0;
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_INVALID_ARGUMENT && log_lines == 1 && strstr(log_last, "stepping") && !sim,
          "stepping block with rk4 refused: %s", log_last);
    d = hermite_desc(NBODY_ENGINE_BLOCK, 5, NBODY_STEPPING_DEFAULT, 0); d.log.func = count_log; log_lines = 0;
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_INVALID_ARGUMENT && log_lines == 1 && strstr(log_last, "order"),
          "hermite order 5 refused: %s", log_last);
    if (!DBL) {
        d = hermite_desc(NBODY_ENGINE_BLOCK, 6, NBODY_STEPPING_DEFAULT, 0); d.log.func = count_log; log_lines = 0;
        CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_INVALID_ARGUMENT && log_lines == 1 && strstr(log_last, "double"),
              "order 6 in float refused: %s", log_last);
    }
    d = hermite_desc(NBODY_ENGINE_TREE, 4, NBODY_STEPPING_DEFAULT, 0); d.log.func = count_log; log_lines = 0;
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_UNAVAILABLE && log_lines == 1 && strstr(log_last, "tree"),
          "hermite on the tree refused: %s", log_last);
    d = hermite_desc(NBODY_ENGINE_BLOCK, 4, (nbody_stepping)7, 0);
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_INVALID_ARGUMENT && !sim, "stepping 7 refused");
    d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, -1);
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_INVALID_ARGUMENT && !sim, "timestep_eta -1 refused");
    d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, 0); d.dt_min = (nbody_real)0.01; d.log.func = count_log;
    log_lines = 0;
    {   /* a close pair needs steps below dt_min: NBODY_ERR_STEP_TOO_SMALL, named in the log */
        nbody_result r = nbody_create(&sim, &d, &s0);
        s0.x[1] = s0.x[0] + (nbody_real)1e-4; s0.y[1] = s0.y[0]; s0.z[1] = s0.z[0];
        if (r == NBODY_OK) r = nbody_set_state(sim, &s0);
        if (r == NBODY_OK) r = nbody_advance(sim, 1);
        CHECK(r == NBODY_ERR_STEP_TOO_SMALL && log_lines >= 1 && strstr(log_last, "smallest step") &&
              nbody_get_stats(sim).t == 0, "a step below dt_min: %s, %s", nbody_result_string(r), log_last);
        nbody_destroy(sim);
    }
    {   /* two coincident bodies without softening: NaN forces, reported, nothing changed */
        nbody_result r;
        d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, 0); d.log.func = count_log; log_lines = 0;
        s0.x[1] = s0.x[0]; s0.y[1] = s0.y[0]; s0.z[1] = s0.z[0];
        r = nbody_create(&sim, &d, &s0);
        if (r == NBODY_OK) r = nbody_advance(sim, 1);
        CHECK(r == NBODY_ERR_NOT_FINITE && log_lines == 1 && strstr(log_last, "NaN") && nbody_get_stats(sim).t == 0,
              "coincident bodies: %s, %s", nbody_result_string(r), log_last);
        nbody_destroy(sim);
    }
    nbody_system_free(&s0);
}

int main(void) {
    test_orders();
    test_plummer_energy();
    test_block_vs_shared();
    test_engines();
    test_chunks();
    test_step_in_engine();
    test_block_forces();
    test_restart();
    test_synchronised_state();
    check_hermite_engine_test_particles(NBODY_ENGINE_BLOCK);
    check_hermite_engine_refused_step(NBODY_ENGINE_BLOCK);
    test_collisions();
    test_hooks_and_exits();
    test_refusals();
    if (opencl_runs()) check_hermite_engine(NBODY_ENGINE_OPENCL, 2048);
    return check_finish();
}
