/* cuda_multi.c - several GPUs in one process (desc.devices > 1, NCCL), on a GPU machine with
   at least NBODY_TEST_DEVICES GPUs (default 2): make WITH_CUDA=1 WITH_NCCL=1 build/cuda_multi.
   Against one GPU: the tree's forces bitwise, monopoles and quadrupoles (each GPU walks a range
   of the leaf order, or of the group walk's groups, as the one GPU walks it, whatever the
   boundaries the measured times give; the build divided over the GPUs or whole on each), the dense engine's to
   rounding (its source split follows the slice), with and without test particles;
   every method, fixed step and adaptive (25 steps each), on the tree to the same bits; nbody_get_state,
   stats; a checkpoint written on several GPUs restarts on one and continues to the same bits.
   The dense engine's split symmetric kernel (shares of its tournament on each GPU, partial
   sums reduce-scattered): against SIMPLE and one GPU, run to run, and the tuned choice of
   design. NBODY_TEST_DEVICES=1 runs the symmetric kernel checks on one GPU. More GPUs than
   present are refused. NBODY_HERMITE on the dense
   engine (tests/hermite_engine.h: against one process's BLOCK, a few active bodies among 16384
   sources, energy, orders, restarts, test particles; NBODY_TEST_SMALL: one short run against
   BLOCK); NBODY_TEST_ONLY=hermite runs these alone, NBODY_TEST_ONLY=tree the tree's checks alone. Skipped where fewer GPUs are present (failed under NBODY_REQUIRE_CUDA=1).
   Each stage prints a line with the seconds since the start, line-buffered, so that a run cut
   short by a time limit shows how far it came. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "tests/check.h"
#include "tests/hermite_engine.h"
#include <math.h>
#include <stdarg.h>
#include <time.h>
#include <cuda_runtime_api.h>

static int devices_ = 2;
static time_t start_;

/* a line before each stage, with the seconds since the start (stdout is line-buffered): a
   run cut short by a time limit shows where it was and how fast it went */
static void progress(const char *fmt, ...) {
    va_list ap;
    printf("  [%.0f s] ", difftime(time(NULL), start_));
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

void nbody__cuda_bench_config(nbody__engine *e, int variant, int block, int bodies_per_thread);
void nbody__cuda_bench_choice(nbody__engine *e, int *block, int *bodies_per_thread, int *symmetric);
int nbody__cuda_multi_walk(nbody__engine *e, size_t *w, int set, int balance);
int nbody__cuda_multi_divide(nbody__engine *e, int on);

/* the accelerations of the dense engine on `devices` GPUs with a forced design: variant 2 the
   split symmetric kernel of block x rb (one GPU: the symmetric kernel), 0 the all-gather and
   one-sided slices; *sym (if given): the design the engine ran (1 the split); acc2 (if given):
   a second evaluation on the same engine (its buffers, flags and exchange reused) */
static int forced(const nbody_system *s, int devices, double softening, int variant, int block, int rb, nbody_real *acc, int *sym,
                  nbody_real *acc2) {
    nbody_desc d = NBODY__ZERO_INIT;
    nbody__engine e;
    nbody__buf y = NULL, f = NULL;
    const nbody_real *src[6];
    int i, ok, b = 0, r = 0, sy = 0;
    d.engine = NBODY_ENGINE_CUDA; d.softening = (nbody_real)softening; d.devices = devices;
    d = nbody__desc_defaults(&d);
    memset(&e, 0, sizeof e);
    if (nbody__engine_start(&e, &d, s->n, s->m) != NBODY_OK) return 0;
    ok = e.ops->alloc(&e, 6 * s->n, &y) == NBODY_OK && e.ops->alloc(&e, 6 * s->n, &f) == NBODY_OK;
    src[0] = s->x; src[1] = s->y; src[2] = s->z; src[3] = s->vx; src[4] = s->vy; src[5] = s->vz;
    for (i = 0; i < 6 && ok; ++i) ok = e.ops->upload(&e, y, (size_t)i * s->n, src[i], s->n) == NBODY_OK;
    nbody__cuda_bench_config(&e, variant, block, rb);
    ok = ok && e.ops->derivative(&e, y, f) == NBODY_OK && e.ops->download(&e, acc, f, 3 * s->n, 3 * s->n) == NBODY_OK;
    if (acc2) ok = ok && e.ops->derivative(&e, y, f) == NBODY_OK && e.ops->download(&e, acc2, f, 3 * s->n, 3 * s->n) == NBODY_OK;
    nbody__cuda_bench_choice(&e, &b, &r, &sy);
    if (sym) *sym = sy;
    e.ops->release(&e, y); e.ops->release(&e, f);
    nbody__engine_stop(&e);
    return ok;
}

/* the largest difference of a body's acceleration, relative to its size (check.h) */
static double rel_diff(const nbody_real *a, const nbody_real *b, size_t len) { return check_body_rel_diff(a, b, len / 3); }

static void check_forces(size_t n, size_t n_active) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    nbody_system s = {0};
    nbody_real *a, *b;
    int tree;
    nbody_ic_plummer(&s, n, 5);
    a = (nbody_real *)malloc(3 * n * sizeof *a); b = (nbody_real *)malloc(3 * n * sizeof *b);
    for (tree = 0; tree < 3; ++tree) {   /* dense, tree, tree with quadrupoles */
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_result ra, rb;
        double e;
        d.engine = tree ? NBODY_ENGINE_CUDA_TREE : NBODY_ENGINE_CUDA; d.softening = (nbody_real)0.01;
        d.quadrupole = tree == 2;
        d.n_active = n_active;   /* > 0: the bodies past it are test particles */
        d.block_size = 256;      /* a fixed kernel choice (the one-sided tiles): no tuning on either side */
        d.devices = devices_;
        ra = nbody_accelerations(&d, &s, a, a + n, a + 2 * n);
        d.devices = 0;
        rb = nbody_accelerations(&d, &s, b, b + n, b + 2 * n);
        e = rel_diff(a, b, 3 * n);
        CHECK(ra == NBODY_OK && rb == NBODY_OK && (tree ? !memcmp(a, b, 3 * n * sizeof *a) : e <= (dbl ? 1e-12 : 1e-5)),
              "%d GPUs, %s%s, n = %lu, n_active %lu: %s / %s, largest relative difference %.3g", devices_, nbody_engine_name(d.engine),
              d.quadrupole ? " with quadrupoles" : "", (unsigned long)n, (unsigned long)n_active, nbody_result_string(ra),
              nbody_result_string(rb), e);
    }
    free(a); free(b);
    nbody_system_free(&s);
}

/* The tree's walks by ranges of the leaf order (quadrupoles: of the groups, by the depth-first
   position where each starts): with the boundaries forced to every extreme (all leaves on one
   GPU, in turn), then left to the balance by measured walk times, every evaluation gives one
   GPU's forces bit for bit (a body's walk, or its group's, does not depend on which GPU walks
   it); the boundaries stay valid (rising from 0 to the active bodies) and move off the last
   extreme (the idle GPUs take work). With and without test particles, with the build divided
   over the GPUs (each builds its run of subtrees and those its walks open; not with test
   particles, which walk from anywhere) and whole on every GPU (divide 0). Invalid boundaries
   are refused. */
static void check_tree_ranges(size_t n, size_t n_active, int quad, int divide) {
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody__engine e;
    nbody__buf y = NULL, f = NULL;
    nbody_real *a = (nbody_real *)malloc(6 * n * sizeof *a), *b = a + 3 * n;
    const nbody_real *src[6];
    size_t w[17], nt = n_active ? n_active : n;
    int i, k, q, ok, same = 1, valid = 1, moved, D = 0;
    nbody_ic_plummer(&s, n, 17);
    d.engine = NBODY_ENGINE_CUDA_TREE; d.softening = (nbody_real)0.01; d.n_active = n_active; d.quadrupole = quad;
    d = nbody__desc_defaults(&d);
    ok = nbody_accelerations(&d, &s, b, b + n, b + 2 * n) == NBODY_OK;     /* one GPU, its tuned walk */
    d.devices = devices_;
    memset(&e, 0, sizeof e);
    ok = ok && nbody__engine_start(&e, &d, s.n, s.m) == NBODY_OK;
    ok = ok && e.ops->alloc(&e, 6 * n, &y) == NBODY_OK && e.ops->alloc(&e, 6 * n, &f) == NBODY_OK;
    src[0] = s.x; src[1] = s.y; src[2] = s.z; src[3] = s.vx; src[4] = s.vy; src[5] = s.vz;
    for (i = 0; i < 6 && ok; ++i) ok = e.ops->upload(&e, y, (size_t)i * n, src[i], n) == NBODY_OK;
    D = ok ? nbody__cuda_multi_walk(&e, w, 0, -1) : 0;
    ok = ok && D == devices_ && D <= 16 && nbody__cuda_multi_divide(&e, divide) == D;
    for (k = 0; k < 2 * D + 2 && ok; ++k) {
        if (k < D) {               /* every leaf on GPU k */
            for (q = 0; q <= D; ++q) w[q] = q <= k ? 0 : nt;
            ok = nbody__cuda_multi_walk(&e, w, 1, 1) == D;
        }
        ok = ok && e.ops->derivative(&e, y, f) == NBODY_OK && e.ops->download(&e, a, f, 3 * n, 3 * n) == NBODY_OK;
        same = same && ok && !memcmp(a, b, 3 * n * sizeof *a);
        ok = ok && nbody__cuda_multi_walk(&e, w, 0, -1) == D;
        for (q = 0; q < D && ok; ++q) valid = valid && w[q] <= w[q + 1];
        valid = valid && w[0] == 0 && w[D] == nt;
    }
    moved = ok && w[D - 1] > 0;    /* off the last extreme, where GPU D - 1 walked every leaf */
    CHECK(ok && same && valid && moved, "%d GPUs, cuda-tree%s by ranges, %s build, n = %lu, n_active %lu: ran %d, one GPU's bits %d, "
          "valid boundaries %d, moved %d (w[1] = %lu)", D, quad ? " with quadrupoles" : "", divide ? "divided where it can be" : "whole",
          (unsigned long)n, (unsigned long)n_active, ok, same, valid, moved,
          (unsigned long)(D > 1 ? w[1] : 0));
    if (ok) {
        w[1] = nt + 1;
        CHECK(nbody__cuda_multi_walk(&e, w, 1, -1) == -1, "boundaries past the bodies are refused");
    }
    if (e.ops) { e.ops->release(&e, y); e.ops->release(&e, f); }
    nbody__engine_stop(&e);
    free(a);
    nbody_system_free(&s);
}

/* the run of check_methods: 25 steps (fixed steps: to t = 0.05). Adaptive methods take as
   many accepted steps, rejections included, whatever length the tolerance gives them: in
   double (1e-8) the tree's force discontinuities cut their steps to about 1e-5 (Bulirsch-Stoer:
   some 10^5 evaluations to t = 0.05, measured on the CPU tree), minutes on several GPUs */
static nbody_result run_steps(nbody_sim **sim, const nbody_desc *d, const nbody_system *s0, nbody_system *out) {
    nbody_result r = nbody_create(sim, d, s0);
    int j;
    for (j = 0; j < 25 && r == NBODY_OK; ++j) r = nbody_step(*sim);
    return r == NBODY_OK ? nbody_get_state(*sim, out) : r;
}

static void check_methods(void) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    nbody_system s0 = {0}, a = {0}, b = {0};
    int m, k;
    nbody_ic_plummer(&s0, 1001, 3);
    nbody_system_alloc(&a, s0.n); nbody_system_alloc(&b, s0.n);
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m)
        for (k = 0; k < 2 && m != NBODY_RADAU && m != NBODY_WHFAST && m != NBODY_HERMITE; ++k) {
            /* RADAU at machine precision cannot step over the tree's force discontinuities
               (on one GPU as on two); WHFast needs a dominant body 0 */
            nbody_desc d = NBODY__ZERO_INIT;
            nbody_sim *sa = NULL, *sb = NULL;
            nbody_result ra, rb;
            nbody_stats ta, tb;
            d.engine = NBODY_ENGINE_CUDA_TREE; d.method = (nbody_method)m; d.softening = (nbody_real)0.05;
            if (k && !nbody_method_adaptive((nbody_method)m)) continue;   /* a tolerance is refused there */
            d.dt = (nbody_real)2e-3; d.tolerance = k ? (nbody_real)(dbl ? 1e-8 : 1e-4) : 0;
            progress("methods: %s%s", nbody_method_name(d.method), k ? " adaptive" : "");
            rb = run_steps(&sb, &d, &s0, &b);
            if (rb == NBODY_ERR_UNAVAILABLE) break;
            d.devices = devices_;
            ra = run_steps(&sa, &d, &s0, &a);
            ta = nbody_get_stats(sa); tb = nbody_get_stats(sb);
            CHECK(ra == NBODY_OK && rb == NBODY_OK && !memcmp(a.x, b.x, s0.n * sizeof *a.x) && !memcmp(a.vz, b.vz, s0.n * sizeof *a.x) &&
                      ta.steps == tb.steps && ta.rejected == tb.rejected,
                  "%d GPUs, cuda-tree, %s%s: %s / %s, steps %llu / %llu", devices_, nbody_method_name(d.method),
                  k ? " adaptive" : "", nbody_result_string(ra), nbody_result_string(rb), ta.steps, tb.steps);
            nbody_destroy(sa); nbody_destroy(sb);
        }
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

static void check_checkpoint(void) {
    nbody_system s0 = {0}, a = {0}, b = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL, *back = NULL;
    nbody_result r;
    int k;
    nbody_ic_plummer(&s0, 777, 9);
    nbody_system_alloc(&a, s0.n); nbody_system_alloc(&b, s0.n);
    d.engine = NBODY_ENGINE_CUDA_TREE; d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-6; d.softening = (nbody_real)0.05;
    d.devices = devices_;
    r = nbody_create(&sim, &d, &s0);
    for (k = 0; k < 10 && r == NBODY_OK; ++k) r = nbody_step(sim);
    if (r == NBODY_OK) r = nbody_checkpoint_save(sim, "cuda_multi.ckp");
    for (k = 0; k < 10 && r == NBODY_OK; ++k) r = nbody_step(sim);
    if (r == NBODY_OK) r = nbody_get_state(sim, &a);
    d.devices = 0;
    if (r == NBODY_OK) r = nbody_checkpoint_load(&back, &d, "cuda_multi.ckp");
    for (k = 0; k < 10 && r == NBODY_OK; ++k) r = nbody_step(back);
    if (r == NBODY_OK) r = nbody_get_state(back, &b);
    CHECK(r == NBODY_OK && !memcmp(a.x, b.x, s0.n * sizeof *a.x) && !memcmp(a.vy, b.vy, s0.n * sizeof *a.x),
          "a checkpoint of %d GPUs restarted on one: %s", devices_, nbody_result_string(r));
    nbody_destroy(sim); nbody_destroy(back);
    remove("cuda_multi.ckp");
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* The split symmetric kernel (each GPU a share of the tournament's rounds, partial sums for
   every body, reduce-scatter in GPU order) against SIMPLE: 1e-12 relative per body in double
   (1e-4 in float, the one-GPU kernel's bound); two runs give the same bits; odd and even tile
   counts, a last tile cut short, one tile (the second GPU gets no work), equal and unequal
   masses, softening 0 and 0.01 (two evaluations on one engine, then on two engines). */
static void check_split(void) {
    static const size_t sizes[] = {3, 100, 1001, 4099, 20011};
    static const int conf[][2] = {{32, 1}, {128, 4}, {64, 8}, {64, 2}, {96, 4}};   /* tiles: 1, 1, 2, 33, 53 */
    const int dbl = sizeof(nbody_real) == sizeof(double);
    int k, eps;
    for (k = 0; k < 5; ++k) {
        size_t n = sizes[k], n3 = 3 * n, i;
        nbody_system s = {0};
        nbody_real *ref = (nbody_real *)malloc(3 * n3 * sizeof(nbody_real)), *a1 = ref + n3, *a2 = a1 + n3;
        nbody_ic_plummer(&s, n, 31 + k);
        if (k % 2)
            for (i = 0; i < n; ++i) s.m[i] *= (nbody_real)(0.5 + (double)(i % 5) / 4);
        for (eps = 0; eps < 2; ++eps) {
            nbody_desc dr = NBODY__ZERO_INIT;
            double e;
            int ok, sym = 0;
            dr.engine = NBODY_ENGINE_SIMPLE; dr.softening = (nbody_real)(eps ? 0.01 : 0);
            CHECK(nbody_accelerations(&dr, &s, ref, ref + n, ref + 2 * n) == NBODY_OK, "split: reference");
            ok = forced(&s, devices_, dr.softening, 2, conf[k][0], conf[k][1], a1, &sym, eps ? NULL : a2);
            if (eps) ok = ok && forced(&s, devices_, dr.softening, 2, conf[k][0], conf[k][1], a2, NULL, NULL);
            e = ok ? rel_diff(a1, ref, n3) : -1;
            CHECK(ok && (devices_ < 2 || sym == 1) && e <= (dbl ? 1e-12 : 1e-4),
                  "%d GPUs, split symmetric n = %lu B %d R %d eps %d: ran %d, design %d, largest relative difference %.3g",
                  devices_, (unsigned long)n, conf[k][0], conf[k][1], eps, ok, sym, e);
            CHECK(ok && !memcmp(a1, a2, n3 * sizeof *a1), "%d GPUs, split symmetric n = %lu: two runs differ", devices_,
                  (unsigned long)n);
        }
        free(ref);
        nbody_system_free(&s);
    }
}

/* a larger case against one GPU's symmetric kernel of the same tiles (1e-12 relative in
   double, 1e-5 in float: the grouping of the rounds' sums differs), and the all-gather
   design's one-sided kernel against it (in float 1e-4, the two kernels' bound against SIMPLE) */
static void check_split_large(size_t n) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    nbody_system s = {0};
    nbody_real *a = (nbody_real *)malloc(9 * n * sizeof *a), *b = a + 3 * n, *c = b + 3 * n;
    int ok, sym = 0;
    double e1, e2;
    nbody_ic_plummer(&s, n, 5);
    ok = forced(&s, devices_, 0.01, 2, 128, 4, a, &sym, NULL) && forced(&s, 1, 0.01, 2, 128, 4, b, NULL, NULL) &&
         forced(&s, devices_, 0.01, 0, 256, 0, c, NULL, NULL);
    e1 = ok ? rel_diff(a, b, 3 * n) : -1;
    e2 = ok ? rel_diff(c, b, 3 * n) : -1;
    CHECK(ok && sym == 1 && e1 <= (dbl ? 1e-12 : 1e-5) && e2 <= (dbl ? 1e-12 : 1e-4),
          "%d GPUs, n = %lu: split against one GPU %.3g, all-gather against one GPU %.3g", devices_, (unsigned long)n, e1, e2);
    free(a);
    nbody_system_free(&s);
}

/* no block size given: the engine times both designs at its first evaluation and says which
   it took at INFO; the result agrees with SIMPLE whichever it is */
static char chosen_[512];
static void log_line(nbody_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == NBODY_LOG_INFO && strstr(msg, "GPUs:")) snprintf(chosen_, sizeof chosen_, "%s", msg);
}
static void check_auto(size_t n) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT, dr = NBODY__ZERO_INIT;
    nbody_real *a = (nbody_real *)malloc(6 * n * sizeof *a), *b = a + 3 * n;
    nbody_result ra, rb;
    double e;
    nbody_ic_plummer(&s, n, 23);
    d.engine = NBODY_ENGINE_CUDA; d.softening = (nbody_real)0.01; d.devices = devices_;
    d.log.func = log_line;
    dr.engine = NBODY_ENGINE_SIMPLE; dr.softening = d.softening;
    chosen_[0] = 0;
    ra = nbody_accelerations(&d, &s, a, a + n, a + 2 * n);
    rb = nbody_accelerations(&dr, &s, b, b + n, b + 2 * n);
    e = rel_diff(a, b, 3 * n);
    CHECK(ra == NBODY_OK && rb == NBODY_OK && e <= (dbl ? 1e-12 : 1e-4) && chosen_[0],
          "%d GPUs, tuned, n = %lu: %s, largest relative difference %.3g; logged: %s", devices_, (unsigned long)n,
          nbody_result_string(ra), e, chosen_[0] ? chosen_ : "(nothing)");
    if (chosen_[0]) printf("  %s\n", chosen_);
    free(a);
    nbody_system_free(&s);
}

/* more GPUs than present: refused at create, nothing left behind */
static void check_refused(int present) {
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r;
    nbody_ic_plummer(&s, 1000, 2);
    d.engine = NBODY_ENGINE_CUDA; d.devices = present + 1;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_UNAVAILABLE && sim == NULL, "devices = %d with %d GPUs: %s", present + 1, present, nbody_result_string(r));
    nbody_destroy(sim);
    nbody_system_free(&s);
}

int main(void) {
    int count = 0, tree_only = getenv("NBODY_TEST_ONLY") && !strcmp(getenv("NBODY_TEST_ONLY"), "tree");
    const char *env = getenv("NBODY_TEST_DEVICES");
    setvbuf(stdout, NULL, _IOLBF, 0);
    start_ = time(NULL);
    if (env) devices_ = atoi(env);
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < devices_ || devices_ < 1) {
        check_skip("NBODY_REQUIRE_CUDA", "fewer GPUs than NBODY_TEST_DEVICES (default 2)");
        return check_finish();
    }
    check_refused(count);
    if (devices_ > 1 && !tree_only) {   /* NBODY_HERMITE: the sources split over the GPUs */
        hermite_devices = devices_;
        progress("hermite");
        /* compute-sanitizer's small pass: one short run through every kernel of the step */
        if (getenv("NBODY_TEST_SMALL")) check_hermite_engine_vs_block(NBODY_ENGINE_CUDA, 100, 1.0 / 16);
        else check_hermite_engine(NBODY_ENGINE_CUDA, 16384);
        hermite_devices = 0;
        if (getenv("NBODY_TEST_ONLY") && !strcmp(getenv("NBODY_TEST_ONLY"), "hermite")) return check_finish();
    }
    if (devices_ == 1) {           /* one GPU: the symmetric kernel alone, run as the split runs it */
        check_split();
        return check_finish();
    }
    progress("forces, n = 4099");
    check_forces(4099, 0);
    check_forces(4099, 1500);
    progress("tree ranges, n = 3001");
    check_tree_ranges(3001, 0, 0, 1);
    check_tree_ranges(3001, 0, 1, 1);
    check_tree_ranges(3001, 0, 1, 0);
    check_tree_ranges(3001, 1000, 1, 1);
    if (getenv("NBODY_TEST_SMALL")) {     /* compute-sanitizer: the small cases */
        nbody_system s = {0};
        nbody_real *a = (nbody_real *)malloc(3 * 4099 * sizeof *a);
        nbody_ic_plummer(&s, 4099, 5);
        CHECK(forced(&s, devices_, 0.01, 2, 64, 2, a, NULL, NULL), "split symmetric, n = 4099");
        free(a);
        nbody_system_free(&s);
        return check_finish();
    }
    if (!tree_only) {
        progress("split symmetric kernel");
        check_split();
        check_split_large(100003);
        check_auto(20011);
    }
    progress("forces, n = 100003");
    check_forces(100003, 0);
    check_forces(100003, 40000);
    progress("tree ranges, n = 50001 to 262147");
    check_tree_ranges(100003, 0, 0, 1);
    check_tree_ranges(100003, 0, 0, 0);
    check_tree_ranges(50001, 20000, 0, 1);
    check_tree_ranges(100003, 0, 1, 1);
    check_tree_ranges(50001, 20000, 1, 1);
    check_tree_ranges(262147, 0, 1, 1);
    check_methods();
    progress("checkpoint");
    check_checkpoint();
    progress("done");
    return check_finish();
}
