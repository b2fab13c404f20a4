/* mpi_domains.c - the domain-decomposed tree (desc.decompose with NBODY_ENGINE_TREE under
   desc.mpi_comm), run by tests/test_mpi.sh under mpirun -np 1, 2, 3 and 4. Its forces are sums
   of walks of P trees (one a rank's domain, the others' locally essential trees), so
   they are not the bits of one process's tree but must keep its error bounds:
   - per-body force errors against a direct sum (SIMPLE): the median, the 99th percentile and
     the largest, beside one process's tree at the same theta (monopoles at 0.5, quadrupoles
     at 0.8), on a Plummer sphere and on two colliding galaxies, all bodies and with test
     particles; with an opening angle so small that no node is accepted, the direct sum to
     rounding (every body of every other domain reached its LET and every force went home);
   - whatever the rank count, the same bounds (the bounds do not depend on P);
   - energy conservation of galaxy collisions (leapfrog) as one process's tree;
   - every method runs and ends where one process's tree ends, to the force error; the state
     is the same on every rank; checkpoints of P ranks restart on 1 and on about P/2 ranks, and
     those of about P/2 on P; collisions merge bodies as one process does; a force callback,
     test particles, stop and escape distances, fewer bodies than ranks and Gauss-Radau run as
     one process's tree runs them, WHFast is refused; NaN positions give NaN forces on every
     rank; bad settings fail on every rank;
   - each rank holds its own bodies (its domain, a box cut by planes), they migrate as they move
     (a step moves a few), and what the library allocates on a rank is O(N/P) (a counting allocator).
   Build: make build/mpi_domains (mpicc). Rank 0 prints the summed "RESULT passed failed skipped". */
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

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the median, 99th percentile and largest of |a_i - r_i| / |r_i| (x[n], y[n], z[n] layouts) */
static void error_quantiles(const nbody_real *a, const nbody_real *r, size_t n, double *q) {
    double *e = (double *)malloc(n * sizeof *e);
    size_t i;
    for (i = 0; i < n; ++i) {
        double dx = (double)a[i] - r[i], dy = (double)a[n + i] - r[n + i], dz = (double)a[2 * n + i] - r[2 * n + i];
        double rr = (double)r[i] * r[i] + (double)r[n + i] * r[n + i] + (double)r[2 * n + i] * r[2 * n + i];
        e[i] = sqrt((dx * dx + dy * dy + dz * dz) / rr);
        if (e[i] != e[i]) e[i] = HUGE_VAL;
    }
    qsort(e, n, sizeof *e, cmp_double);
    q[0] = e[n / 2]; q[1] = e[(size_t)(0.99 * (double)n)]; q[2] = e[n - 1];
    free(e);
}

/* forces of the decomposed tree against a direct sum, beside one process's tree: each of the
   median, 99th percentile and largest error at most 1.5, 1.5 and 2.5 times the tree's (the
   trees differ: a domain's top nodes are not the whole tree's) */
static void check_force_errors(const nbody_system *s, const char *what, size_t n_active) {
    static const struct { double theta; int quad; } cases[] = {{0.5, 0}, {0.8, 1}, {1e-4, 0}};
    size_t n = s->n, bytes = 3 * n * sizeof(nbody_real);
    nbody_real *a = (nbody_real *)malloc(bytes), *t = (nbody_real *)malloc(bytes), *r = (nbody_real *)malloc(bytes);
    double exact = sizeof(nbody_real) == sizeof(float) ? 1e-4 : 1e-12;
    unsigned k;
    for (k = 0; k < sizeof cases / sizeof *cases; ++k) {
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_result ra, rt, rr;
        double qa[3], qt[3];
        d.softening = (nbody_real)0.01; d.n_active = n_active; d.threads = 1;
        d.engine = NBODY_ENGINE_SIMPLE;
        rr = nbody_accelerations(&d, s, r, r + n, r + 2 * n);
        d.engine = NBODY_ENGINE_TREE; d.theta = (nbody_real)cases[k].theta; d.quadrupole = cases[k].quad;
        rt = nbody_accelerations(&d, s, t, t + n, t + 2 * n);
        d.mpi_comm = &world_; d.decompose = 1;
        ra = nbody_accelerations(&d, s, a, a + n, a + 2 * n);
        CHECK(ra == NBODY_OK && rt == NBODY_OK && rr == NBODY_OK, "%d ranks, %s: %s / %s / %s", size_, what,
              nbody_result_string(ra), nbody_result_string(rt), nbody_result_string(rr));
        if (ra != NBODY_OK || rt != NBODY_OK || rr != NBODY_OK) continue;
        error_quantiles(a, r, n, qa); error_quantiles(t, r, n, qt);
        if (k == 2) {
            CHECK(qa[2] <= exact, "%d ranks, %s, theta %g (no node accepted): largest error %.3g against the direct sum (at "
                  "most %g)", size_, what, cases[k].theta, qa[2], exact);
            continue;
        }
        CHECK(qa[0] <= 1.5 * qt[0] && qa[1] <= 1.5 * qt[1] && qa[2] <= 2.5 * qt[2] && qa[1] > 0,
              "%d ranks, %s, theta %g%s: errors median / 99%% / largest %.3g %.3g %.3g, one process's tree %.3g %.3g %.3g",
              size_, what, cases[k].theta, cases[k].quad ? " quadrupole" : "", qa[0], qa[1], qa[2], qt[0], qt[1], qt[2]);
        if (rank_ == 0)
            printf("%d ranks, %s, theta %g%s: errors median / 99%% / largest %.3g %.3g %.3g (one tree %.3g %.3g %.3g)\n", size_,
                   what, cases[k].theta, cases[k].quad ? " quadrupole" : "", qa[0], qa[1], qa[2], qt[0], qt[1], qt[2]);
    }
    free(a); free(t); free(r);
}

/* run desc on comm (NULL: one process) to t_end; state and stats out */
/* mpi_run with the domain-decomposed tree on several ranks, one process's tree on one */
static nbody_result run(nbody_desc d, void *comm, const nbody_system *s0, nbody_real t_end, nbody_system *out, nbody_stats *st) {
    d.decompose = comm != NULL;
    return mpi_run(d, comm, s0, t_end, out, st);
}

/* the largest distance between the same body's positions in a and b */
static double max_offset(const nbody_system *a, const nbody_system *b) {
    double worst = 0;
    size_t i;
    for (i = 0; i < a->n && i < b->n; ++i) {
        double dx = (double)a->x[i] - b->x[i], dy = (double)a->y[i] - b->y[i], dz = (double)a->z[i] - b->z[i];
        double e = sqrt(dx * dx + dy * dy + dz * dz);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

/* every method (fixed step; adaptive with a tolerance; compensated) on the decomposed tree ends
   within 1e-4 of one process's tree after t = 0.1 (the bodies move about 0.1: force errors of
   1e-3 move them about 1e-5), the same state on every rank */
static void check_methods(const nbody_system *s0) {
    nbody_system a = {0}, b = {0};
    int m, k;
    nbody_system_alloc(&a, s0->n); nbody_system_alloc(&b, s0->n);
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m)
        for (k = 0; k < 3 && m != NBODY_WHFAST && m != NBODY_HERMITE && m != NBODY_RADAU; ++k) {
            /* WHFast needs a dominant body; Hermite runs in one process; Gauss-Radau's corrector
               iterates to round-off, which a tree's forces (their nodes open and close as bodies
               move) stop, in one process too: tests/test_radau.c runs it on direct sums */
            nbody_desc d = NBODY__ZERO_INIT;
            nbody_result ra, rb;
            double off;
            d.engine = NBODY_ENGINE_TREE; d.method = (nbody_method)m; d.softening = (nbody_real)0.05; d.dt = (nbody_real)4e-3;
            if (k == 1 && !nbody_method_adaptive((nbody_method)m)) continue;
            d.tolerance = k == 1 ? (nbody_real)1e-7 : 0;
            d.compensated = k == 2;
            rb = run(d, NULL, s0, (nbody_real)0.1, &b, NULL);
            if (rb != NBODY_OK) continue;   /* radau's step control stops on one process's tree too (its forces jump) */
            ra = run(d, &world_, s0, (nbody_real)0.1, &a, NULL);
            off = max_offset(&a, &b);
            CHECK(ra == NBODY_OK && rb == NBODY_OK && off <= 1e-4 && a.t == b.t && same_on_all_ranks(&a),
                  "%d ranks, %s%s%s: %s / %s, t %g / %g, largest offset from one process's tree %.3g", size_,
                  nbody_method_name(d.method), k == 1 ? " adaptive" : "", k == 2 ? " compensated" : "", nbody_result_string(ra),
                  nbody_result_string(rb), (double)a.t, (double)b.t, off);
        }
    nbody_system_free(&a); nbody_system_free(&b);
}

/* the energy error of a leapfrog galaxy collision run (dt 2^-8, quadrupoles at theta 0.5): the
   root mean square of dE/E over 16 times to t = 0.5. Collective when comm is set. */
static double energy_rms(nbody_desc d, void *comm, const nbody_system *s0) {
    nbody_system a = {0};
    nbody_sim *sim = NULL;
    nbody_invariants i0, ia;
    nbody_result r;
    double sum = 0;
    int k;
    d.mpi_comm = comm; d.decompose = comm != NULL;
    nbody_system_alloc(&a, s0->n);
    nbody_measure(s0, 1, d.softening, &i0);
    r = nbody_create(&sim, &d, s0);
    for (k = 1; k <= 16 && r == NBODY_OK; ++k) {
        double e;
        r = nbody_advance(sim, (nbody_real)k / 32);
        if (r == NBODY_OK) r = nbody_get_state(sim, &a);
        nbody_measure(&a, 1, d.softening, &ia);
        e = (double)(ia.energy - i0.energy) / (double)i0.energy;
        sum += e * e;
    }
    nbody_destroy(sim);
    nbody_system_free(&a);
    return r == NBODY_OK ? sqrt(sum / 16) : HUGE_VAL;
}

/* energy conservation of galaxy collisions (1000 bodies, three initial conditions) on the world
   and in one process: the decomposed tree's energy error, summed over the three runs, at most
   1.5 times one tree's. The tree's force errors make nearly all of it (a direct sum's is 3e-6,
   the trees' 1e-4 to 3e-4), and one run's figure depends on the tree realisation: P domain
   trees are P other trees, the splitters follow measured times, so one run on 4 ranks gave
   0.4 to 1.6 times one tree's at t = 0.5. Summed over three collisions, the root mean square
   over the run: 0.4 (2 ranks) and 0.6 (4 ranks) times one tree's (docs/scaling.md). */
static void check_energy(void) {
    static const unsigned long long seeds[3] = {11, 12, 13};
    double ea = 0, eb = 0;
    unsigned k;
    for (k = 0; k < 3; ++k) {
        nbody_system s0 = {0};
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_ic_collision(&s0, 1000, (nbody_real)0.3, 3, seeds[k]);
        d.engine = NBODY_ENGINE_TREE; d.method = NBODY_LEAPFROG; d.softening = (nbody_real)0.02; d.dt = (nbody_real)1 / 256;
        d.theta = (nbody_real)0.5; d.quadrupole = 1; d.threads = 1;
        eb += energy_rms(d, NULL, &s0);
        ea += energy_rms(d, &world_, &s0);
        nbody_system_free(&s0);
    }
    CHECK(ea <= 1.5 * eb && eb > 0,
          "%d ranks, galaxy collisions of 1000 bodies to t = 0.5: |dE/E| (rms over the run, summed over 3) %.3g, one "
          "process's tree %.3g", size_, ea, eb);
    if (rank_ == 0) printf("%d ranks: galaxy collisions |dE/E| (rms, sum of 3) %.3g, one process %.3g\n", size_, ea, eb);
}

/* a checkpoint of the world after 12 steps (gathered by body index) restarted on one rank and
   on a split of the world: the state loaded is bitwise the state saved, and the run on to
   t = 0.1 ends within 1e-4 of the world's run straight through (the forces on P ranks are not
   bitwise those on P': adaptive steps differ) */
static void check_checkpoints(const nbody_system *s0, const char *dir) {
    static const nbody_method methods[] = {NBODY_RKDP, NBODY_ADAMS, NBODY_LEAPFROG};
    char path[512];
    nbody_system ref = {0}, got = {0}, saved = {0};
    unsigned k;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank_ % 2, rank_, &half);
    nbody_system_alloc(&ref, s0->n); nbody_system_alloc(&got, s0->n); nbody_system_alloc(&saved, s0->n);
    snprintf(path, sizeof path, "%s/domains_%d.ckp", dir, size_);
    for (k = 0; k < sizeof methods / sizeof *methods; ++k) {
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_sim *sim = NULL, *back = NULL;
        nbody_stats st_ref, st;
        memset(&st_ref, 0, sizeof st_ref); memset(&st, 0, sizeof st);
        nbody_result r;
        int q;
        d.engine = NBODY_ENGINE_TREE; d.method = methods[k]; d.softening = (nbody_real)0.05; d.dt = (nbody_real)4e-3;
        d.tolerance = nbody_method_adaptive(methods[k]) ? (nbody_real)1e-7 : 0;
        d.mpi_comm = &world_; d.decompose = 1;
        r = nbody_create(&sim, &d, s0);
        if (r == NBODY_OK) r = steps(sim, 12);
        if (r == NBODY_OK) r = nbody_checkpoint_save(sim, path);
        if (r == NBODY_OK) r = nbody_get_state(sim, &saved);
        if (r == NBODY_OK) st_ref = nbody_get_stats(sim);
        if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)0.1);
        if (r == NBODY_OK) r = nbody_get_state(sim, &ref);
        nbody_destroy(sim);
        MPI_Barrier(MPI_COMM_WORLD);
        for (q = 0; q < 2; ++q) {
            d.mpi_comm = q ? (void *)&half : (void *)&self_;
            back = NULL;
            if (r == NBODY_OK) r = nbody_checkpoint_load(&back, &d, path);
            if (r == NBODY_OK) r = nbody_get_state(back, &got);
            if (r == NBODY_OK) st = nbody_get_stats(back);
            CHECK(r == NBODY_OK && same_system(&got, &saved) && st.steps == st_ref.steps,
                  "%s: a checkpoint of %d ranks loaded on %s: %s, state %s", nbody_method_name(d.method), size_,
                  q ? "half of them" : "one", nbody_result_string(r), same_system(&got, &saved) ? "as saved" : "not as saved");
            if (r == NBODY_OK) r = nbody_advance(back, (nbody_real)0.1);
            if (r == NBODY_OK) r = nbody_get_state(back, &got);
            CHECK(r == NBODY_OK && max_offset(&got, &ref) <= 1e-4 && got.t == ref.t,
                  "%s: a checkpoint of %d ranks restarted on %s: %s, offset %.3g, t %g / %g", nbody_method_name(d.method), size_,
                  q ? "half of them" : "one", nbody_result_string(r), max_offset(&got, &ref), (double)got.t, (double)ref.t);
            nbody_destroy(back);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) remove(path);
    MPI_Comm_free(&half);
    nbody_system_free(&ref); nbody_system_free(&got); nbody_system_free(&saved);
}

/* rank 0's system on every rank of the world */
static void bcast_system(nbody_system *s) {
    nbody_real *f[7];
    int k;
    f[0] = s->x; f[1] = s->y; f[2] = s->z; f[3] = s->vx; f[4] = s->vy; f[5] = s->vz; f[6] = s->m;
    for (k = 0; k < 7; ++k) MPI_Bcast(f[k], (int)(s->n * sizeof(nbody_real)), MPI_BYTE, 0, world_);
    MPI_Bcast(&s->t, (int)sizeof s->t, MPI_BYTE, 0, world_);
}

/* a checkpoint written by half the ranks (those of even rank, as one communicator) restarted
   on all of them (more ranks than wrote it): the state loaded is bitwise the state saved, and
   the run on to t = 0.1 ends within 1e-4 of the half's run straight through */
static void check_checkpoint_more_ranks(const nbody_system *s0, const char *dir) {
    char path[512];
    nbody_system ref = {0}, got = {0}, saved = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r = NBODY_OK;
    int rr, half_size;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank_ % 2, rank_, &half);
    MPI_Comm_size(half, &half_size);
    nbody_system_alloc(&ref, s0->n); nbody_system_alloc(&got, s0->n); nbody_system_alloc(&saved, s0->n);
    snprintf(path, sizeof path, "%s/domains_more_%d.ckp", dir, size_);
    d.engine = NBODY_ENGINE_TREE; d.method = NBODY_RKDP; d.softening = (nbody_real)0.05; d.dt = (nbody_real)4e-3;
    d.tolerance = (nbody_real)1e-7; d.decompose = 1;
    if (rank_ % 2 == 0) {
        d.mpi_comm = &half;
        r = nbody_create(&sim, &d, s0);
        if (r == NBODY_OK) r = steps(sim, 12);
        if (r == NBODY_OK) r = nbody_checkpoint_save(sim, path);
        if (r == NBODY_OK) r = nbody_get_state(sim, &saved);
        if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)0.1);
        if (r == NBODY_OK) r = nbody_get_state(sim, &ref);
        nbody_destroy(sim);
    }
    rr = (int)r;
    MPI_Bcast(&rr, 1, MPI_INT, 0, world_);
    bcast_system(&saved); bcast_system(&ref);
    r = (nbody_result)rr;
    d.mpi_comm = &world_;
    sim = NULL;
    if (r == NBODY_OK) r = nbody_checkpoint_load(&sim, &d, path);
    if (r == NBODY_OK) r = nbody_get_state(sim, &got);
    CHECK(r == NBODY_OK && same_system(&got, &saved), "a checkpoint of %d ranks loaded on %d: %s, state %s", half_size, size_,
          nbody_result_string(r), same_system(&got, &saved) ? "as saved" : "not as saved");
    if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)0.1);
    if (r == NBODY_OK) r = nbody_get_state(sim, &got);
    CHECK(r == NBODY_OK && max_offset(&got, &ref) <= 1e-4 && got.t == ref.t,
          "a checkpoint of %d ranks restarted on %d: %s, offset %.3g from the %d ranks' run, t %g / %g", half_size, size_,
          nbody_result_string(r), max_offset(&got, &ref), half_size, (double)got.t, (double)ref.t);
    nbody_destroy(sim);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) remove(path);
    MPI_Comm_free(&half);
    nbody_system_free(&ref); nbody_system_free(&got); nbody_system_free(&saved);
}

/* bodies with radii merging: the same merges as one process's tree (the tree's force errors
   move the bodies by far less than the radii), the mass kept, the same state on every rank */
static void check_collisions(void) {
    nbody_system s0 = {0}, a = {0}, b = {0};
    nbody_real *radii;
    size_t i;
    int q;
    nbody_ic_plummer(&s0, 300, 21);
    radii = (nbody_real *)malloc(s0.n * sizeof *radii);
    for (i = 0; i < s0.n; ++i) radii[i] = (nbody_real)0.02;
    for (q = 0; q < 2; ++q) {
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_sim *sim = NULL;
        nbody_system *out = q ? &a : &b;
        nbody_result r;
        d.engine = NBODY_ENGINE_TREE; d.method = NBODY_LEAPFROG; d.dt = (nbody_real)1e-3; d.softening = (nbody_real)0.01;
        d.collision = NBODY_COLLISION_MERGE;
        d.mpi_comm = q ? (void *)&world_ : NULL; d.decompose = q;
        r = nbody_create(&sim, &d, &s0);
        if (r == NBODY_OK) r = nbody_set_radii(sim, radii);
        if (r == NBODY_OK) r = nbody_advance(sim, (nbody_real)0.2);
        if (r == NBODY_OK) r = nbody_system_alloc(out, nbody_get_n(sim));
        if (r == NBODY_OK) r = nbody_get_state(sim, out);
        CHECK(r == NBODY_OK, "%d ranks, collisions (%s): %s", size_, q ? "decomposed" : "one process", nbody_result_string(r));
        nbody_destroy(sim);
    }
    {
        double ma = 0, mb = 0;
        for (i = 0; i < a.n; ++i) ma += (double)a.m[i];
        for (i = 0; i < b.n; ++i) mb += (double)b.m[i];
        CHECK(a.n == b.n && a.n < s0.n && fabs(ma - mb) <= 1e-12 * mb + (sizeof(nbody_real) == 4 ? 1e-5 : 0) &&
                  same_on_all_ranks(&a),
              "%d ranks, collisions: %lu bodies left (one process %lu, of %lu), mass %.17g / %.17g", size_, (unsigned long)a.n,
              (unsigned long)b.n, (unsigned long)s0.n, ma, mb);
    }
    free(radii);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* Each rank holds its own bodies, its domain, and they migrate as they move: a galaxy
   collision stepped on the world; after each step:
   - every body is held by exactly one rank (the indices the ranks hold are a permutation);
   - the rows a rank keeps for each buffer are at least its bodies and at most the most it held
     and a sixteenth (+ 16);
   - bodies moved between ranks at the steps (not only at the first placement), and a step moved
     fewer than a fifth of them (the movers, not the whole state);
   then an evaluation of a new step attempt (the cuts move, the bodies migrate): each body a
   rank holds lies in the rank's domain (its position, down the tree of cuts, reaches the rank),
   and the ranks' domains are boxes that do not overlap (each rank's bodies' bounding box lies
   on its side of every cut above it). */
static void check_ownership(void) {
    nbody_system s0 = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r;
    size_t n = 3000, later = 0, most = 0, held = 0;
    int step, bad_perm = 0, bad_key = 0, bad_cap = 0, k;
    nbody_ic_collision(&s0, n, (nbody_real)0.3, 3, 17);
    d.engine = NBODY_ENGINE_TREE; d.method = NBODY_LEAPFROG; d.softening = (nbody_real)0.02; d.dt = (nbody_real)1 / 64;
    d.threads = 1; d.mpi_comm = &world_; d.decompose = 1;
    r = nbody_create(&sim, &d, &s0);
    for (step = 0; step < 12 && r == NBODY_OK; ++step) {
        nbody__dist *dist;
        nbody__dd *g;
        int cnt, *counts = (int *)malloc((size_t)size_ * sizeof(int)), *displs = (int *)malloc((size_t)size_ * sizeof(int));
        unsigned long long *ids, mine_moved, moved = 0;
        unsigned char *seen = (unsigned char *)calloc(n, 1);
        size_t i, total = 0;
        r = nbody_step(sim);
        if (r != NBODY_OK) { free(counts); free(displs); free(seen); break; }
        dist = nbody__dist_of(&sim->eng); g = dist->dd;
        mine_moved = g->moved;
        MPI_Allreduce(&mine_moved, &moved, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, world_);
        if (step > 0 && moved > most) most = (size_t)moved;
        if (step > 0) later += (size_t)moved;
        cnt = (int)dist->count;
        if (dist->count > held) held = dist->count;
        MPI_Allgather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, world_);
        for (k = 0; k < size_; ++k) { displs[k] = (int)total; total += (size_t)counts[k]; }
        ids = (unsigned long long *)malloc((total + 1) * sizeof *ids);
        for (i = 0; i < dist->count; ++i) ids[(size_t)displs[rank_] + i] = g->id[i];
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ids, counts, displs, MPI_UNSIGNED_LONG_LONG, world_);
        for (i = 0; i < total; ++i) {
            if (ids[i] >= n || seen[ids[i]]) bad_perm = 1;
            else seen[ids[i]] = 1;
        }
        if (total != n) bad_perm = 1;
        if (g->cap < dist->count || g->cap > held + held / 16 + 16) bad_cap = 1;
        free(ids); free(counts); free(displs); free(seen);
    }
    if (r == NBODY_OK) {           /* a new step attempt: the splitters move, the bodies migrate; their keys then */
        nbody__dist *dist = nbody__dist_of(&sim->eng);
        nbody__dd *g = dist->dd;
        const nbody_real *y;
        size_t i, v;
        sim->eng.epoch += 1;
        r = sim->eng.ops->derivative(&sim->eng, sim->y, sim->ytmp);
        y = ((const nbody__dd_buf *)sim->y)->p;
        for (i = 0; i < dist->count; ++i) {
            double p[3];
            for (k = 0; k < 3; ++k) p[k] = (double)y[(size_t)k * g->cap + i];
            if (nbody__dd_domain_at(g, p) != rank_) bad_key = 1;
            /* independently of nbody__dd_domain_at: on the rank's side of every cut whose ranks
               hold it */
            for (v = 1; g->orb[2 * v + 1] - g->orb[2 * v] > 1;) {
                int a = g->orb[2 * v], b = g->orb[2 * v + 1], m = a + (b - a) / 2, up = p[g->axis[v]] >= g->cut[v];
                if (rank_ < a || rank_ >= b || up != (rank_ >= m)) { bad_key = 1; break; }
                v = 2 * v + (size_t)up;
            }
        }
    }
    CHECK(r == NBODY_OK && !bad_perm, "%d ranks: every body held by exactly one rank through 12 steps (%s)", size_,
          nbody_result_string(r));
    CHECK(r == NBODY_OK && !bad_key, "%d ranks: each rank's bodies inside its domain (the cuts' box) after a migration", size_);
    CHECK(!bad_cap, "%d ranks: each buffer's rows at least the rank's bodies, at most the most it held and a sixteenth", size_);
    CHECK(size_ == 1 ? later == 0 : later > 0 && most < n / 5,
          "%d ranks: bodies migrated as they moved: %lu over 11 steps, at most %lu in one (of %lu)", size_, (unsigned long)later,
          (unsigned long)most, (unsigned long)n);
    nbody_destroy(sim);
    nbody_system_free(&s0);
}

/* a counting allocator: the bytes held and their peak (a header holds each block's size) */
static size_t held_, peak_;
static void *count_alloc(size_t size, void *user) {
    size_t *p = (size_t *)malloc(size + 16);
    (void)user;
    if (!p) return NULL;
    p[0] = size; held_ += size;
    if (held_ > peak_) peak_ = held_;
    return (char *)p + 16;
}
static void count_free(void *ptr, void *user) {
    size_t *p;
    (void)user;
    if (!ptr) return;
    p = (size_t *)(void *)((char *)ptr - 16);
    held_ -= p[0];
    free(p);
}

/* the memory a rank holds is O(N/P): the peak of what the library allocated on each rank for a
   Plummer sphere of 40000 bodies (leapfrog, 3 steps), the state, the domain's tree and the LETs
   together, at most 1/P + 0.15 of the same decomposed tree's on one rank (and above 1/P - 0.1:
   the counter counts); one process's plain tree printed beside it */
static void check_memory(void) {
    nbody_system s0 = {0};
    size_t peaks[3], mine, worst = 0;
    int q;
    nbody_ic_plummer(&s0, 40000, 23);
    for (q = 0; q < 3; ++q) {      /* one process's plain tree, the decomposed tree on one rank, on the world */
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_sim *sim = NULL;
        nbody_result r;
        d.engine = NBODY_ENGINE_TREE; d.method = NBODY_LEAPFROG; d.softening = (nbody_real)0.01; d.dt = (nbody_real)1e-3;
        d.threads = 1;
        d.allocator.alloc = count_alloc; d.allocator.free = count_free;
        d.mpi_comm = q == 0 ? NULL : q == 1 ? (void *)&self_ : (void *)&world_; d.decompose = q > 0;
        held_ = peak_ = 0;
        r = nbody_create(&sim, &d, &s0);
        if (r == NBODY_OK) r = steps(sim, 3);
        nbody_destroy(sim);
        CHECK(r == NBODY_OK && held_ == 0, "%d ranks, memory (%s): %s, %lu bytes left", size_,
              q == 0 ? "one process" : q == 1 ? "decomposed, one rank" : "decomposed", nbody_result_string(r), (unsigned long)held_);
        peaks[q] = peak_;
    }
    mine = peaks[2];
    MPI_Allreduce(&mine, &worst, 1, sizeof(size_t) == 8 ? MPI_UNSIGNED_LONG_LONG : MPI_UNSIGNED, MPI_MAX, world_);
    CHECK((double)worst <= (1.0 / size_ + 0.15) * (double)peaks[1] && (double)worst >= (1.0 / size_ - 0.1) * (double)peaks[1],
          "%d ranks: the largest peak a rank allocated %.2f MB, one rank's %.2f MB (%.3f; at most %.3f)", size_, worst / 1e6,
          peaks[1] / 1e6, (double)worst / (double)peaks[1], 1.0 / size_ + 0.15);
    if (rank_ == 0)
        printf("%d ranks: peak allocated a rank %.2f MB, decomposed on one rank %.2f MB (%.3f), one process's plain tree %.2f MB "
               "(%.3f)\n", size_, worst / 1e6, peaks[1] / 1e6, (double)worst / (double)peaks[1], peaks[0] / 1e6,
               (double)worst / (double)peaks[0]);
    nbody_system_free(&s0);
}

/* what the decomposed tree keeps working beside the methods: a force callback, test particles
   under an adaptive method, stop and escape distances, fewer bodies than ranks (ranks that hold
   none), Gauss-Radau, each as one process's tree runs it (or fails as it does; Gauss-Radau may
   also stop with NBODY_ERR_STEP_TOO_SMALL, as an adaptive method on any tree may: its corrector
   iterates to round-off and P domain trees' forces jump elsewhere than one tree's); WHFast
   (with a dominant body) refused on every rank with NBODY_ERR_UNAVAILABLE */
static nbody_real drag_(nbody_real v) { return (nbody_real)-0.5 * v; }
static void drag(size_t n, nbody_real t, const nbody_real *x, const nbody_real *y, const nbody_real *z, const nbody_real *vx,
                 const nbody_real *vy, const nbody_real *vz, const nbody_real *m, nbody_real *ax, nbody_real *ay, nbody_real *az,
                 void *user) {
    size_t i;
    (void)t; (void)x; (void)y; (void)z; (void)m; (void)user;
    for (i = 0; i < n; ++i) { ax[i] += drag_(vx[i]); ay[i] += drag_(vy[i]); az[i] += drag_(vz[i]); }
}
static void check_features(const nbody_system *small) {
    nbody_system three = {0}, sun = {0}, a = {0}, b = {0};
    int c;
    size_t i;
    nbody_ic_figure_eight(&three);
    nbody_ic_plummer(&sun, 60, 29);
    sun.m[0] = 1000;               /* a dominant body for WHFast */
    for (i = 1; i < sun.n; ++i) { sun.x[i] *= 4; sun.y[i] *= 4; sun.z[i] *= 4; sun.vx[i] *= 15; sun.vy[i] *= 15; sun.vz[i] *= 15; }
    for (c = 0; c < 7; ++c) {
        static const char *what[] = {"extra_force (drag)", "test particles, rkdp adaptive", "stop_distance", "escape_distance",
                                     "3 bodies (fewer than ranks)", "whfast", "radau"};
        const nbody_system *s0 = c == 4 ? &three : c == 5 ? &sun : small;
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_result ra, rb;
        double off;
        d.engine = NBODY_ENGINE_TREE; d.method = NBODY_RK4; d.softening = (nbody_real)0.05; d.dt = (nbody_real)4e-3;
        if (c == 0) d.extra_force = drag;
        if (c == 1) { d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-7; d.n_active = 150; }
        if (c == 2) d.stop_distance = (nbody_real)0.02;
        if (c == 3) d.escape_distance = (nbody_real)1.5;
        if (c == 4) { d.softening = 0; d.theta = (nbody_real)0.3; d.dt = (nbody_real)1e-3; }
        if (c == 5) { d.method = NBODY_WHFAST; d.softening = 0; d.dt = (nbody_real)1e-3; d.theta = (nbody_real)0.2; }
        if (c == 6) { d.method = NBODY_RADAU; d.tolerance = (nbody_real)1e-6; }
        nbody_system_alloc(&a, s0->n); nbody_system_alloc(&b, s0->n);
        rb = run(d, NULL, s0, (nbody_real)0.1, &b, NULL);
        ra = run(d, &world_, s0, (nbody_real)0.1, &a, NULL);
        off = max_offset(&a, &b);
        if (c == 5) {              /* WHFast refuses ranks (its drifts need the whole state in one process) */
            CHECK(ra == NBODY_ERR_UNAVAILABLE && rb == NBODY_OK, "%d ranks, whfast: %s (refused), one process %s", size_,
                  nbody_result_string(ra), nbody_result_string(rb));
            nbody_system_free(&a); nbody_system_free(&b);
            continue;
        }
        if (c == 6 && ra == NBODY_ERR_STEP_TOO_SMALL) {   /* the documented stop of an adaptive method on a tree's
                                                             force jumps (P domain trees jump elsewhere than one) */
            int lo = (int)ra, hi = (int)ra, mine = (int)ra;
            MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, world_);
            MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, world_);
            CHECK(lo == hi, "%d ranks, radau: stopped (%s) on some ranks only", size_, nbody_result_string(ra));
            nbody_system_free(&a); nbody_system_free(&b);
            continue;
        }
        CHECK(ra == rb && (rb != NBODY_OK && rb != NBODY_STOPPED ? 1 : off <= 1e-4 && a.t == b.t) && same_on_all_ranks(&a),
              "%d ranks, %s: %s / one process %s, t %g / %g, largest offset %.3g", size_, what[c], nbody_result_string(ra),
              nbody_result_string(rb), (double)a.t, (double)b.t, off);
        nbody_system_free(&a); nbody_system_free(&b);
    }
    nbody_system_free(&three); nbody_system_free(&sun);
}

/* a NaN position: NaN forces on every rank, nothing hangs; bad settings fail on every rank */
static void check_refusals(const nbody_system *s0) {
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    size_t n = s0->n, i, nan_count = 0;
    nbody_real *a = (nbody_real *)malloc(3 * n * sizeof *a);
    nbody_result r;
    nbody_system_alloc(&s, n);
    memcpy(s.x, s0->x, n * sizeof(nbody_real)); memcpy(s.y, s0->y, n * sizeof(nbody_real));
    memcpy(s.z, s0->z, n * sizeof(nbody_real)); memcpy(s.m, s0->m, n * sizeof(nbody_real));
    s.x[n - 1] = (nbody_real)HUGE_VAL - (nbody_real)HUGE_VAL;
    d.engine = NBODY_ENGINE_TREE; d.mpi_comm = &world_; d.decompose = 1;
    r = nbody_accelerations(&d, &s, a, a + n, a + 2 * n);
    for (i = 0; i < 3 * n; ++i) nan_count += a[i] != a[i];
    CHECK(r != NBODY_OK || nan_count == 3 * n, "%d ranks, a NaN position: %s, %lu of %lu components NaN", size_,
          nbody_result_string(r), (unsigned long)nan_count, (unsigned long)(3 * n));
    d.engine = NBODY_ENGINE_BLOCK;
    r = nbody_create(&sim, &d, s0);
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && !sim, "%d ranks, decompose with BLOCK: %s", size_, nbody_result_string(r));
    d.engine = NBODY_ENGINE_TREE; d.decompose = 2;
    r = nbody_create(&sim, &d, s0);
    CHECK(r == NBODY_ERR_INVALID_ARGUMENT && !sim, "%d ranks, decompose = 2: %s", size_, nbody_result_string(r));
    d.decompose = rank_ == 0;      /* one rank decomposes, the others not: every rank refuses */
    r = nbody_create(&sim, &d, s0);
    CHECK((size_ == 1 ? r == NBODY_OK : r == NBODY_ERR_INVALID_ARGUMENT), "%d ranks, decompose on rank 0 only: %s", size_,
          nbody_result_string(r));
    nbody_destroy(sim);
    free(a);
    nbody_system_free(&s);
}

int main(int argc, char **argv) {
    nbody_system plummer = {0}, galaxies = {0}, small = {0};
    const char *dir = argc > 1 ? argv[1] : ".";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    nbody_ic_plummer(&plummer, 4000, 3);
    nbody_ic_collision(&galaxies, 4000, (nbody_real)0.3, 3, 5);
    nbody_ic_plummer(&small, 203, 7);
    check_force_errors(&plummer, "Plummer sphere of 4000", 0);
    check_force_errors(&galaxies, "two galaxies of 2000", 0);
    check_force_errors(&galaxies, "two galaxies, the last 1600 bodies test particles", 2400);
    check_energy();
    check_methods(&small);
    check_checkpoints(&small, dir);
    check_checkpoint_more_ranks(&small, dir);
    check_collisions();
    check_refusals(&small);
    check_ownership();
    check_memory();
    check_features(&small);
    nbody_system_free(&plummer); nbody_system_free(&galaxies); nbody_system_free(&small);
    return mpi_check_finish(rank_);
}
