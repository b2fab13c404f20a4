/* Allocation failure: every allocation the library makes, through desc.allocator (simulation
   memory) and through NBODY_MALLOC (nbody_system_alloc, nbody_load, nbody_measure), is made to
   fail in turn, the k-th for every k, through create / advance / get_state / measure /
   accelerations / save / load / checkpoint save / checkpoint load / destroy. Every call must
   return NBODY_OK or NBODY_ERR_OUT_OF_MEMORY, a failure injected must be reported, nothing may
   leak (allocations counted here; LeakSanitizer under make test-asan), and a simulation that
   existed before keeps its state bit for bit. */
#include <stdlib.h>
#include <stddef.h>
static long fail_at, calls, live;     /* fail the fail_at-th call (1-based), 0 = never */
static void *hook_malloc(size_t n) {
    void *p;
    if (++calls == fail_at) return NULL;
    p = malloc(n);
    if (p) live++;
    return p;
}
static void hook_free(void *p) { if (p) { live--; free(p); } }
#define NBODY_MALLOC(n) hook_malloc(n)
#define NBODY_REALLOC(p, n) realloc(p, n)
#define NBODY_FREE(p) hook_free(p)
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#define REL_NAME "alloc_fail"
#include "rel_util.h"

static int user_tag;
static void *desc_alloc(size_t n, void *user) { return user == &user_tag ? hook_malloc(n) : NULL; }
static void desc_free(void *p, void *user) { if (user == &user_tag) hook_free(p); }

/* OK passes, OOM ends the scenario (returns 1), anything else is a failure (returns 1) */
#define STEP(call) do { nbody_result r_ = (call); \
        if (r_ == NBODY_ERR_OUT_OF_MEMORY) { *oom = 1; goto done; } \
        CHECK(r_ == NBODY_OK, "k=%ld %s: %s", fail_at, #call, nbody_result_string(r_)); \
        if (r_ != NBODY_OK) goto done; } while (0)

/* one full cycle; *oom = 1 when some call reported NBODY_ERR_OUT_OF_MEMORY */
static void scenario(const nbody_desc *d, nbody_sim *keeper, int *oom) {
    nbody_system s, g, l;
    nbody_sim *sim = NULL, *back = NULL, *sentinel = (nbody_sim *)&s, *kback = sentinel;
    nbody_invariants inv;
    nbody_real *acc = NULL;
    const char *snap = rel_path("snap"), *ckp = rel_path("ckp"), *kckp = rel_path("keeper");
    memset(&s, 0, sizeof s); memset(&g, 0, sizeof g); memset(&l, 0, sizeof l);
    *oom = 0;
    STEP(nbody_ic_plummer(&s, 8, 1));
    STEP(nbody_create(&sim, d, &s));
    STEP(nbody_advance(sim, (nbody_real)0.05));
    STEP(nbody_system_alloc(&g, s.n));
    STEP(nbody_get_state(sim, &g));
    STEP(nbody_measure(&g, 1, d->softening, &inv));
    acc = (nbody_real *)malloc(3 * s.n * sizeof *acc);
    STEP(nbody_accelerations(d, &g, acc, acc + s.n, acc + 2 * s.n));
    STEP(nbody_save(snap, &g));
    STEP(nbody_load(snap, &l));
    STEP(nbody_checkpoint_save(sim, ckp));
    back = sentinel;
    {
        nbody_result r = nbody_checkpoint_load(&back, d, ckp);
        if (r != NBODY_OK) CHECK(back == sentinel, "k=%ld: failed checkpoint load wrote *out", fail_at);
        if (r != NBODY_OK) back = NULL;
        STEP(r);
    }
    STEP(nbody_advance(back, (nbody_real)0.1));
    /* the simulation that existed before: a failed save or load must not touch it */
    STEP(nbody_checkpoint_save(keeper, kckp));
    {
        nbody_desc kd = *d;
        nbody_result r = nbody_checkpoint_load(&kback, &kd, kckp);
        if (r != NBODY_OK) CHECK(kback == sentinel, "k=%ld: failed load wrote *out", fail_at);
        if (r == NBODY_OK) { nbody_destroy(kback); kback = sentinel; }
        STEP(r);
    }
done:
    free(acc);
    if (back != sentinel) nbody_destroy(back);
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&g); nbody_system_free(&l);
}

static void every_k(const nbody_desc *d, const char *label) {
    nbody_system before, after;
    nbody_sim *keeper = NULL;
    nbody_stats st0, st1;
    long k, bad_leak = 0, bad_silent = 0, bad_keeper = 0;
    int oom;
    memset(&before, 0, sizeof before); memset(&after, 0, sizeof after);
    fail_at = 0;
    CHECK(nbody_ic_figure_eight(&before) == NBODY_OK && nbody_create(&keeper, d, &before) == NBODY_OK &&
          nbody_advance(keeper, (nbody_real)0.02) == NBODY_OK && nbody_get_state(keeper, &before) == NBODY_OK &&
          nbody_system_alloc(&after, before.n) == NBODY_OK, "%s: keeper", label);
    if (!keeper || !after.x) {            /* a method not built yet: already a failure */
        nbody_destroy(keeper); nbody_system_free(&before); nbody_system_free(&after);
        return;
    }
    st0 = nbody_get_stats(keeper);
    for (k = 1;; ++k) {
        long live0 = live;
        calls = 0; fail_at = k;
        scenario(d, keeper, &oom);
        fail_at = 0;
        if (live != live0) { bad_leak++; printf("k=%ld: %ld blocks leaked\n", k, live - live0); }
        if (calls >= k && !oom) { bad_silent++; printf("k=%ld: allocation failed but nothing said so\n", k); }
        if (nbody_get_state(keeper, &after) != NBODY_OK || !rel_same(&before, &after)) bad_keeper++;
        st1 = nbody_get_stats(keeper);
        if (memcmp(&st0, &st1, sizeof st0) != 0) bad_keeper++;
        if (calls < k) break;              /* the whole cycle ran without reaching the k-th call */
    }
    printf("%s: %ld allocation points, each failed once\n", label, k - 1);
    CHECK(k > 20, "%s: only %ld allocations in the cycle", label, k - 1);
    CHECK(bad_leak == 0, "%s: %ld cases leaked", label, bad_leak);
    CHECK(bad_silent == 0, "%s: %ld failed allocations not reported", label, bad_silent);
    CHECK(bad_keeper == 0, "%s: the existing simulation changed in %ld cases", label, bad_keeper);
    nbody_destroy(keeper);
    nbody_system_free(&before); nbody_system_free(&after);
    CHECK(live == 0, "%s: %ld blocks still live at the end", label, live);
}

int main(void) {
    nbody_desc d;
    (void)check_skip;
    memset(&d, 0, sizeof d);
    every_k(&d, "defaults (leapfrog, block), NBODY_MALLOC only");
    d.allocator.alloc = desc_alloc; d.allocator.free = desc_free; d.allocator.user_data = &user_tag;
    every_k(&d, "defaults, desc.allocator");
    d.method = NBODY_RK4; d.engine = NBODY_ENGINE_OPENMP; d.compensated = 1; d.softening = (nbody_real)0.01;
    every_k(&d, "rk4 compensated openmp, desc.allocator");
    d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-8; d.compensated = 0;
    every_k(&d, "rkdp adaptive, desc.allocator");
    d.method = NBODY_ADAMS; d.order = 5; d.tolerance = 0;
    every_k(&d, "adams 5, desc.allocator");
    return check_finish();
}
