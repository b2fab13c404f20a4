/* mpi_scaling.c - seconds per force evaluation of a CPU engine on P ranks x T threads (the
   distributed engine, desc.mpi_comm) or in one plain process (--plain): the figures of
   docs/scaling.md. Each rank computes the forces on its slice of the bodies against all of
   them after gathering the positions (MPI_Allgatherv). Prints one markdown row (rank 0).
   Build: make build/mpi_scaling (mpicc -O2 -fopenmp -DNBODY_WITH_MPI -I. ...)
   Run:   mpirun -np 2 build/mpi_scaling 32768 1 block      (2 ranks x 1 thread)
          build/mpi_scaling 32768 2 block --plain            (1 process x 2 threads, no MPI)
   Timing: leapfrog steps (one force evaluation each) after one warm-up step, the median of
   up to 9 steps or 20 s, wall clock on rank 0 (the ranks wait for each other every step).
   TREE under MPI also prints the ranks' walk times of the last step, slowest / mean.
   Environment (benchmarks of the TREE walk's load balance, docs/scaling.md):
     BENCH_IC=lopsided   a Plummer sphere of n/2 bodies beside a disc galaxy of n/2 (default:
                         Plummer of n)
     BENCH_SPLIT=count   the walk split by body count before every step, as the bodies are
                         owned (the default is the engine's: split by the measured walk times)
     BENCH_DECOMPOSE=1   TREE with desc.decompose (the domain-decomposed tree); prints a second
                         line a rank: its domain's bodies, the bytes it sent in the last step
                         (migrating rows, LETs), the LET nodes and bodies it wrote, its walk
                         (processor ms) and its work (lane interactions counted in the walk
                         since the splitters moved), build and other (wall ms), the other's parts (the
                         splitters and migration, the LETs, the wait for the slowest walk)
     BENCH_QUAD=1, BENCH_THETA=x   quadrupoles, the opening angle (default monopoles, 0.5)
     BENCH_STEPS=k       at most k timed steps (default 9; at least 3 unless k is smaller), for
                         the exchange volumes of large N where the times are not the point
   With BENCH_DECOMPOSE=1 each rank's line also gives its peak resident memory (VmHWM of
   /proc/self/status, Linux; -1 elsewhere), and so does --plain's second line. The initial
   conditions are freed once the simulation is created (it holds the state). */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* this process's peak resident memory in MB (Linux), or -1 */
static double peak_mb(void) {
    char line[256];
    double kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atof(line + 6);
    fclose(f);
    return kb < 0 ? -1 : kb / 1024;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 32768;
    int threads = argc > 2 ? atoi(argv[2]) : 1, plain = argc > 4 && !strcmp(argv[4], "--plain");
    const char *engine = argc > 3 ? argv[3] : "block";
    int rank = 0, size = 1, k, reps = 0;
    double t[9], total = 0;
    nbody_system s = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL;
    nbody_result r;
    MPI_Comm world;
    MPI_Init(&argc, &argv);
    world = MPI_COMM_WORLD;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    d.engine = !strcmp(engine, "tree") ? NBODY_ENGINE_TREE : !strcmp(engine, "simple") ? NBODY_ENGINE_SIMPLE : NBODY_ENGINE_BLOCK;
    d.threads = threads; d.softening = (nbody_real)0.01; d.dt = (nbody_real)1e-4;
    d.mpi_comm = plain ? NULL : &world;
    d.decompose = !plain && d.engine == NBODY_ENGINE_TREE && getenv("BENCH_DECOMPOSE") && atoi(getenv("BENCH_DECOMPOSE")) == 1;
    d.quadrupole = getenv("BENCH_QUAD") && atoi(getenv("BENCH_QUAD")) == 1;
    if (getenv("BENCH_THETA")) d.theta = (nbody_real)atof(getenv("BENCH_THETA"));
    if (plain && size > 1) { if (rank == 0) fprintf(stderr, "--plain: one process\n"); MPI_Abort(world, 2); }
    if (getenv("BENCH_IC") && !strcmp(getenv("BENCH_IC"), "lopsided")) {
        nbody_system half = {0};
        size_t i, h = n / 2;
        r = nbody_ic_plummer(&s, n, 1);
        if (r == NBODY_OK) r = nbody_ic_galaxy(&half, n - h, (nbody_real)0.3, 2);
        for (i = 0; r == NBODY_OK && i < n - h; ++i) {   /* the disc, 4 units away, mass 1 as the sphere */
            s.x[h + i] = half.x[i] + 4; s.y[h + i] = half.y[i]; s.z[h + i] = half.z[i];
            s.vx[h + i] = half.vx[i]; s.vy[h + i] = half.vy[i]; s.vz[h + i] = half.vz[i];
            s.m[h + i] = half.m[i];
        }
        for (i = 0; r == NBODY_OK && i < h; ++i) s.m[i] = (nbody_real)1 / (nbody_real)h;
        nbody_system_free(&half);
    } else
        r = nbody_ic_plummer(&s, n, 1);
    if (r == NBODY_OK) r = nbody_create(&sim, &d, &s);
    nbody_system_free(&s);         /* the simulation holds the state: the peak memory is its own */
    if (r == NBODY_OK) r = nbody_step(sim);                 /* warm-up: first force evaluation */
    int steps = getenv("BENCH_STEPS") ? atoi(getenv("BENCH_STEPS")) : 9, least = steps < 3 ? steps : 3;
    if (steps < 1 || steps > 9) steps = 9;
    for (k = 0; k < steps && r == NBODY_OK && (k < least || total < 20); ++k, ++reps) {
        double t0;
        nbody__dist *dd = plain ? NULL : nbody__dist_of(&sim->eng);
        if (dd && dd->wfirst && getenv("BENCH_SPLIT") && !strcmp(getenv("BENCH_SPLIT"), "count")) {
            /* benchmark only: the walk split as the bodies are owned */
            memcpy(dd->wfirst, dd->first, ((size_t)size + 1) * sizeof(size_t));
        }
        MPI_Barrier(world);
        t0 = MPI_Wtime();
        r = nbody_step(sim);
        t[k] = MPI_Wtime() - t0;
        MPI_Bcast(&t[k], 1, MPI_DOUBLE, 0, world);
        total += t[k];
    }
    if (r != NBODY_OK) { if (rank == 0) fprintf(stderr, "mpi_scaling: %s\n", nbody_result_string(r)); MPI_Abort(world, 1); }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    if (rank == 0)
        printf("| %s | %d | %d | %s | %lu | %.1f |\n", plain ? "plain" : d.decompose ? "mpi-dd" : "mpi", size, threads, nbody_engine_name(d.engine),
               (unsigned long)n, 1e3 * t[reps / 2]);
    if (rank == 0 && !plain && nbody__dist_of(&sim->eng)->wfirst) {
        const nbody__dist *dd = nbody__dist_of(&sim->eng);
        double slow = 0, mean = 0;
        for (k = 0; k < size; ++k) { slow = dd->wtime[k] > slow ? dd->wtime[k] : slow; mean += dd->wtime[k] / size; }
        printf("walk times of the last step (ms):");
        for (k = 0; k < size; ++k) printf(" %.1f", 1e3 * dd->wtime[k]);
        printf("; slowest / mean %.3f; split %s\n", mean > 0 ? slow / mean : 0,
               getenv("BENCH_SPLIT") && !strcmp(getenv("BENCH_SPLIT"), "count") ? "by count" : "by measured time");
    }
    if (!plain && nbody__dist_of(&sim->eng)->dd) {   /* each rank's figures of the last step */
        const nbody__dd *g = nbody__dist_of(&sim->eng)->dd;
        double mine[14], *all = (double *)malloc(14 * (size_t)size * sizeof(double));
        mine[0] = (double)g->domain; mine[1] = (double)g->bytes_bodies; mine[2] = (double)g->bytes_let;
        mine[3] = (double)g->moved; mine[4] = (double)g->let_nodes; mine[5] = (double)g->let_bodies;
        mine[6] = g->walk_s; mine[7] = g->build_s; mine[8] = g->exchange_s; mine[9] = peak_mb();
        mine[10] = g->place_s; mine[11] = g->let_s; mine[12] = g->wait_s; mine[13] = g->wwork[rank];
        MPI_Gather(mine, 14, MPI_DOUBLE, all, 14, MPI_DOUBLE, 0, world);
        for (k = 0; rank == 0 && k < size; ++k) {
            const double *a = all + 14 * k;
            printf("| dd rank %d of %d | N %lu | domain %.0f | sent: migrating rows %.0f B, LETs %.0f B; bodies moved %.0f | LET nodes "
                   "%.0f, bodies %.0f | walk %.1f ms (processor), work %.4g, build %.1f ms, other %.1f ms (splitters + migration %.1f, LETs %.1f, "
                   "waiting for the walks %.1f) | peak memory %.0f MB |\n", k, size, (unsigned long)n, a[0], a[1], a[2], a[3], a[4], a[5],
                   1e3 * a[6], a[13], 1e3 * a[7], 1e3 * a[8], 1e3 * a[10], 1e3 * a[11], 1e3 * a[12], a[9]);
        }
        free(all);
    }
    if (plain) printf("| plain | N %lu | peak memory %.0f MB |\n", (unsigned long)n, peak_mb());
    nbody_destroy(sim);
    MPI_Finalize();
    return 0;
}
