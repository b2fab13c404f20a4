/* mpi_engines.c - the distributed engine (desc.mpi_comm), run by tests/test_mpi.sh under
   mpirun -np 1, 2, 3 and 4 (uneven slices: 203 and 61 bodies, 3 bodies on 4 ranks). The forces on
   a body do not depend on the number of ranks: every result is compared BITWISE with one
   process - the plain engine where the kernel is the same (SIMPLE, OPENMP, TREE), the
   distributed engine on MPI_COMM_SELF for BLOCK (a slice takes the one-sided kernel, the
   plain engine the symmetric one, which rounds differently). Every method, fixed and
   adaptive, takes the same steps as one process; nbody_get_state, nbody_get_stats and
   checkpoints give one process's answers on every rank; a checkpoint written by P ranks
   restarts on 1 rank and on about P/2 ranks, and one written by a single process on P ranks;
   differing systems or a bad argument on one rank fail on every rank (and do not hang).
   Build: mpicc -std=c99 -O2 -fopenmp -I. tests/mpi_engines.c -o build/mpi_engines -lm
   Rank 0 prints the summed "RESULT passed failed skipped" line. */
#define NBODY_IMPLEMENTATION
#ifndef NBODY_WITH_MPI
#define NBODY_WITH_MPI
#endif
#include "nbody.h"
#include "tests/check.h"
#include "tests/mpi_check.h"
#include <math.h>

static int rank_, size_;
static MPI_Comm world_ = MPI_COMM_WORLD, self_ = MPI_COMM_SELF;

static int same_stats(nbody_stats a, nbody_stats b) {
    return a.t == b.t && a.dt == b.dt && a.steps == b.steps && a.rejected == b.rejected && a.force_evals == b.force_evals;
}

/* run desc on comm (NULL: plain) to t_end; state and stats out */

static const char *order_name(nbody_order o) { return o == NBODY_ORDER_BODY ? "body order" : "leaf order"; }

/* forces: nbody_accelerations on the world, against the one-process reference */
static void check_forces(const nbody_system *s) {
    static const nbody_engine engines[] = {NBODY_ENGINE_SIMPLE, NBODY_ENGINE_OPENMP, NBODY_ENGINE_BLOCK, NBODY_ENGINE_TREE,
                                           NBODY_ENGINE_TREE};
    size_t n = s->n, bytes = 3 * n * sizeof(nbody_real);
    nbody_real *a = (nbody_real *)malloc(bytes), *b = (nbody_real *)malloc(bytes);
    unsigned k;
    for (k = 0; k < sizeof engines / sizeof *engines; ++k) {
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_result ra, rb;
        d.engine = engines[k]; d.softening = (nbody_real)0.01; d.threads = 1 + (int)(k % 2);
        d.visit_order = k == 4 ? NBODY_ORDER_BODY : NBODY_ORDER_LEAF;
        d.mpi_comm = &world_;
        ra = nbody_accelerations(&d, s, a, a + n, a + 2 * n);
        d.mpi_comm = d.engine == NBODY_ENGINE_BLOCK ? (void *)&self_ : NULL;
        rb = nbody_accelerations(&d, s, b, b + n, b + 2 * n);
        CHECK(ra == NBODY_OK && rb == NBODY_OK && !memcmp(a, b, bytes), "%d ranks, %s (%s), n = %lu: forces %s / %s, %s",
              size_, nbody_engine_name(d.engine), order_name(d.visit_order), (unsigned long)n, nbody_result_string(ra),
              nbody_result_string(rb), memcmp(a, b, bytes) ? "not bitwise those of one process" : "equal");
        if (d.engine == NBODY_ENGINE_BLOCK) {   /* the one-sided kernel of the plain engine, directly */
            nbody__forces F;
            F.x = s->x; F.y = s->y; F.z = s->z; F.m = s->m; F.ax = b; F.ay = b + n; F.az = b + 2 * n;
            F.n = n; F.G = 1; F.eps2 = d.softening * d.softening;
            nbody_simd level = NBODY_SIMD_DEFAULT;
            nbody__simd_choose(&d, "block", &level);     /* the level the engine took (desc, NBODY_SIMD, CPU) */
            nbody__accel_block_kernel(&F, 1, 0, 0, level);
            CHECK(!memcmp(a, b, bytes), "%d ranks: BLOCK slices are not bitwise the one-sided kernel", size_);
        }
    }
    free(a); free(b);
}

/* every method, fixed step and adaptive: the state after 0.1 and the stats as one process */
static void check_methods(const nbody_system *s0, nbody_engine engine) {
    nbody_system a = {0}, b = {0};
    int m, k;
    nbody_system_alloc(&a, s0->n); nbody_system_alloc(&b, s0->n);
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m)
        for (k = 0; k < 3 && m != NBODY_WHFAST && m != NBODY_HERMITE; ++k) {   /* WHFast needs a dominant body 0: tests/test_whfast.c; hermite: tests/mpi_hermite.c */
            nbody_desc d = NBODY__ZERO_INIT;
            nbody_stats sa, sb;
            nbody_result ra, rb;
            memset(&sa, 0, sizeof sa); memset(&sb, 0, sizeof sb);
            d.engine = engine; d.method = (nbody_method)m; d.softening = (nbody_real)0.05; d.dt = (nbody_real)4e-3;
            if (k == 1 && !nbody_method_adaptive((nbody_method)m)) continue;   /* a tolerance is refused there */
            d.tolerance = k == 1 ? (nbody_real)1e-7 : 0;
            d.compensated = k == 2;
            rb = mpi_run(d, engine == NBODY_ENGINE_BLOCK ? (void *)&self_ : NULL, s0, (nbody_real)0.1, &b, &sb);
            if (rb == NBODY_ERR_UNAVAILABLE) break;
            ra = mpi_run(d, &world_, s0, (nbody_real)0.1, &a, &sa);
            CHECK(ra == NBODY_OK && rb == NBODY_OK && same_system(&a, &b) && same_stats(sa, sb) && same_on_all_ranks(&a),
                  "%d ranks, %s, %s%s%s: %s / %s, state %s, stats %s (steps %llu/%llu, rejected %llu/%llu)", size_,
                  nbody_engine_name(engine), nbody_method_name(d.method), k == 1 ? " adaptive" : "",
                  k == 2 ? " compensated" : "", nbody_result_string(ra), nbody_result_string(rb),
                  same_system(&a, &b) ? "equal" : "differs", same_stats(sa, sb) ? "equal" : "differ", sa.steps, sb.steps,
                  sa.rejected, sb.rejected);
        }
    nbody_system_free(&a); nbody_system_free(&b);
}

/* a checkpoint written by the world after 12 steps, restarted on one rank and on a split of
   the world, ends 12 steps later as the run straight through; one written by a plain run,
   restarted on the world, too */
static void check_checkpoints(const nbody_system *s0, const char *dir) {
    static const nbody_method methods[] = {NBODY_RKDP, NBODY_ADAMS, NBODY_BS};
    char path[512], plain[512];
    nbody_system ref = {0}, got = {0};
    unsigned k;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank_ % 2, rank_, &half);
    nbody_system_alloc(&ref, s0->n); nbody_system_alloc(&got, s0->n);
    snprintf(path, sizeof path, "%s/mpi_%d.ckp", dir, size_);
    snprintf(plain, sizeof plain, "%s/plain_%d_%d.ckp", dir, size_, rank_);
    for (k = 0; k < sizeof methods / sizeof *methods; ++k) {
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_sim *sim = NULL, *back = NULL;
        nbody_stats st_ref, st;
        nbody_result r;
        int q;
        d.engine = NBODY_ENGINE_TREE; d.method = methods[k]; d.softening = (nbody_real)0.05; d.dt = (nbody_real)4e-3;
        d.tolerance = nbody_method_adaptive(methods[k]) ? (nbody_real)1e-7 : 0;
        r = nbody_create(&sim, &d, s0);
        if (r == NBODY_OK) r = steps(sim, 24);
        if (r == NBODY_OK) r = nbody_get_state(sim, &ref);
        if (r == NBODY_OK) st_ref = nbody_get_stats(sim);
        nbody_destroy(sim); sim = NULL;
        d.mpi_comm = &world_;
        r = r == NBODY_OK ? nbody_create(&sim, &d, s0) : r;
        if (r == NBODY_OK) r = steps(sim, 12);
        if (r == NBODY_OK) r = nbody_checkpoint_save(sim, path);
        nbody_destroy(sim);
        MPI_Barrier(MPI_COMM_WORLD);
        for (q = 0; q < 2; ++q) {        /* restart on one rank, then on half the world */
            d.mpi_comm = q ? (void *)&half : (void *)&self_;
            back = NULL;
            if (r == NBODY_OK) r = nbody_checkpoint_load(&back, &d, path);
            if (r == NBODY_OK) r = steps(back, 12);
            if (r == NBODY_OK) r = nbody_get_state(back, &got);
            if (r == NBODY_OK) st = nbody_get_stats(back);
            CHECK(r == NBODY_OK && same_system(&got, &ref) && same_stats(st, st_ref),
                  "%s: a checkpoint of %d ranks restarted on %s: %s, %s", nbody_method_name(d.method), size_,
                  q ? "half of them" : "one", nbody_result_string(r), same_system(&got, &ref) ? "same end" : "another end");
            nbody_destroy(back);
        }
        /* written by one process (no MPI), restarted on the world */
        d.mpi_comm = NULL; sim = NULL; back = NULL;
        if (r == NBODY_OK) r = nbody_create(&sim, &d, s0);
        if (r == NBODY_OK) r = steps(sim, 12);
        if (r == NBODY_OK) r = nbody_checkpoint_save(sim, plain);
        nbody_destroy(sim);
        d.mpi_comm = &world_;
        if (r == NBODY_OK) r = nbody_checkpoint_load(&back, &d, plain);
        if (r == NBODY_OK) r = steps(back, 12);
        if (r == NBODY_OK) r = nbody_get_state(back, &got);
        CHECK(r == NBODY_OK && same_system(&got, &ref), "%s: a one-process checkpoint restarted on %d ranks: %s",
              nbody_method_name(d.method), size_, nbody_result_string(r));
        nbody_destroy(back);
        remove(plain);
    }
    {   /* a file missing on rank 0 only: NBODY_ERR_IO on every rank */
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_sim *back = NULL;
        nbody_result r;
        char missing[600];
        snprintf(missing, sizeof missing, "%s/none/%d.ckp", dir, rank_);
        d.engine = NBODY_ENGINE_SIMPLE; d.mpi_comm = &world_;
        r = nbody_checkpoint_load(&back, &d, rank_ == 0 ? missing : path);
        CHECK(r == NBODY_ERR_IO && back == NULL, "a checkpoint missing on rank 0 only: %s", nbody_result_string(r));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) remove(path);
    MPI_Comm_free(&half);
    nbody_system_free(&ref); nbody_system_free(&got);
}

#ifdef NBODY_WITH_CUDA
/* one GPU a rank (build/mpi_cuda, on GPU machines): the CUDA engines against one process's
   single GPU, with and without test particles (the last 40% of the bodies): the tree bitwise,
   the dense engine to rounding (its source split follows the slice), and every method's state
   after 0.1 */
static void check_cuda(const nbody_system *s) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    size_t n = s->n, bytes = 3 * n * sizeof(nbody_real), i;
    nbody_real *a = (nbody_real *)malloc(bytes), *b = (nbody_real *)malloc(bytes);
    int tree, m;
    for (tree = 0; tree < 4; ++tree) {
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_result ra, rb;
        double worst = 0;
        d.engine = tree % 2 ? NBODY_ENGINE_CUDA_TREE : NBODY_ENGINE_CUDA; d.softening = (nbody_real)0.01;
        d.n_active = tree >= 2 ? n - 2 * n / 5 : 0;
        d.mpi_comm = &world_;
        ra = nbody_accelerations(&d, s, a, a + n, a + 2 * n);
        d.mpi_comm = NULL;
        rb = nbody_accelerations(&d, s, b, b + n, b + 2 * n);
        worst = check_body_rel_diff(a, b, n);
        CHECK(ra == NBODY_OK && rb == NBODY_OK && (tree % 2 ? !memcmp(a, b, bytes) : worst <= (dbl ? 1e-12 : 1e-5)),
              "%d ranks, %s, n_active %lu: %s / %s, largest relative difference %.3g", size_, nbody_engine_name(d.engine),
              (unsigned long)d.n_active, nbody_result_string(ra), nbody_result_string(rb), worst);
    }
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m) {
        nbody_system x = {0}, y = {0};
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_result ra, rb;
        double worst = 0;
        nbody_system_alloc(&x, n); nbody_system_alloc(&y, n);
        if (m == NBODY_RADAU || m == NBODY_WHFAST || m == NBODY_HERMITE) { nbody_system_free(&x); nbody_system_free(&y); continue; }   /* RADAU: the tree's force discontinuities
                                                                  stop it at machine precision, on one rank as on two;
                                                                  WHFast needs a dominant body 0 */
        d.engine = NBODY_ENGINE_CUDA_TREE; d.method = (nbody_method)m; d.softening = (nbody_real)0.05;
        d.dt = (nbody_real)4e-3; d.tolerance = m % 2 && nbody_method_adaptive((nbody_method)m) ? (nbody_real)(dbl ? 1e-8 : 1e-4) : 0;
        rb = mpi_run(d, NULL, s, (nbody_real)0.1, &y, NULL);
        if (rb == NBODY_ERR_UNAVAILABLE) { nbody_system_free(&x); nbody_system_free(&y); break; }
        ra = mpi_run(d, &world_, s, (nbody_real)0.1, &x, NULL);
        for (i = 0; i < n; ++i) {
            double e = fabs((double)(x.x[i] - y.x[i])) + fabs((double)(x.vx[i] - y.vx[i]));
            if (!(e <= worst)) worst = e;
        }
        CHECK(ra == NBODY_OK && rb == NBODY_OK && worst == 0 && same_on_all_ranks(&x),
              "%d ranks, cuda-tree, %s: %s / %s, states differ by %.3g", size_, nbody_method_name(d.method),
              nbody_result_string(ra), nbody_result_string(rb), worst);
        nbody_system_free(&x); nbody_system_free(&y);
    }
    free(a); free(b);
}
#endif

/* systems that differ between ranks, a bad argument on one rank: every rank fails alike */
static void check_refusals(const nbody_system *s0) {
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r;
    nbody_system_alloc(&s, s0->n);
    nbody_system_copy(&s, s0);
    if (rank_ == size_ - 1 && size_ > 1) s.vx[s.n - 1] += (nbody_real)1e-15;
    d.engine = NBODY_ENGINE_SIMPLE; d.mpi_comm = &world_;
    r = nbody_create(&sim, &d, &s);
    CHECK(size_ == 1 ? r == NBODY_OK : r == NBODY_ERR_INVALID_ARGUMENT, "%d ranks, one system differing in one velocity: %s",
          size_, nbody_result_string(r));
    nbody_destroy(sim); sim = NULL;
    nbody_system_copy(&s, s0);
    d.dt = rank_ == 0 ? -1 : 0;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && sim == NULL, "a negative dt on rank 0: %s on rank %d", nbody_result_string(r), rank_);
    d.dt = 0;
    r = nbody_create(&sim, &d, &s);
    if (r == NBODY_OK) {                   /* set_state: the same check */
        if (rank_ == 0 && size_ > 1) s.x[0] += 1;
        r = nbody_set_state(sim, &s);
        CHECK(size_ == 1 ? r == NBODY_OK : r == NBODY_ERR_INVALID_ARGUMENT, "set_state with a differing system: %s",
              nbody_result_string(r));
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
}

/* the TREE walk's boundaries follow the measured walk times (nbody__dist_rebalance): the rule
   itself, then a run whose boundaries are pushed to the extremes between steps keeps the
   bits of one process (a body's walk is its own, whichever rank walks it) */
static void check_rebalance(const nbody_system *s0) {
    size_t w2[3] = {0, 50, 100}, w3[4] = {0, 0, 100, 100}, w4[3] = {0, 50, 100};
    double t2[2] = {3, 1}, t3[3] = {0, 2, 0}, bad[2] = {1, 0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_system ref = {0}, got = {0};
    nbody_result r;
    int k, moved = 0, valid = 1;
    nbody__dist_rebalance(w2, t2, 2, 0);
    CHECK(w2[0] == 0 && w2[1] == 33 && w2[2] == 100, "rebalance: times 3, 1 over 50 + 50 -> boundary %lu (33)", (unsigned long)w2[1]);
    nbody__dist_rebalance(w3, t3, 3, 0);
    CHECK(w3[0] == 0 && w3[1] == 33 && w3[2] == 67 && w3[3] == 100, "rebalance: empty ranges -> %lu %lu (33 67)",
          (unsigned long)w3[1], (unsigned long)w3[2]);
    nbody__dist_rebalance(w4, bad, 2, 0);
    CHECK(w4[1] == 50, "rebalance: a zero time for a non-empty range leaves the boundaries (%lu)", (unsigned long)w4[1]);
    t2[0] = 1; t2[1] = 1; w4[1] = 50;
    nbody__dist_rebalance(w4, t2, 2, 0);
    CHECK(w4[1] == 50, "rebalance: equal times keep equal halves (%lu)", (unsigned long)w4[1]);
    nbody_system_alloc(&ref, s0->n); nbody_system_alloc(&got, s0->n);
    d.engine = NBODY_ENGINE_TREE; d.method = NBODY_RK4; d.softening = (nbody_real)0.05; d.dt = (nbody_real)4e-3;
    r = nbody_create(&sim, &d, s0);
    if (r == NBODY_OK) r = steps(sim, 6);
    if (r == NBODY_OK) r = nbody_get_state(sim, &ref);
    nbody_destroy(sim); sim = NULL;
    d.mpi_comm = &world_;
    r = r == NBODY_OK ? nbody_create(&sim, &d, s0) : r;
    for (k = 0; k < 6 && r == NBODY_OK; ++k) {
        nbody__dist *dd = nbody__dist_of(&sim->eng);
        if (dd->wfirst) {                  /* size > 1: every walk but the last on one rank, in turn */
            int q;
            for (q = 0; q <= size_; ++q) dd->wfirst[q] = q <= k % size_ ? 0 : s0->n;
        }
        r = steps(sim, 1);
        if (dd->wfirst) {
            int q;
            for (q = 0; q < size_; ++q) valid &= dd->wfirst[q] <= dd->wfirst[q + 1];
            valid &= dd->wfirst[0] == 0 && dd->wfirst[size_] == s0->n;
            moved |= dd->wfirst[1] != 0 && dd->wfirst[1] != s0->n;
        }
    }
    if (r == NBODY_OK) r = nbody_get_state(sim, &got);
    nbody_destroy(sim);
    CHECK(r == NBODY_OK && same_system(&got, &ref) && valid, "%d ranks, TREE with its walk boundaries forced to extremes: %s, %s%s",
          size_, nbody_result_string(r), same_system(&got, &ref) ? "bitwise one process" : "not one process's state",
          valid ? "" : ", boundaries out of order");
    if (size_ > 1)
        CHECK(moved, "%d ranks: the walk boundaries moved back from the extremes by the measured times", size_);
    nbody_system_free(&ref); nbody_system_free(&got);
}

int main(int argc, char **argv) {
    nbody_system s = {0}, small = {0}, three = {0};
    const char *dir = argc > 1 ? argv[1] : ".";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    nbody_ic_plummer(&s, 203, 7);
    nbody_ic_plummer(&small, 61, 8);
    nbody_ic_figure_eight(&three);
    check_forces(&s);
    check_forces(&three);
    check_methods(&small, NBODY_ENGINE_SIMPLE);
    check_methods(&three, NBODY_ENGINE_BLOCK);
    check_checkpoints(&s, dir);
    check_refusals(&s);
    check_rebalance(&small);
#ifdef NBODY_WITH_CUDA
    check_cuda(&s);
#endif
    nbody_system_free(&s); nbody_system_free(&small); nbody_system_free(&three);
    return mpi_check_finish(rank_);
}
