/* Soak: many leapfrog steps of the figure-eight three-body orbit (Chenciner & Montgomery
   2000). A symplectic method keeps the energy error bounded, O(dt^2) with no secular drift,
   and the library allocates nothing after nbody_create: counted through desc.allocator
   (simulation memory) and NBODY_MALLOC (nbody_measure's scratch, which must be returned).
   make test runs 10^5 steps (t = 100, about 16 periods); make soak runs 10^6 (argv[1]). */
#include <stdlib.h>
#include <stddef.h>
static long hook_live, desc_calls;
static void *hook_malloc(size_t n) { void *p = malloc(n); if (p) hook_live++; return p; }
static void hook_free(void *p) { if (p) { hook_live--; free(p); } }
#define NBODY_MALLOC(n) hook_malloc(n)
#define NBODY_REALLOC(p, n) realloc(p, n)
#define NBODY_FREE(p) hook_free(p)
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <math.h>

static void *desc_alloc(size_t n, void *u) { (void)u; desc_calls++; return malloc(n); }
static void desc_free(void *p, void *u) { (void)u; free(p); }

int main(int argc, char **argv) {
    long steps = argc > 1 ? atol(argv[1]) : 100000, i, calls_after_create, live0;
    const long sample = 1000;
    nbody_system s;
    nbody_sim *sim = NULL;
    nbody_desc d;
    nbody_invariants e0, e;
    double worst = 0, worst_first = 0, worst_last = 0;
    int ok = 1;
    (void)check_skip;
    memset(&s, 0, sizeof s); memset(&d, 0, sizeof d);
    d.method = NBODY_LEAPFROG; d.dt = (nbody_real)1e-3;
    d.allocator.alloc = desc_alloc; d.allocator.free = desc_free;
    nbody_ic_figure_eight(&s);
    nbody_measure(&s, 1, 0, &e0);
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    if (!sim) return check_finish();
    calls_after_create = desc_calls;
    live0 = hook_live;
    for (i = 1; i <= steps && ok; ++i) {
        ok = nbody_step(sim) == NBODY_OK;
        if (ok && i % sample == 0) {
            double err;
            ok = nbody_get_state(sim, &s) == NBODY_OK && nbody_measure(&s, 1, 0, &e) == NBODY_OK;
            err = fabs((double)((e.energy - e0.energy) / e0.energy));
            if (err > worst) worst = err;
            if (i <= steps / 10 && err > worst_first) worst_first = err;
            if (i > steps - steps / 10 && err > worst_last) worst_last = err;
        }
    }
    CHECK(ok, "step or measure failed at step %ld", i - 1);
    printf("%ld leapfrog steps, dt = 1e-3: max |dE/E| = %.3g (first tenth %.3g, last tenth %.3g); "
           "allocations after create: %ld, NBODY_MALLOC blocks live: %ld\n",
           steps, worst, worst_first, worst_last, desc_calls - calls_after_create, hook_live - live0);
    /* bounded: the leapfrog error for this orbit at dt = 1e-3 oscillates up to 5.9e-7 (its
       O(dt^2) shadow-energy offset, measured) and must not grow with time */
    CHECK(worst < 2e-6, "energy error %.3g", worst);
    CHECK(worst_last <= 2 * worst_first, "energy drifts: %.3g in the first tenth, %.3g in the last", worst_first, worst_last);
    CHECK(desc_calls == calls_after_create, "%ld allocations after create", desc_calls - calls_after_create);
    CHECK(hook_live == live0, "%ld NBODY_MALLOC blocks not returned", hook_live - live0);
    CHECK(nbody_get_stats(sim).steps == (unsigned long long)steps, "step count");
    nbody_destroy(sim);
    nbody_system_free(&s);
    CHECK(hook_live == 0, "blocks live at the end");
    return check_finish();
}
