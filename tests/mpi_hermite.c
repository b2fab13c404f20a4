/* mpi_hermite.c - NBODY_HERMITE on the distributed engine (desc.mpi_comm), run by
   tests/test_mpi.sh under mpirun -np 1, 2, 3 and 4: each rank predicts its own bodies and
   sums the forces of every active body from them, and the ranks add those partial sums. The
   checks of tests/hermite_engine.h against one process's BLOCK (the same steps, the states to
   rounding; both orders; a few active bodies among 2048 sources; the energy of Plummer spheres;
   the orders on a Kepler orbit, where 3 and 4 ranks hold bodies-less slices; bitwise restarts
   on the ranks; test particles; a refused step), then: every rank holds the same bits, the
   energy error of an unsoftened Plummer sphere of 512 bodies as one process's, a checkpoint
   written by the ranks resumed in one process, 2 threads a rank giving the bits of 1, shared
   steps against one process's, merging collisions as one process merges, and the engines that do not run it under MPI refused with a
   line.
   Build: mpicc -std=c99 -O2 -fopenmp -I. tests/mpi_hermite.c -o build/mpi_hermite -lm
   Rank 0 prints the summed "RESULT passed failed skipped" line. */
#define NBODY_IMPLEMENTATION
#ifndef NBODY_WITH_MPI
#define NBODY_WITH_MPI
#endif
#include "nbody.h"
#include "tests/check.h"
#include "tests/mpi_check.h"
#include "tests/hermite_engine.h"

static int rank_, size_;
static MPI_Comm world_ = MPI_COMM_WORLD;

/* the same run on the ranks and in one process (BLOCK): every rank ends with the same bytes,
   and the energy error of an unsoftened Plummer sphere is one process's (to rounding of a
   chaotic system: within 30 %) */
static void check_energy_and_ranks(int order) {
    nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, order, NBODY_STEPPING_DEFAULT, 0);
    run_out a, b;
    a = run_plummer(&d, 512, 0.5);
    d.mpi_comm = NULL;
    b = run_plummer(&d, 512, 0.5);
    CHECK(a.r == NBODY_OK && b.r == NBODY_OK && same_on_all_ranks(&a.s) && a.stats.t == (nbody_real)0.5,
          "%d ranks, order %d, Plummer 512 to t = 0.5: %s, every rank the same state: %s", size_, order, nbody_result_string(a.r),
          same_on_all_ranks(&a.s) ? "yes" : "no");
    CHECK(a.de > 0 && a.de < 1.3 * b.de && b.de < 1.3 * a.de && a.de < (order == 4 ? 1e-6 : 1e-8),
          "%d ranks, order %d, Plummer 512 (unsoftened) to t = 0.5: |dE/E| %.3g, one process %.3g", size_, order, a.de, b.de);
    CHECK(a.stats.body_steps > 0 && (double)a.stats.body_steps < 1.01 * (double)b.stats.body_steps &&
          (double)b.stats.body_steps < 1.01 * (double)a.stats.body_steps,
          "%d ranks, order %d: %llu body steps, one process %llu", size_, order, a.stats.body_steps, b.stats.body_steps);
    nbody_system_free(&a.s); nbody_system_free(&b.s);
}

/* a checkpoint written by the ranks between block times, resumed in one process, ends where
   the ranks end (to rounding: the sums split otherwise) and with the same steps */
static void check_checkpoint_to_one(void) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sa = NULL, *sb = NULL;
    char path[80];
    int ok;
    snprintf(path, sizeof path, "build/mpi_hermite_%d.ckp", size_);
    nbody_ic_plummer(&s0, 200, 7);
    nbody_system_alloc(&a, 200); nbody_system_alloc(&b, 200);
    d.softening = (nbody_real)0.01;
    ok = nbody_create(&sa, &d, &s0) == NBODY_OK && steps(sa, 41) == NBODY_OK;
    ok = ok && nbody_checkpoint_save(sa, path) == NBODY_OK;
    MPI_Barrier(MPI_COMM_WORLD);
    d.mpi_comm = NULL;
    ok = ok && nbody_checkpoint_load(&sb, &d, path) == NBODY_OK;
    ok = ok && nbody_advance(sa, (nbody_real)0.25) == NBODY_OK && nbody_advance(sb, (nbody_real)0.25) == NBODY_OK;
    ok = ok && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
    CHECK(ok && check_state_diff(&a, &b) < 1e-10 && nbody_get_stats(sa).steps == nbody_get_stats(sb).steps,
          "%d ranks: a checkpoint after 41 block steps resumed in one process ends where the ranks end (differ by %.3g, "
          "steps %llu / %llu)", size_, check_state_diff(&a, &b), ok ? nbody_get_stats(sa).steps : 0ULL,
          ok ? nbody_get_stats(sb).steps : 0ULL);
    nbody_destroy(sa); nbody_destroy(sb);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) remove(path);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

/* the ranks' sums do not depend on their threads (BLOCK's tasks: fixed chunks added in order),
   and shared steps agree with one process's shared steps as block steps do */
static void check_threads_and_shared(void) {
    nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, 0);
    run_out a, b, c, e;
    double diff;
    d.softening = (nbody_real)0.01;
    a = run_plummer(&d, 700, 0.125);
    d.threads = 2;
    b = run_plummer(&d, 700, 0.125);
    CHECK(a.r == NBODY_OK && b.r == NBODY_OK && check_same_state(&a.s, &b.s) && a.stats.steps == b.stats.steps,
          "%d ranks: 2 threads a rank give the bits of 1 (%s / %s)", size_, nbody_result_string(a.r), nbody_result_string(b.r));
    d.threads = 1; d.stepping = NBODY_STEPPING_SHARED;
    c = run_plummer(&d, 300, 0.125);
    d.mpi_comm = NULL;
    e = run_plummer(&d, 300, 0.125);
    diff = check_state_diff(&c.s, &e.s);
    CHECK(c.r == NBODY_OK && e.r == NBODY_OK && diff < 1e-9 && c.stats.steps == e.stats.steps && c.stats.steps > 10,
          "%d ranks, shared steps, 300 bodies to t = 0.125: %s, states differ from one process's by %.3g, steps %llu / %llu",
          size_, nbody_result_string(c.r), diff, c.stats.steps, e.stats.steps);
    nbody_system_free(&a.s); nbody_system_free(&b.s); nbody_system_free(&c.s); nbody_system_free(&e.s);
}

/* merging collisions on the ranks (found on the host, the integration restarted from the
   merged state): the merges of one process, every rank the same state */
static void check_collisions(void) {
    nbody_system s0 = NBODY_ZERO, a = NBODY_ZERO, b = NBODY_ZERO;
    nbody_desc d = hermite_desc(NBODY_ENGINE_BLOCK, 4, NBODY_STEPPING_DEFAULT, 0);
    nbody_sim *sa = NULL, *sb = NULL;
    nbody_real r[64];
    nbody_event ea, eb;
    size_t i;
    int ok;
    nbody_ic_plummer(&s0, 64, 8);
    nbody_system_alloc(&a, 64); nbody_system_alloc(&b, 64);
    for (i = 0; i < 64; ++i) r[i] = (nbody_real)0.05;
    d.collision = NBODY_COLLISION_MERGE; d.softening = (nbody_real)0.01;
    ok = nbody_create(&sa, &d, &s0) == NBODY_OK && nbody_set_radii(sa, r) == NBODY_OK;
    d.mpi_comm = NULL;
    ok = ok && nbody_create(&sb, &d, &s0) == NBODY_OK && nbody_set_radii(sb, r) == NBODY_OK;
    ok = ok && nbody_advance(sa, (nbody_real)1) == NBODY_OK && nbody_advance(sb, (nbody_real)1) == NBODY_OK;
    nbody_get_event(sa, &ea); nbody_get_event(sb, &eb);
    a.n = b.n = nbody_get_n(sa);
    ok = ok && nbody_get_n(sb) == a.n && nbody_get_state(sa, &a) == NBODY_OK && nbody_get_state(sb, &b) == NBODY_OK;
    CHECK(ok && ea.merges > 0 && ea.merges == eb.merges && check_state_diff(&a, &b) < 1e-8 && same_on_all_ranks(&a),
          "%d ranks, merging collisions: %llu merges (one process %llu), states differ by %.3g", size_, ea.merges, eb.merges,
          ok ? check_state_diff(&a, &b) : -1.0);
    a.n = b.n = 64;
    nbody_destroy(sa); nbody_destroy(sb);
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

static char logged_[512];
static void keep_line(nbody_log_level level, const char *line, void *user) {
    (void)user; (void)level;
    snprintf(logged_, sizeof logged_, "%s", line);
}

/* the GPU engines under MPI: refused at create with a line that names mpi_comm */
static void check_refused(void) {
    static const nbody_engine engines[] = {NBODY_ENGINE_CUDA, NBODY_ENGINE_OPENCL};
    nbody_system s0 = NBODY_ZERO;
    unsigned k;
    nbody_ic_plummer(&s0, 16, 3);
    for (k = 0; k < sizeof engines / sizeof *engines; ++k) {
        nbody_desc d = hermite_desc(engines[k], 4, NBODY_STEPPING_DEFAULT, 0);
        nbody_sim *sim = NULL;
        nbody_result r;
        logged_[0] = 0;
        d.log.func = keep_line;
        r = nbody_create(&sim, &d, &s0);
        CHECK(r == NBODY_ERR_UNAVAILABLE && !sim && strstr(logged_, "mpi_comm") && strstr(logged_, nbody_engine_name(engines[k])),
              "%d ranks: hermite on %s under MPI: %s, logged '%s'", size_, nbody_engine_name(engines[k]), nbody_result_string(r),
              logged_);
        nbody_destroy(sim);
    }
    nbody_system_free(&s0);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    hermite_comm = &world_;
    check_hermite_engine(NBODY_ENGINE_BLOCK, 2048);
    check_hermite_engine_vs_block(NBODY_ENGINE_SIMPLE, 300, 0.25);
    check_hermite_engine_vs_block(NBODY_ENGINE_OPENMP, 300, 0.25);
    check_energy_and_ranks(4);
    if (DBL) check_energy_and_ranks(6);
    check_checkpoint_to_one();
    check_threads_and_shared();
    check_collisions();
    check_refused();
    return mpi_check_finish(rank_);
}
