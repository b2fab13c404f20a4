/* tests/mpi_check.h - comparisons of whole systems for the MPI tests (mpi_engines.c,
   mpi_domains.c): bitwise equal to another system, and the same bytes on every rank. */
#ifndef NBODY_TESTS_MPI_CHECK_H
#define NBODY_TESTS_MPI_CHECK_H
#include <mpi.h>
#include <string.h>

static int same_system(const nbody_system *a, const nbody_system *b) {
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

#endif
