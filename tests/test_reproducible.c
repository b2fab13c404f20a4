/* Reproducibility: the same inputs give bitwise the same results run after run, and the
   direct engines (SIMPLE, OPENMP, BLOCK) give bitwise the same results for any thread count
   (each body's force is summed over j in index order on one thread). OPENMP uses the same
   row sum as SIMPLE, so those two agree with each other too; BLOCK's vectorised sum has its
   own (fixed) order. The tree engine is checked when it is built. */
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "check.h"
#define REL_NAME "reproducible"
#include "rel_util.h"
#include <string.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

/* n > 256 so that both the OPENMP and BLOCK kernels really run in parallel */
#define N 300

static nbody_system s0;

static int run(nbody_engine e, int threads, nbody_method m, nbody_system *out) {
    nbody_desc d;
    nbody_sim *sim = NULL;
    int ok;
    memset(&d, 0, sizeof d);
    d.engine = e; d.threads = threads; d.method = m;
    d.softening = (nbody_real)0.02; d.dt = (nbody_real)0.005;
    ok = nbody_create(&sim, &d, &s0) == NBODY_OK && nbody_advance(sim, (nbody_real)0.05) == NBODY_OK &&
         rel_state(sim, N, out);
    nbody_destroy(sim);
    return ok;
}

static void engine_threads(nbody_engine e, nbody_method m, nbody_system *simple) {
    nbody_system ref, again, other;
    int t;
    memset(&ref, 0, sizeof ref); memset(&again, 0, sizeof again);
    if (!nbody_engine_available(e)) { check_skip(NULL, "tree engine not built yet"); return; }
    CHECK(run(e, 1, m, &ref), "%s: run", nbody_engine_name(e));
    CHECK(run(e, 1, m, &again) && rel_same(&ref, &again), "%s %s: two identical runs differ",
          nbody_engine_name(e), nbody_method_name(m));
    for (t = 2; t <= 4; ++t) {
        memset(&other, 0, sizeof other);
        CHECK(run(e, t, m, &other) && rel_same(&ref, &other), "%s %s: %d threads differ from 1",
              nbody_engine_name(e), nbody_method_name(m), t);
        nbody_system_free(&other);
    }
    if (e == NBODY_ENGINE_SIMPLE) nbody_system_copy(simple, &ref);
    if (e == NBODY_ENGINE_OPENMP) CHECK(rel_same(simple, &ref), "openmp differs from simple");
    nbody_system_free(&ref); nbody_system_free(&again);
}

/* diagnostics and accelerations: thread count does not matter either */
static void diagnostics(void) {
    nbody_system big;
    nbody_invariants a, b;
    memset(&big, 0, sizeof big);
    nbody_ic_plummer(&big, 700, 5);                      /* > 512: the parallel potential loop */
#if defined(_OPENMP) && !defined(NBODY_NO_OPENMP)   /* the library's own condition (nbody.h: NBODY__OPENMP) */
    omp_set_num_threads(1);
    nbody_measure(&big, 1, (nbody_real)0.01, &a);
    omp_set_num_threads(3);
    nbody_measure(&big, 1, (nbody_real)0.01, &b);
    CHECK(memcmp(&a.energy, &b.energy, sizeof a.energy) == 0 && memcmp(&a.potential, &b.potential, sizeof a.potential) == 0,
          "nbody_measure: energy differs between 1 and 3 threads");
#else
    (void)a; (void)b;
#endif
    nbody_system_free(&big);
}

int main(void) {
    nbody_system simple[2];                              /* SIMPLE's result per method */
    int e;
    (void)check_skip;
    memset(simple, 0, sizeof simple);
    nbody_ic_plummer(&s0, N, 11);
    nbody_system_alloc(&simple[0], N); nbody_system_alloc(&simple[1], N);
    for (e = NBODY_ENGINE_SIMPLE; e <= NBODY_ENGINE_TREE; ++e) {
        engine_threads((nbody_engine)e, NBODY_LEAPFROG, &simple[0]);
        engine_threads((nbody_engine)e, NBODY_RK4, &simple[1]);
    }
    diagnostics();
    nbody_system_free(&simple[0]); nbody_system_free(&simple[1]); nbody_system_free(&s0);
    return check_finish();
}
