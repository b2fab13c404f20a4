/* hermite_engine.h - NBODY_HERMITE on one engine against BLOCK, shared by test_hermite.c (the
   OpenCL engine, on PoCL where no GPU is) and cuda_engines.c (the CUDA engine): the same
   trajectories as BLOCK to rounding with the same steps (both orders, softened Plummer), a
   few active bodies among many sources (the GPUs split the sources), the energy error of
   unsoftened Plummer spheres, the orders on a Kepler orbit, bitwise restarts from
   checkpoints, and test particles. Include after nbody.h (with NBODY_IMPLEMENTATION) and
   check.h. */
#ifndef HERMITE_ENGINE_H
#define HERMITE_ENGINE_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double PI = 3.14159265358979323846;
static const int DBL = sizeof(nbody_real) == sizeof(double);

/* where the engine under test runs: on the ranks of an MPI communicator (mpi_hermite.c) or on
   several GPUs of this process (cuda_multi.c); the BLOCK reference runs in one process */
static void *hermite_comm = NULL;
static int hermite_devices = 0;
/* 1: the engine under test splits a body's sum over participants (rounding, not bits) */
static int hermite_split(void) { return hermite_comm != NULL || hermite_devices > 1; }

static nbody_desc hermite_desc(nbody_engine engine, int order, nbody_stepping stepping, double eta) {
    nbody_desc d = NBODY_ZERO;
    d.method = NBODY_HERMITE; d.engine = engine; d.order = order; d.stepping = stepping; d.timestep_eta = (nbody_real)eta;
    d.threads = 1; d.mpi_comm = hermite_comm; d.devices = hermite_devices;
    return d;
}

/* ---- the orders: two bodies of mass 1/2 on an orbit of e = 0.3, a = 1 (period 2 pi), one
   period with shared steps; the phase error (position and velocity against the start) for
   eta / 4^k, which halves the steps: the error falls by 2^p a halving ---- */
static double kepler_error(nbody_engine engine, int order, double eta, unsigned long long *steps) {
    nbody_system s = NBODY_ZERO, o = NBODY_ZERO;
    nbody_sim *sim = NULL;
    nbody_desc d = hermite_desc(engine, order, NBODY_STEPPING_SHARED, eta);
    double e = 0.3, rp = 1 - e, vp = sqrt((1 + e) / (1 - e)), err = -1;
    nbody_system_alloc(&s, 2); nbody_system_alloc(&o, 2);
    s.m[0] = s.m[1] = (nbody_real)0.5;
    s.x[0] = (nbody_real)(-rp / 2); s.x[1] = (nbody_real)(rp / 2); s.vy[0] = (nbody_real)(-vp / 2); s.vy[1] = (nbody_real)(vp / 2);
    d.dt_max = (nbody_real)0.25;
    if (nbody_create(&sim, &d, &s) == NBODY_OK && nbody_advance(sim, (nbody_real)(2 * PI)) == NBODY_OK &&
        nbody_get_state(sim, &o) == NBODY_OK) {
        err = fabs((double)(o.x[1] - s.x[1])) + fabs((double)(o.y[1] - s.y[1])) + fabs((double)(o.vx[1] - s.vx[1])) +
              fabs((double)(o.vy[1] - s.vy[1]));
        *steps = nbody_get_stats(sim).steps;
    }
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&o);
    return err;
}

/* ---- Plummer spheres: energy error, steps and the state at t ---- */
typedef struct run_out {
    nbody_result r;
    double de;
    nbody_stats stats;
    nbody_system s;
} run_out;

static run_out run_plummer(const nbody_desc *d, size_t n, double t_end) {
    nbody_system s0 = NBODY_ZERO;
    nbody_sim *sim = NULL;
    nbody_invariants e0, e1;
    run_out o;
    memset(&o, 0, sizeof o);
    nbody_ic_plummer(&s0, n, 11);
    nbody_system_alloc(&o.s, n);
    nbody_measure(&s0, 1, d->softening, &e0);
    o.r = nbody_create(&sim, d, &s0);
    if (o.r == NBODY_OK) o.r = nbody_advance(sim, (nbody_real)t_end);
    if (o.r == NBODY_OK) o.r = nbody_get_state(sim, &o.s);
    nbody_measure(&o.s, 1, d->softening, &e1);
    o.de = fabs((double)((e1.energy - e0.energy) / e0.energy));
    o.stats = nbody_get_stats(sim);
    nbody_destroy(sim);
    nbody_system_free(&s0);
    return o;
}

/* orders on a Kepler orbit: the error falls by 2^p when eta falls by 4 (steps halve) */
static void check_hermite_engine_orders(nbody_engine engine) {
    static const int orders[2] = {4, 6};
    static const double eta0[2] = {2.5e-3, 2.5e-2};
    int o, k;
    for (o = 0; o < 2; ++o) {
        double err[2];
        unsigned long long steps[2] = {0, 0};
        for (k = 0; k < 2; ++k) err[k] = kepler_error(engine, orders[o], eta0[o] / pow(4, k), &steps[k]);
        {
            double p = log2(err[0] / err[1]) / log2((double)steps[1] / (double)steps[0]);
            CHECK(err[1] > 0 && fabs(p - orders[o]) < 0.5, "%s order %d on Kepler: measured %.2f (errors %.3g -> %.3g)",
                  nbody_engine_name(engine), orders[o], p, err[0], err[1]);
        }
    }
}

/* the engine against BLOCK: both orders (6: double only), softened Plummer of n bodies to t */
static void check_hermite_engine_vs_block(nbody_engine engine, size_t n, double t) {
    int o;
    for (o = 4; o <= (DBL ? 6 : 4); o += 2) {
        nbody_desc ref = hermite_desc(NBODY_ENGINE_BLOCK, o, NBODY_STEPPING_DEFAULT, 0), d;
        run_out r0, r;
        double diff;
        ref.softening = (nbody_real)0.01;
        d = ref; d.engine = engine;
        ref.mpi_comm = NULL; ref.devices = 0;
        r0 = run_plummer(&ref, n, t);
        r = run_plummer(&d, n, t);
        diff = check_state_diff(&r.s, &r0.s);
        /* float: a step level can round the other way (the same trajectory to the error of a step) */
        CHECK(r.r == NBODY_OK && diff < (DBL ? 1e-9 : 1e-3) && (!DBL || (r.stats.steps == r0.stats.steps &&
              r.stats.body_steps == r0.stats.body_steps)),
              "%s order %d, %lu bodies to t = %g, against block: %s, states differ by %.3g, steps %llu vs %llu", nbody_engine_name(engine),
              o, (unsigned long)n, t, nbody_result_string(r.r), diff, r.stats.steps, r0.stats.steps);
        nbody_system_free(&r.s); nbody_system_free(&r0.s);
    }
}

static void check_hermite_engine_energy(nbody_engine engine) {
    static const double limit[2] = {2e-6, 1e-7};   /* BLOCK: 1.5e-7 and 1.7e-9 at N = 256 */
    int o;
    for (o = 0; o < (DBL ? 2 : 1); ++o) {
        nbody_desc d = hermite_desc(engine, 4 + 2 * o, NBODY_STEPPING_DEFAULT, 0);
        run_out r = run_plummer(&d, 128, 1);
        CHECK(r.r == NBODY_OK && r.de < (DBL ? limit[o] : 1e-4) && r.stats.t == 1,
              "%s order %d Plummer N = 128 to t = 1: %s, |dE/E| %.3g (limit %.1g)", nbody_engine_name(engine), 4 + 2 * o,
              nbody_result_string(r.r), r.de, DBL ? limit[o] : 1e-4);
        nbody_system_free(&r.s);
    }
}

/* a checkpoint between block times and one at t_end continue bitwise */
static void check_hermite_engine_restart(nbody_engine engine) {
    char path[80];
    int order, mid, k, ok;
    snprintf(path, sizeof path, "build/hermite_engine_%s%s_%d.ckp", nbody_engine_name(engine), hermite_split() ? "_split" : "",
             (int)sizeof(nbody_real));
    for (order = 4; order <= (DBL ? 6 : 4); order += 2) {
        nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
        nbody_desc d = hermite_desc(engine, order, NBODY_STEPPING_DEFAULT, 0);
        nbody_sim *sa = NULL, *sb = NULL;
        nbody_ic_plummer(&s0, 100, 5);
        nbody_system_alloc(&a, 100); nbody_system_alloc(&b, 100);
        for (mid = 0; mid < 2; ++mid) {
            ok = nbody_create(&sa, &d, &s0) == NBODY_OK;
            if (mid) for (k = 0; k < 37 && ok; ++k) ok = nbody_step(sa) == NBODY_OK;
            else ok = ok && nbody_advance(sa, (nbody_real)0.3) == NBODY_OK;
            ok = ok && nbody_checkpoint_save(sa, path) == NBODY_OK;
            ok = ok && nbody_checkpoint_load(&sb, &d, path) == NBODY_OK;
            ok = ok && nbody_advance(sa, (nbody_real)0.7) == NBODY_OK && nbody_advance(sb, (nbody_real)0.7) == NBODY_OK;
            ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
            CHECK(ok && check_same_state(&a, &b) && nbody_get_stats(sa).steps == nbody_get_stats(sb).steps,
                  "%s order %d: restart from a checkpoint %s continues bitwise", nbody_engine_name(engine), order,
                  mid ? "between block times" : "at t_end");
            nbody_destroy(sa); nbody_destroy(sb); sa = sb = NULL;
        }
        remove(path);
        nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
    }
}

/* test particles feel the active bodies and change nothing of theirs: bit for bit on the CPU
   engines in one process, to rounding on a GPU (it splits a body's sum by how many bodies are
   active) and on several participants (they split the sources by count) */
static void check_hermite_engine_test_particles(nbody_engine engine) {
    nbody_system s0 = NBODY_ZERO, act = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = hermite_desc(engine, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sa = NULL, *sb = NULL;
    size_t i;
    int ok, cpu, moved = 1;
    nbody_ic_plummer(&s0, 80, 4);
    nbody_system_alloc(&act, 50); nbody_system_alloc(&a, 80); nbody_system_alloc(&b, 50);
    for (i = 0; i < 50; ++i) {
        act.x[i] = s0.x[i]; act.y[i] = s0.y[i]; act.z[i] = s0.z[i];
        act.vx[i] = s0.vx[i]; act.vy[i] = s0.vy[i]; act.vz[i] = s0.vz[i]; act.m[i] = s0.m[i];
    }
    d.n_active = 50;
    ok = nbody_create(&sa, &d, &s0) == NBODY_OK;
    d.n_active = 0;
    ok = ok && nbody_create(&sb, &d, &act) == NBODY_OK;
    ok = ok && nbody_advance(sa, (nbody_real)0.5) == NBODY_OK && nbody_advance(sb, (nbody_real)0.5) == NBODY_OK;
    ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
    a.n = 50;
    for (i = 50; i < 80; ++i) moved = moved && a.x[i] != s0.x[i];
    cpu = (engine == NBODY_ENGINE_SIMPLE || engine == NBODY_ENGINE_OPENMP || engine == NBODY_ENGINE_BLOCK) && !hermite_split();
    CHECK(ok && (cpu ? check_same_state(&a, &b) : check_state_diff(&a, &b) < (DBL ? 1e-12 : 1e-5)) && moved, "%s n_active 50 of 80: the "
          "active bodies as without the test particles (%s: differ by %.3g)", nbody_engine_name(engine), cpu ? "bitwise" : "to rounding",
          check_state_diff(&a, &b));
    a.n = 80;
    nbody_destroy(sa); nbody_destroy(sb);
    nbody_system_free(&s0); nbody_system_free(&act); nbody_system_free(&a); nbody_system_free(&b);
}

/* the engine's state of the two bodies (x v | a jerk | snap crackle at their own times) */
static int hermite_engine_state(nbody_sim *sim, nbody_real *out) {
    return sim->eng.ops->download(&sim->eng, out, sim->hermite.base, 0, 12) == NBODY_OK &&
           sim->eng.ops->download(&sim->eng, out + 12, sim->hermite.force, 0, 12) == NBODY_OK &&
           sim->eng.ops->download(&sim->eng, out + 24, sim->hermite.high, 0, 12) == NBODY_OK;
}

/* a step refused after the engine computed it (a level below dt_min near the pericentre of an
   orbit of e = 0.99) leaves the engine's state as it was: the GPU engines step in place and
   undo it */
static void check_hermite_engine_refused_step(nbody_engine engine) {
    nbody_system s = NBODY_ZERO;
    nbody_desc d = hermite_desc(engine, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sim = NULL;
    nbody_real before[36], after[36];
    nbody_result r;
    int k = 0, ok;
    nbody_system_alloc(&s, 2);
    s.m[0] = s.m[1] = (nbody_real)0.5;
    s.x[0] = (nbody_real)-0.995; s.x[1] = (nbody_real)0.995;
    s.vy[0] = (nbody_real)-0.035444; s.vy[1] = (nbody_real)0.035444;   /* apocentre of a = 1, e = 0.99 */
    d.dt_min = (nbody_real)1e-3;
    r = nbody_create(&sim, &d, &s);
    ok = r == NBODY_OK;
    while (ok && r == NBODY_OK && k++ < 100000) {
        ok = hermite_engine_state(sim, before);
        r = nbody_step(sim);
    }
    ok = ok && hermite_engine_state(sim, after);
    CHECK(ok && r == NBODY_ERR_STEP_TOO_SMALL && k > 10 && !memcmp(before, after, sizeof before),
          "%s: the step refused after %d steps (%s) leaves the engine's state as it was", nbody_engine_name(engine), k,
          nbody_result_string(r));
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* ---- nbody_advance with nothing watching its steps (an engine may take them on its own,
   ops.hermite_run) against the same advance with a step hook (every step through the host):
   the same steps, bits and stats ---- */
static int hermite_watch(nbody_sim *sim, void *user_data) { (void)sim; (void)user_data; return 0; }

/* sa unwatched, sb watched (both created from d): advance both to each of t[0 .. nt) and to
   t_fail; 1 when they agree bit for bit (engine state, state, stats), *r the last result */
static int hermite_advance_pair(nbody_desc d, const nbody_system *s0, const double *t, int nt, nbody_result *r) {
    nbody_sim *sa = NULL, *sb = NULL;
    nbody_system a = NBODY_ZERO, b = NBODY_ZERO;
    size_t n = s0->n, k;
    nbody_real *ea = (nbody_real *)malloc(18 * n * sizeof(nbody_real)), *eb = (nbody_real *)malloc(18 * n * sizeof(nbody_real));
    nbody_result ra = NBODY_OK, rb = NBODY_OK;
    int ok = ea && eb, i;
    nbody_system_alloc(&a, n); nbody_system_alloc(&b, n);
    ok = ok && nbody_create(&sa, &d, s0) == NBODY_OK;
    d.after_step = hermite_watch;
    ok = ok && nbody_create(&sb, &d, s0) == NBODY_OK;
    for (i = 0; i < nt && ok && ra == NBODY_OK; ++i) {
        nbody_stats x, y;
        ra = nbody_advance(sa, (nbody_real)t[i]);
        rb = nbody_advance(sb, (nbody_real)t[i]);
        x = nbody_get_stats(sa); y = nbody_get_stats(sb);
        ok = ra == rb && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK && check_same_state(&a, &b) &&
             x.t == y.t && x.steps == y.steps && x.body_steps == y.body_steps && x.interactions == y.interactions &&
             x.force_evals == y.force_evals && x.dt == y.dt;
        for (k = 0; k < 3 && ok; ++k) {
            nbody__buf bufs[3];
            bufs[0] = sa->hermite.base; bufs[1] = sa->hermite.force; bufs[2] = sa->hermite.high;
            ok = sa->eng.ops->download(&sa->eng, ea + 6 * n * k, bufs[k], 0, 6 * n) == NBODY_OK;
            bufs[0] = sb->hermite.base; bufs[1] = sb->hermite.force; bufs[2] = sb->hermite.high;
            ok = ok && sb->eng.ops->download(&sb->eng, eb + 6 * n * k, bufs[k], 0, 6 * n) == NBODY_OK;
        }
        ok = ok && !memcmp(ea, eb, 18 * n * sizeof(nbody_real));
    }
    *r = ra;
    nbody_destroy(sa); nbody_destroy(sb);
    nbody_system_free(&a); nbody_system_free(&b);
    free(ea); free(eb);
    return ok;
}

/* a binary of e = 0.99 (total mass 1, semi-major axis 1) from its apocentre, among 30 light
   bodies (1e-6) on circular orbits far out (radii 20-24): its steps fall hundreds of times below
   theirs near the pericentre (t = pi). s holds 32 bodies (nbody_system_alloc). */
static void eccentric_binary_among_light_bodies(nbody_system *s) {
    size_t i;
    s->m[0] = s->m[1] = (nbody_real)0.5;
    s->x[0] = (nbody_real)-0.995; s->x[1] = (nbody_real)0.995;
    s->vy[0] = (nbody_real)-0.035444; s->vy[1] = (nbody_real)0.035444;
    for (i = 2; i < 32; ++i) {
        double phi = 2 * PI * (double)i / 30, rad = 20 + (double)(i % 5), v = sqrt(1 / rad);
        s->m[i] = (nbody_real)1e-6;
        s->x[i] = (nbody_real)(rad * cos(phi)); s->y[i] = (nbody_real)(rad * sin(phi)); s->z[i] = (nbody_real)(0.1 * (double)(i % 3));
        s->vx[i] = (nbody_real)(-v * sin(phi)); s->vy[i] = (nbody_real)(v * cos(phi));
    }
}

static void check_hermite_engine_unwatched(nbody_engine engine) {
    static const double t[3] = {0.0625, 0.1875, 0.25};
    nbody_system s0 = NBODY_ZERO, bin = NBODY_ZERO;
    nbody_result r;
    int o, ok;
    nbody_ic_plummer(&s0, 600, 3);                 /* unsoftened: steps over many levels */
    for (o = 4; o <= (DBL ? 6 : 4); o += 2) {
        nbody_desc d = hermite_desc(engine, o, NBODY_STEPPING_DEFAULT, 0);
        ok = hermite_advance_pair(d, &s0, t, 3, &r);
        CHECK(ok && r == NBODY_OK, "%s order %d, 600 bodies to t = 1/16, 3/16, 1/4: unwatched as watched, bit for bit (%s)",
              nbody_engine_name(engine), o, nbody_result_string(r));
    }
    /* a binary of e = 0.99 from its apocentre among 30 light bodies far out: its steps, taken
       apart from the others, fall below dt_min before the pericentre; the refused step leaves
       both runs where the step before it did */
    nbody_system_alloc(&bin, 32);
    eccentric_binary_among_light_bodies(&bin);
    {
        nbody_desc d = hermite_desc(engine, 4, NBODY_STEPPING_DEFAULT, 0);
        double tf = 10;
        d.dt_min = (nbody_real)1e-3;
        ok = hermite_advance_pair(d, &bin, &tf, 1, &r);
        CHECK(ok && r == NBODY_ERR_STEP_TOO_SMALL, "%s: a step refused in an unwatched advance stops it where a watched one "
              "stops (%s)", nbody_engine_name(engine), nbody_result_string(r));
    }
    nbody_system_free(&s0); nbody_system_free(&bin);
}

/* all of the above; big: also a few active bodies among big_n sources (0: not run) */
static void check_hermite_engine(nbody_engine engine, size_t big_n) {
    check_hermite_engine_vs_block(engine, 300, 0.25);
    if (big_n) check_hermite_engine_vs_block(engine, big_n, 1.0 / 128);
    check_hermite_engine_energy(engine);
    if (DBL) check_hermite_engine_orders(engine);
    check_hermite_engine_restart(engine);
    check_hermite_engine_test_particles(engine);
    check_hermite_engine_refused_step(engine);
    check_hermite_engine_unwatched(engine);
}
#endif
