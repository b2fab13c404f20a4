/* mpi_calls.c - counts the collectives a program calls, through MPI's profiling interface
   (each MPI_X below counts and calls PMPI_X), and prints rank 0's counts at MPI_Finalize: the
   number of all-to-alls and all-reduces a step of the decomposed tree makes, which is the
   latency the model of docs/scaling.md charges. Link it before the MPI library:
       mpicc -O2 -fopenmp -I. -DNBODY_WITH_MPI bench/mpi_scaling.c bench/mpi_calls.c -o build/mpi_calls -lm
       BENCH_DECOMPOSE=1 BENCH_STEPS=3 mpirun -np 2 build/mpi_calls 16384 1 tree
   (the counts cover the whole run: nbody_create, the warm-up step and the timed steps) */
#include <mpi.h>
#include <stdio.h>

static long n_alltoall, n_alltoallv, n_allreduce, n_allgather, n_allgatherv;

int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm c) {
    ++n_alltoall;
    return PMPI_Alltoall(s, sc, st, r, rc, rt, c);
}

int MPI_Alltoallv(const void *s, const int *sc, const int *sd, MPI_Datatype st, void *r, const int *rc, const int *rd,
                  MPI_Datatype rt, MPI_Comm c) {
    ++n_alltoallv;
    return PMPI_Alltoallv(s, sc, sd, st, r, rc, rd, rt, c);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
    ++n_allreduce;
    return PMPI_Allreduce(s, r, n, t, op, c);
}

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm c) {
    ++n_allgather;
    return PMPI_Allgather(s, sc, st, r, rc, rt, c);
}

int MPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int *rc, const int *rd, MPI_Datatype rt, MPI_Comm c) {
    ++n_allgatherv;
    return PMPI_Allgatherv(s, sc, st, r, rc, rd, rt, c);
}

int MPI_Finalize(void) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("mpi calls (rank 0): MPI_Alltoall %ld, MPI_Alltoallv %ld, MPI_Allreduce %ld, MPI_Allgather %ld, MPI_Allgatherv %ld\n",
               n_alltoall, n_alltoallv, n_allreduce, n_allgather, n_allgatherv);
    return PMPI_Finalize();
}
