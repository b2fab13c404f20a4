/* tests/mpi_check.h - comparisons of whole systems for the MPI tests (mpi_engines.c,
   mpi_domains.c): bitwise equal to another system, and the same bytes on every rank. */
#ifndef NBODY_TESTS_MPI_CHECK_H
#define NBODY_TESTS_MPI_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <string.h>

CHECK_UNUSED static int same_system(const nbody_system *a, const nbody_system *b) {
    size_t k = a->n * sizeof(nbody_real);
    return a->n == b->n && a->t == b->t && !memcmp(a->x, b->x, k) && !memcmp(a->y, b->y, k) && !memcmp(a->z, b->z, k) &&
           !memcmp(a->vx, b->vx, k) && !memcmp(a->vy, b->vy, k) && !memcmp(a->vz, b->vz, k) && !memcmp(a->m, b->m, k);
}

/* 1 when every rank holds the same bytes */
static int same_on_all_ranks(const nbody_system *s) {
    unsigned long long h = 0xCBF29CE484222325ULL, lo, hi;
    h = nbody__fnv1a(h, s->x, s->n * sizeof(nbody_real)); h = nbody__fnv1a(h, s->vz, s->n * sizeof(nbody_real));
    h = nbody__fnv1a(h, &s->t, sizeof s->t);
    MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

/* one run of d (on the communicator comm, NULL for one process) from s0 to t_end: the end
   state and the stats */
CHECK_UNUSED static nbody_result mpi_run(nbody_desc d, void *comm, const nbody_system *s0, nbody_real t_end, nbody_system *out, nbody_stats *st) {
    nbody_sim *sim = NULL;
    nbody_result r;
    d.mpi_comm = comm;
    r = nbody_create(&sim, &d, s0);
    if (r == NBODY_OK) r = nbody_advance(sim, t_end);
    if (r == NBODY_OK) r = nbody_get_state(sim, out);
    if (r == NBODY_OK && st) *st = nbody_get_stats(sim);
    nbody_destroy(sim);
    return r;
}

CHECK_UNUSED static nbody_result steps(nbody_sim *sim, int k) {
    nbody_result r = NBODY_OK;
    while (k-- > 0 && r == NBODY_OK) r = nbody_step(sim);
    return r;
}

/* the end of an MPI test program: rank 0 prints the RESULT line of every rank's counts summed */
static int mpi_check_finish(int rank) {
    int totals[3], sums[3];
    totals[0] = check_passed; totals[1] = check_failed; totals[2] = check_skipped;
    MPI_Reduce(totals, sums, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    (void)check_finish;            /* the RESULT line sums every rank's counts instead */
    if (rank == 0) printf("RESULT %d %d %d\n", sums[0], sums[1], sums[2]);
    MPI_Finalize();
    return check_failed != 0;
}

#endif
