/* test_tree_block.c - NBODY_LEAPFROG with NBODY_STEPPING_BLOCK on the tree engines (kick-drift-
   kick with power-of-two steps per body): the engine's forces on an active list from a build are
   the bits of a full evaluation's, from a refit within the opening criterion's bound
   (tree_active.h); block steps converge to the shared-step leapfrog's trajectory as
   eta shrinks (second order); energy on a small galaxy collision, with fewer body steps than
   shared steps; landing on t_end; the synchronised state between block times; bitwise
   restarts from checkpoints; OPENCL_TREE against TREE; TREE's block steps on the GPU trees' tree
   (nbody__kdk_gpu_tree); the refusals, each with its log line. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include "tree_active.h"
#include "gpu_tree_emul.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static const int DBL = sizeof(nbody_real) == sizeof(double);

static int log_lines;
static char log_last[512];
static void count_log(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level != NBODY_LOG_ERROR) return;
    ++log_lines;
    snprintf(log_last, sizeof log_last, "%s", msg);
}

static nbody_desc block_desc(nbody_engine engine, double eta, double theta) {
    nbody_desc d = NBODY_ZERO;
    d.engine = engine; d.method = NBODY_LEAPFROG; d.stepping = NBODY_STEPPING_BLOCK;
    d.timestep_eta = (nbody_real)eta; d.softening = (nbody_real)0.01; d.theta = (nbody_real)theta;
    return d;
}

/* runs d on s0 to t_end into out (allocated here); returns the result */
static nbody_result run_to(const nbody_desc *d, const nbody_system *s0, double t_end, nbody_system *out, nbody_stats *st) {
    nbody_sim *sim = NULL;
    nbody_result r = nbody_create(&sim, d, s0);
    nbody_system_alloc(out, s0->n);
    if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)t_end);
    if (r == NBODY_OK) r = nbody_get_state(sim, out);
    if (st && sim) *st = nbody_get_stats(sim);
    nbody_destroy(sim);
    return r;
}

/* Block steps against the shared-step leapfrog: a reference with a shared step 2^-13 (far
   below every block step) on a softened Plummer sphere with nearly exact forces (theta 0.1)
   to t = 0.5; eta / 4 halves every body's step, so the difference falls by about 4.
   NBODY_TEST_QUICK (emulated builds, where the reference is nearly all of the test's time):
   a shared step 2^-11, whose own error is still 1700 times below the smaller difference
   measured (2.6e-7 from the 2^-13 run, against 4.3e-4; the ratio 5.382 instead of 5.380) */
#ifdef NBODY_TEST_QUICK
#define CONVERGENCE_REF_STEPS 2048
#else
#define CONVERGENCE_REF_STEPS 8192
#endif
static void test_convergence(void) {
    nbody_system s0 = NBODY_ZERO, ref = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc shared = block_desc(NBODY_ENGINE_TREE, 0, 0.1), d1, d2;
    nbody_stats st;
    double e1, e2;
    nbody_ic_plummer(&s0, 200, 2);
    shared.softening = (nbody_real)0.05;
    d1 = d2 = shared;
    shared.stepping = NBODY_STEPPING_SHARED; shared.dt = (nbody_real)(1.0 / CONVERGENCE_REF_STEPS);
    d1.timestep_eta = (nbody_real)0.02; d2.timestep_eta = (nbody_real)0.005;
    CHECK(run_to(&shared, &s0, 0.5, &ref, NULL) == NBODY_OK && run_to(&d1, &s0, 0.5, &a, &st) == NBODY_OK &&
          run_to(&d2, &s0, 0.5, &b, NULL) == NBODY_OK, "block and shared runs to t = 0.5");
    e1 = check_state_rms(&a, &ref); e2 = check_state_rms(&b, &ref);
    printf("block against shared (rms): %.3g at eta 0.02, %.3g at eta 0.005\n", e1, e2);
    CHECK(e1 > 0 && e1 < 0.01 && e2 < e1 / 3 && e2 > e1 / 6, "block against shared (rms): %.3g at eta 0.02, %.3g at eta 0.005 "
          "(ratio %.2f, 4 for second order)", e1, e2, e1 / e2);
    CHECK(a.t == (nbody_real)0.5 && st.t == (nbody_real)0.5, "lands on t = 0.5 exactly (%.17g)", (double)a.t);
    CHECK(st.body_steps < st.steps * 200, "%llu body steps in %llu block steps (a shared step advances all 200)",
          st.body_steps, st.steps);
    nbody_system_free(&s0); nbody_system_free(&ref); nbody_system_free(&a); nbody_system_free(&b);
}

/* energy of a galaxy collision of 2048 bodies to t = 1 with the default eta and theta: within
   the shared-step leapfrog's at the finest block step, for far fewer body steps.
   NBODY_TEST_QUICK (emulated builds; the shared run is most of the test's time): 1024 bodies,
   the same assertions (measured: block 4.8e-4, shared 2.4e-3, 98057 body steps against 524288;
   at 2048 bodies 1.4e-3 and 2.2e-3, 181854 against 1048576; float the same to 2 %) */
#ifdef NBODY_TEST_QUICK
#define ENERGY_N 1024
#else
#define ENERGY_N 2048
#endif
static void test_energy(void) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = block_desc(NBODY_ENGINE_TREE, 0, 0), shared;
    nbody_invariants i0, ia, ib;
    nbody_stats sa, sb;
    double ea, eb;
    nbody_ic_collision(&s0, ENERGY_N, (nbody_real)0.3, 3, 1);
    shared = d; shared.stepping = NBODY_STEPPING_SHARED; shared.dt = (nbody_real)(1.0 / 512);
    CHECK(run_to(&d, &s0, 1, &a, &sa) == NBODY_OK && run_to(&shared, &s0, 1, &b, &sb) == NBODY_OK, "collision runs to t = 1");
    nbody_measure(&s0, 1, d.softening, &i0); nbody_measure(&a, 1, d.softening, &ia); nbody_measure(&b, 1, d.softening, &ib);
    ea = fabs((double)((ia.energy - i0.energy) / i0.energy)); eb = fabs((double)((ib.energy - i0.energy) / i0.energy));
    printf("collision N = %d to t = 1: block |dE/E| %.3g in %llu body steps, shared (1/512) %.3g in %llu\n", ENERGY_N,
           ea, sa.body_steps, eb, sb.steps * ENERGY_N);
    CHECK(ea < (DBL ? 3e-3 : 5e-3) && ea < 3 * eb, "block |dE/E| %.3g, shared (step 1/512) %.3g", ea, eb);
    CHECK(sa.body_steps * 4 < sb.steps * ENERGY_N, "block: %llu body steps, shared: %llu", sa.body_steps, sb.steps * ENERGY_N);
    CHECK(sa.steps >= 512 / 16 && sa.force_evals == sa.steps + 1, "%llu block steps, %llu force evaluations (one a step and "
          "the start)", sa.steps, sa.force_evals);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* |dE/E| of the galaxy collision of n bodies (seed) at t_end with block steps at eta 0.05 on
   `threads` threads (0: the default); the limiter's counts into woken and limited, the state into
   out when not NULL */
static double collision_error(size_t n, unsigned long long seed, double t_end, int threads, unsigned long long *woken,
                              unsigned long long *limited, nbody_system *out) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO;
    nbody_desc d = block_desc(NBODY_ENGINE_TREE, 0.05, 0);
    nbody_invariants i0, ia;
    nbody_sim *sim = NULL;
    nbody_result r;
    d.threads = threads;
    nbody_ic_collision(&s0, n, (nbody_real)0.3, 3, seed);
    nbody_system_alloc(out ? out : &a, n);
    r = nbody_create(&sim, &d, &s0);
    if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)t_end);
    if (r == NBODY_OK) r = nbody_get_state(sim, out ? out : &a);
    if (r == NBODY_OK) { *woken = sim->kdk.woken; *limited = sim->kdk.limited; }
    nbody_measure(&s0, 1, d.softening, &i0); nbody_measure(out ? out : &a, 1, d.softening, &ia);
    nbody_destroy(sim);
    nbody_system_free(&s0); nbody_system_free(&a);
    return r == NBODY_OK ? fabs((double)((ia.energy - i0.energy) / i0.energy)) : 1e30;
}

/* The step bound from the force's change (nbody__kdk_bound): GADGET's criterion sqrt(2 eta
   softening / |a|) unless jerk |a| e / |a - a0| is smaller: a force turned around in e = 0.01
   halves the step to 0.005 (jerk 1) or keeps e (jerk 2); an unchanged force, a small change,
   or jerk 0 leave the criterion. A simulation's factor (nbody__kdk_jerk_of): nbody__kdk_jerk
   from nbody__kdk_jerk_from attracting bodies, 0 below (test particles do not count) */
static void test_step_bound(void) {
    nbody_desc d = block_desc(NBODY_ENGINE_TREE, 0.05, 0.5);
    nbody_real e = (nbody_real)0.01, crit = nbody__kdk_criterion(&d, 1, 0, 0), jerk[3] = {0, 0, 0};
    nbody_real turned[3] = {-1, 0, 0}, same[3] = {1, 0, 0}, near[3] = {(nbody_real)0.9, 0, 0};
    nbody_real b1 = nbody__kdk_bound(&d, 1, 1, 0, 0, turned, 1, 0, e), b2 = nbody__kdk_bound(&d, 2, 1, 0, 0, turned, 1, 0, e);
    nbody_real b0 = nbody__kdk_bound(&d, 0, 1, 0, 0, turned, 1, 0, e), b_same = nbody__kdk_bound(&d, 1, 1, 0, 0, same, 1, 0, e);
    nbody_real b_near = nbody__kdk_bound(&d, 1, 1, 0, 0, near, 1, 0, e);
    nbody_system s = NBODY_ZERO;
    size_t k, n = nbody__kdk_jerk_from;
    CHECK(crit > e && b1 == e / 2 && b2 == e && b0 == crit && b_same == crit && b_near == crit,
          "the step bound: GADGET's %.4g; force turned %.4g (jerk 2: %.4g, off: %.4g), unchanged %.4g, changed by a tenth %.4g",
          (double)crit, (double)b1, (double)b2, (double)b0, (double)b_same, (double)b_near);
    CHECK(nbody_ic_uniform_cube(&s, n, 7) == NBODY_OK, "a cube of %lu bodies", (unsigned long)n);
    for (k = 0; k < 3; ++k) {   /* n attracting, n - 1 (one test particle), n - 1 bodies */
        nbody_sim *sim = NULL;
        d.n_active = k == 1 ? n - 1 : 0;
        if (k == 2) s.n = n - 1;
        if (nbody_create(&sim, &d, &s) == NBODY_OK) jerk[k] = nbody__kdk_jerk_of(sim);
        else jerk[k] = -1;
        nbody_destroy(sim);
    }
    s.n = n;
    CHECK(jerk[0] == (nbody_real)nbody__kdk_jerk && nbody__kdk_jerk > 0 && jerk[1] == 0 && jerk[2] == 0,
          "the bound's factor from %lu attracting bodies: %g; with one a test particle %g; %lu bodies %g", (unsigned long)n,
          (double)jerk[0], (double)jerk[1], (unsigned long)(n - 1), (double)jerk[2]);
    nbody_system_free(&s);
}

/* The neighbour limiter (nbody__kdk_limit) on the collision of 512 bodies through the galaxies'
   passage (t = 4), two seeds: GADGET's criterion alone lets a disc star on a long step run into
   a core within it, and the run gains energy; with every body's step within 4 times its
   neighbours' the error falls several times (measured 2-18x on six seeds; on these two 13.6x
   in double, 2.3x in float, where the runs take other paths). The same run on one
   and on two threads: the same bits (the walk's neighbour maxima do not depend on the order) */
static void test_limiter(void) {
    int limit = nbody__kdk_limit, wake = nbody__kdk_wake;
    nbody_system a = NBODY_ZERO, b = NBODY_ZERO;
    double on = 0, off = 0;
    unsigned long long limited = 0, woken = 0, w, l, seed;
    for (seed = 4; seed <= 5; ++seed) {
        on += collision_error(512, seed, 4, 0, &w, &l, NULL);
        limited += l; woken += w;
        nbody__kdk_limit = -1; nbody__kdk_wake = 0;
        off += collision_error(512, seed, 4, 0, &w, &l, NULL);
        nbody__kdk_limit = limit; nbody__kdk_wake = wake;
        CHECK(w == 0 && l == 0, "limiter off: nothing woken (%llu) or limited (%llu)", w, l);
    }
    printf("collision N = 512 to t = 4, seeds 4 and 5, eta 0.05: |dE/E| summed %.3g with the limiter (%llu levels raised, %llu "
           "bodies woken), %.3g without\n", on, limited, woken, off);
    CHECK(on < off / 2 && limited > 0, "the limiter cuts the energy error: %.3g against %.3g without it (%llu levels raised)", on, off,
          limited);
    w = l = woken = limited = 0;
    nbody__kdk_wake = 1;
    collision_error(512, 4, 1.5, 1, &w, &l, &a);
    collision_error(512, 4, 1.5, 2, &woken, &limited, &b);
    nbody__kdk_wake = wake;
    CHECK(check_same_state(&a, &b) && w == woken && l == limited && l > 0 && w > 0, "with wake-ups, one and two threads: the same "
          "bits, %llu and %llu levels raised, %llu and %llu woken", l, limited, w, woken);
    nbody_system_free(&a); nbody_system_free(&b);
}

/* The wake-ups (nbody__kdk_wake): step by step, every body whose time moved either was due
   (its time plus its step is the block time) or was woken (its step ended early, and the
   limiter counted it), and every body's time stays on the grid of its level */
static void test_wake(void) {
    nbody_system s0 = NBODY_ZERO;
    nbody_desc d = block_desc(NBODY_ENGINE_TREE, 0.05, 0);
    nbody_sim *sim = NULL;
    unsigned long long *t0 = NULL, *k0 = NULL, cut = 0, due = 0, off_grid = 0, bad = 0, woken = 0;
    size_t n = 512, i;
    int k, ok, wake = nbody__kdk_wake;
    nbody__kdk_wake = 1;
    nbody_ic_collision(&s0, n, (nbody_real)0.3, 3, 4);
    t0 = (unsigned long long *)malloc(2 * n * sizeof *t0); k0 = t0 + n;
    ok = t0 && nbody_create(&sim, &d, &s0) == NBODY_OK && nbody_advance(sim, (nbody_real)1.5) == NBODY_OK;
    if (ok) woken = sim->kdk.woken;
    for (k = 0; k < 400 && ok; ++k) {
        unsigned long long now;
        memcpy(t0, sim->sched.ticks[0], n * sizeof *t0); memcpy(k0, sim->sched.ticks[1], n * sizeof *k0);
        ok = nbody_step(sim) == NBODY_OK;
        now = sim->sched.now;
        if (!ok || now == 0) continue;   /* the origin moved: every body was due */
        for (i = 0; i < n; ++i) {
            unsigned long long t = sim->sched.ticks[0][i], span = 1ULL << (NBODY__BLOCK_LEVELS - sim->sched.ticks[1][i]);
            off_grid += t % span != 0;
            if (t == t0[i]) continue;
            if (t != now) ++bad;
            else if (t0[i] + (1ULL << (NBODY__BLOCK_LEVELS - k0[i])) == now) ++due;
            else if (t0[i] + (1ULL << (NBODY__BLOCK_LEVELS - k0[i])) > now) ++cut;
            else ++bad;
        }
    }
    if (ok) woken = sim->kdk.woken - woken;
    nbody__kdk_wake = wake;
    CHECK(ok && cut > 0 && cut == woken && due > 0 && off_grid == 0 && bad == 0, "400 block steps from t = 1.5: %llu bodies due, %llu "
          "woken early (the limiter counted %llu), %llu off their grid, %llu moved otherwise", due, cut, woken, off_grid, bad);
    nbody_destroy(sim);
    free(t0);
    nbody_system_free(&s0);
}

/* nbody_step takes one block step; the state then is every body at the step's t (the
   inactive ones' velocities predicted), close to a run that lands there */
static void test_synchronised_state(void) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = block_desc(NBODY_ENGINE_TREE, 0.01, 0.3);
    nbody_sim *sa = NULL, *sb = NULL;
    int k, ok;
    nbody_ic_collision(&s0, 300, (nbody_real)0.3, 3, 3);
    nbody_system_alloc(&a, 300); nbody_system_alloc(&b, 300);
    ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_create(&sb, &d, &s0) == NBODY_OK;
    for (k = 0; k < 21 && ok; ++k) ok = nbody_step(sa) == NBODY_OK;
    ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_advance(sb, a.t) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
    CHECK(ok && a.t == b.t && a.t > 0 && check_state_diff(&a, &b) < (DBL ? 1e-3 : 2e-3), "state after 21 block steps (t = %g) against "
          "a run landing there: %.3g", (double)a.t, check_state_diff(&a, &b));
    nbody_destroy(sa); nbody_destroy(sb);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* restart: a checkpoint between block times (after nbody_step) and one after a synchronising
   nbody_advance continue bitwise as the run that was not stopped; with the step bound from the
   force's change on (nbody__kdk_jerk_from 0), whose a0 the loaded run reads back from kick */
static void test_restart(void) {
    char path[64];
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = block_desc(NBODY_ENGINE_TREE, 0, 0);
    nbody_sim *sa = NULL, *sb = NULL;
    int k, mid, ok;
    size_t jerk_from = nbody__kdk_jerk_from;
    nbody__kdk_jerk_from = 0;
    snprintf(path, sizeof path, "build/test_tree_block_%d.ckp", (int)sizeof(nbody_real));
    nbody_ic_collision(&s0, 400, (nbody_real)0.3, 3, 5);
    nbody_system_alloc(&a, 400); nbody_system_alloc(&b, 400);
    for (mid = 0; mid < 4; ++mid) {    /* the limiter's wake-ups off, then on (nbody__kdk_wake) */
        int wake = nbody__kdk_wake;
        nbody__kdk_wake = mid >= 2;
        ok = nbody_create(&sa, &d, &s0) == NBODY_OK;
        if (mid & 1) for (k = 0; k < 37 && ok; ++k) ok = nbody_step(sa) == NBODY_OK;
        else ok = ok && nbody_advance(sa, (nbody_real)0.3) == NBODY_OK;
        ok = ok && nbody_checkpoint_save(sa, path) == NBODY_OK;
        ok = ok && nbody_checkpoint_load(&sb, &d, path) == NBODY_OK;
        ok = ok && nbody_advance(sa, (nbody_real)0.7) == NBODY_OK && nbody_advance(sb, (nbody_real)0.7) == NBODY_OK;
        ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
        CHECK(ok && check_same_state(&a, &b) && nbody_get_stats(sa).steps == nbody_get_stats(sb).steps && sb->kdk.limited > 0 &&
              (mid < 2 || sb->kdk.woken > 0), "restart from a checkpoint %s continues bitwise (%s; after it %llu levels raised by "
              "the limiter, %llu bodies woken)", mid & 1 ? "between block times" : "at t_end", mid < 2 ? "no wake-ups" : "wake-ups",
              ok ? sb->kdk.limited : 0ULL, ok ? sb->kdk.woken : 0ULL);
        nbody__kdk_wake = wake;
        nbody_destroy(sa); nbody_destroy(sb); sa = sb = NULL;
    }
    {   /* the shared leapfrog's checkpoint is not the block steps' */
        nbody_desc e = d;
        e.stepping = NBODY_STEPPING_SHARED; e.log.func = count_log; log_lines = 0;
        ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_checkpoint_save(sa, path) == NBODY_OK;
        CHECK(ok && nbody_checkpoint_load(&sb, &e, path) == NBODY_ERR_INVALID_ARGUMENT && strstr(log_last, "stepping"),
              "checkpoint with another stepping refused: %s", log_last);
        nbody_destroy(sa);
    }
    remove(path);
    nbody__kdk_jerk_from = jerk_from;
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* OPENCL_TREE against TREE (another tree: Hilbert-ordered, built on the device) on a softened
   Plummer sphere: nearly the same body steps, and as close to a run with nearly exact forces
   (TREE at theta 0.1) as TREE is at the same theta */
static void test_opencl(void) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO, x = NBODY_ZERO;
    nbody_desc d = block_desc(NBODY_ENGINE_TREE, 0, 0.3), c, exact;
    nbody_stats sa, sb;
    nbody_result r;
    d.softening = (nbody_real)0.05;
    c = exact = d;
    c.engine = NBODY_ENGINE_OPENCL_TREE; exact.theta = (nbody_real)0.1;
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL_TREE)) { printf("opencl_tree: not in this build\n"); return; }
    nbody_ic_plummer(&s0, 1000, 6);
    r = run_to(&c, &s0, 0.25, &b, &sb);
    if (r == NBODY_ERR_UNAVAILABLE) {
        check_skip("NBODY_REQUIRE_OPENCL", "no OpenCL platform");
    } else {
        double et, eo;
        CHECK(run_to(&d, &s0, 0.25, &a, &sa) == NBODY_OK && run_to(&exact, &s0, 0.25, &x, NULL) == NBODY_OK && r == NBODY_OK,
              "tree and opencl_tree block runs: %s", nbody_result_string(r));
        et = check_state_rms(&a, &x); eo = check_state_rms(&b, &x);
        printf("against theta 0.1 at t = 0.25 (rms): tree %.3g, opencl_tree %.3g; opencl_tree against tree %.3g\n", et, eo,
               check_state_rms(&a, &b));
        CHECK(eo < 1.5 * et && check_state_rms(&a, &b) < 2 * et, "opencl_tree against nearly exact forces: rms %.3g (tree: %.3g)", eo, et);
        CHECK(sa.steps > 0 && sb.steps > 0 && sb.body_steps < sb.steps * 1000 &&
              (double)sb.body_steps > 0.9 * (double)sa.body_steps && (double)sb.body_steps < 1.1 * (double)sa.body_steps,
              "body steps: tree %llu, opencl_tree %llu", sa.body_steps, sb.body_steps);
    }
    check_tree_active(NBODY_ENGINE_OPENCL_TREE, "opencl_tree", NULL, 1, 0);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b); nbody_system_free(&x);
}

/* TREE's block steps on the GPU trees' tree (nbody__kdk_gpu_tree, desc.leaf_size 1): a build's
   forces are the emulated GPU tree's (gpu_tree_emul.h: the same keys, nodes and walk) to
   rounding, and a refit of the same positions keeps them; a block run on 2000 bodies of the
   collision takes the steps OPENCL_TREE takes (its tree) and ends at its energy, where the
   kd-tree's run does not (measured: the same steps and dE/E to 7 digits at 20000 bodies); with
   the step bound from the force's change on (nbody__kdk_jerk_from 0), whose a0 OPENCL_TREE's
   host path keeps beside the device's kicks */
static void test_gpu_tree(void) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO, k = NBODY_ZERO;
    nbody_desc d = block_desc(NBODY_ENGINE_TREE, 0.05, 0.5), c;
    nbody_sim *sim = NULL;
    nbody_stats sa, sb, sk;
    size_t n = 2000, i, *list = (size_t *)malloc(n * sizeof(size_t));
    nbody_real *ref = (nbody_real *)malloc(3 * n * sizeof(nbody_real)), *got = (nbody_real *)malloc(6 * n * sizeof(nbody_real));
    double worst = 0, drift = 0, tol = DBL ? 1e-12 : 1e-4;
    nbody_result r;
    size_t jerk_from = nbody__kdk_jerk_from;
    nbody__kdk_jerk_from = 0;
    d.leaf_size = 1;
    nbody_ic_collision(&s0, n, (nbody_real)0.3, 3, 2);
    nbody__kdk_gpu_tree = 1;
    CHECK(list && ref && got && gpu_tree_emul_accel(&s0, n, d.softening, d.theta, ref) && nbody_create(&sim, &d, &s0) == NBODY_OK,
          "gpu tree: setup");
    if (sim && list && ref && got) {
        nbody__active_op op;
        memset(&op, 0, sizeof op);
        for (i = 0; i < n; ++i) list[i] = i;
        op.y = sim->y; op.list = list; op.count = n; op.out = got; op.build = 1; op.order = sim->kdk.tree[0];
        r = sim->eng.ops->active_forces(&sim->eng, &op);
        op.build = 0; op.out = got + 3 * n;
        if (r == NBODY_OK) r = sim->eng.ops->active_forces(&sim->eng, &op);
        for (i = 0; i < 3 * n; ++i) {
            double scale = fabs((double)ref[i % n]) + fabs((double)ref[n + i % n]) + fabs((double)ref[2 * n + i % n]);
            double e = fabs((double)(got[i] - ref[i])) / scale, f = fabs((double)(got[3 * n + i] - got[i])) / scale;
            worst = e > worst ? e : worst;
            drift = f > drift ? f : drift;
        }
        CHECK(r == NBODY_OK && worst < tol && drift < tol, "gpu tree: build against the emulated GPU tree %.3g, refit against build %.3g",
              worst, drift);
    }
    nbody_destroy(sim);
    c = d; c.engine = NBODY_ENGINE_OPENCL_TREE;
    /* compiled out (the float and long double builds): not this build's check, as in test_opencl_tree;
       compiled in without a platform: skipped, or failed where CI requires OpenCL */
    r = nbody_engine_available(NBODY_ENGINE_OPENCL_TREE) ? run_to(&c, &s0, 0.25, &b, &sb) : NBODY_ERR_UNAVAILABLE;
    if (!nbody_engine_available(NBODY_ENGINE_OPENCL_TREE)) {
        printf("gpu tree against opencl_tree: opencl_tree not in this build\n");
    } else if (r == NBODY_ERR_UNAVAILABLE) {
        check_skip("NBODY_REQUIRE_OPENCL", "no OpenCL platform");
    } else {
        nbody_invariants i0, ia, ib, ik;
        double ea, eb, ek;
        CHECK(r == NBODY_OK && run_to(&d, &s0, 0.25, &a, &sa) == NBODY_OK, "gpu tree: runs %s", nbody_result_string(r));
        nbody__kdk_gpu_tree = 0;
        CHECK(run_to(&d, &s0, 0.25, &k, &sk) == NBODY_OK, "gpu tree: the kd-tree's run");
        nbody_measure(&s0, 1, d.softening, &i0); nbody_measure(&a, 1, d.softening, &ia);
        nbody_measure(&b, 1, d.softening, &ib); nbody_measure(&k, 1, d.softening, &ik);
        ea = (double)((ia.energy - i0.energy) / i0.energy); eb = (double)((ib.energy - i0.energy) / i0.energy);
        ek = (double)((ik.energy - i0.energy) / i0.energy);
        printf("block steps to t = 0.25, dE/E: tree on the gpu trees' tree %.6e (%llu body steps), opencl_tree %.6e (%llu), tree on its "
               "kd-tree %.6e (%llu)\n", ea, sa.body_steps, eb, sb.body_steps, ek, sk.body_steps);
        CHECK(sa.body_steps == sb.body_steps && fabs(ea - eb) < (DBL ? 1e-3 : 5e-2) * fabs(eb),
              "tree on the gpu trees' tree as opencl_tree: dE/E %.6e against %.6e", ea, eb);
        CHECK(DBL ? fabs(ek - eb) > 1e-2 * fabs(eb) : 1, "the kd-tree's run differs: dE/E %.6e against %.6e", ek, eb);
    }
    nbody__kdk_gpu_tree = 0;
    nbody__kdk_jerk_from = jerk_from;
    free(list); free(ref); free(got);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b); nbody_system_free(&k);
}

/* every refusal says why in one line, and changes nothing */
static void test_refusals(void) {
    nbody_system s0 = NBODY_ZERO;
    nbody_sim *sim = NULL;
    nbody_desc d;
    nbody_ic_collision(&s0, 64, (nbody_real)0.3, 3, 7);
    d = block_desc(NBODY_ENGINE_BLOCK, 0, 0); d.log.func = count_log; log_lines = 0;
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_UNAVAILABLE && !sim && log_lines == 1 && strstr(log_last, "tree engines"),
          "block steps with leapfrog on a direct engine refused: %s", log_last);
    d = block_desc(NBODY_ENGINE_TREE, 0, 0); d.softening = 0; d.log.func = count_log; log_lines = 0;
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_INVALID_ARGUMENT && !sim && log_lines == 1 && strstr(log_last, "softening"),
          "block steps without softening refused: %s", log_last);
    d = block_desc(NBODY_ENGINE_TREE, 0, 0); d.method = NBODY_RK4; d.log.func = count_log; log_lines = 0;
    CHECK(nbody_create(&sim, &d, &s0) == NBODY_ERR_INVALID_ARGUMENT && !sim && log_lines == 1 && strstr(log_last, "rk4"),
          "block steps with rk4 refused: %s", log_last);
    nbody_system_free(&s0);
}

int main(void) {
    check_tree_active(NBODY_ENGINE_TREE, "tree", NULL, 1, 0);
    test_convergence();
    test_energy();
    test_step_bound();
    test_limiter();
    test_wake();
    test_synchronised_state();
    test_restart();
    test_opencl();
    test_gpu_tree();
    test_refusals();
    return check_finish();
}
