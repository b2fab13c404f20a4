/* bench_hermite.c - NBODY_HERMITE figures: Plummer spheres (nbody_ic_plummer, Henon units,
   equal masses, no softening) to t = 1, with individual block steps or shared steps, 4th or
   6th order: abs(dE/E), wall seconds, block steps, body steps, pair interactions and their
   rate. Compare python3 bench/ph4_plummer.py N (AMUSE's ph4 as a benchmark tool).
   Usage: bench_hermite [N [order [eta [stepping [engine [t_end [seed [dt_max]]]]]]]]
            stepping: block or shared; engine: block, openmp, simple (default N 1024, order 4,
            eta 0 = the default, block, block, 1, seed 42, dt_max 0 = the default 1/16). One
            Markdown row on stdout.
          bench_hermite scan N order t_end eta...: one row per eta (the block/shared pairs
            at equal energy error come from two scans).
          bench_hermite versus N order t_end block_eta shared_eta...: block steps at block_eta,
            shared steps at each shared_eta, then the shared steps' pair interactions at the
            block steps' abs(dE/E), interpolated (log-log) between the two shared rows around
            it, and the ratio to the block steps' (no figure where no two rows bracket it).
          bench_hermite ic N [seed]: the bodies, lines "m x y z vx vy vz" (%.17g), for ph4.
   DEVICES=D in the environment: desc.devices = D (several GPUs of the CUDA engine; the engine
   column then reads "cuda x D").
   Built with MPI (make build/bench_hermite_mpi; mpirun -np P build/bench_hermite_mpi ...): the
   runs on the ranks of MPI_COMM_WORLD (desc.mpi_comm; the engine column reads "block / P
   ranks"), rank 0 printing. */
#define _POSIX_C_SOURCE 199309L   /* clock_gettime */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

static int ranks_ = 1;             /* MPI_COMM_WORLD's size in an MPI build */
#ifdef NBODY_WITH_MPI
static MPI_Comm world_ = MPI_COMM_WORLD;
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bench_case {
    size_t n;
    int order;
    double eta, t_end, dt_max;
    nbody_stepping stepping;
    nbody_engine engine;
    unsigned long long seed;
} bench_case;

static void header(void) {
    printf("| N | order | stepping | eta | engine | abs(dE/E) | wall s | block steps | body steps | pair interactions | interactions/s |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
}

/* one row; the energy error and the pair interactions into *de, *pairs (may be NULL) */
static int run_out(const bench_case *c, double *de, double *pairs) {
    nbody_system s = NBODY_ZERO;
    nbody_sim *sim = NULL;
    nbody_desc d = NBODY_ZERO;
    nbody_invariants e0, e1;
    nbody_stats st;
    nbody_result r;
    double t0, wall;
    if (nbody_ic_plummer(&s, c->n, c->seed) != NBODY_OK) return 1;
    d.method = NBODY_HERMITE; d.order = c->order; d.timestep_eta = (nbody_real)c->eta; d.stepping = c->stepping;
    d.engine = c->engine; d.dt_max = (nbody_real)c->dt_max;
    d.devices = getenv("DEVICES") ? atoi(getenv("DEVICES")) : 0;
#ifdef NBODY_WITH_MPI
    if (ranks_ > 1) d.mpi_comm = &world_;
#endif
    nbody_measure(&s, 1, 0, &e0);
    if ((r = nbody_create(&sim, &d, &s)) != NBODY_OK) { fprintf(stderr, "create: %s\n", nbody_result_string(r)); return 1; }
    t0 = now();
    r = nbody_advance(sim, (nbody_real)c->t_end);
    wall = now() - t0;
    st = nbody_get_stats(sim);
    nbody_get_state(sim, &s);
    nbody_measure(&s, 1, 0, &e1);
    printf("| %lu | %d | %s | %g | %s%s%.0d%s | %.2e | %.3f | %llu | %llu | %.3e | %.3e |%s\n", (unsigned long)c->n, c->order,
           c->stepping == NBODY_STEPPING_SHARED ? "shared" : "block", c->eta, nbody_engine_name(c->engine),
           d.devices > 1 ? " x " : d.mpi_comm ? " / " : "", d.devices > 1 ? d.devices : d.mpi_comm ? ranks_ : 0,
           d.mpi_comm ? " ranks" : "",
           fabs((double)((e1.energy - e0.energy) / e0.energy)), wall, st.steps, st.body_steps, (double)st.interactions,
           (double)st.interactions / wall, r == NBODY_OK ? "" : nbody_result_string(r));
    fflush(stdout);
    if (de) *de = fabs((double)((e1.energy - e0.energy) / e0.energy));
    if (pairs) *pairs = (double)st.interactions;
    nbody_destroy(sim);
    nbody_system_free(&s);
    return r != NBODY_OK;
}

static int run(const bench_case *c) { return run_out(c, NULL, NULL); }

/* shared steps' pair interactions at the block steps' error: log(pairs) linear in log(error)
   between the two shared runs whose errors bracket it */
static int versus(bench_case c, int argc, char **argv) {
    double be, bp, e[16], p[16];
    int k, m = 0, bad;
    c.eta = atof(argv[5]);
    header();
    bad = run_out(&c, &be, &bp);
    c.stepping = NBODY_STEPPING_SHARED;
    for (k = 6; k < argc && m < 16; ++k, ++m) { c.eta = atof(argv[k]); bad |= run_out(&c, &e[m], &p[m]); }
    for (k = 0; k < m; ++k) {
        int j;
        for (j = 0; j < m; ++j) {
            if (!(e[k] <= be && be <= e[j] && e[k] < e[j])) continue;
            {
                double w = log(be / e[k]) / log(e[j] / e[k]), ps = exp(log(p[k]) + w * log(p[j] / p[k]));
                printf("\nblock steps: abs(dE/E) %.3g with %.4g pair interactions; shared steps at that error (between eta %g "
                       "and %g): %.4g pair interactions, %.1f times the block steps'\n", be, bp, atof(argv[6 + k]), atof(argv[6 + j]),
                       ps, ps / bp);
                return bad;
            }
        }
    }
    printf("\nno two shared runs bracket the block steps' abs(dE/E) %.3g\n", be);
    return 1;
}

static nbody_engine engine_of(const char *name) {
    int e;
    for (e = 1; e < NBODY_ENGINE_COUNT_; ++e) if (!strcmp(name, nbody_engine_name((nbody_engine)e))) return (nbody_engine)e;
    return NBODY_ENGINE_BLOCK;
}

static int bench_main(int argc, char **argv) {
    bench_case c;
    c.n = 1024; c.order = 4; c.eta = 0; c.stepping = NBODY_STEPPING_BLOCK; c.engine = NBODY_ENGINE_BLOCK; c.t_end = 1; c.seed = 42; c.dt_max = 0;
    if (argc > 1 && !strcmp(argv[1], "ic")) {
        nbody_system s = NBODY_ZERO;
        size_t i;
        if (nbody_ic_plummer(&s, argc > 2 ? (size_t)atol(argv[2]) : 1024, argc > 3 ? strtoull(argv[3], NULL, 10) : 42) != NBODY_OK)
            return 1;
        for (i = 0; i < s.n; ++i)
            printf("%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", (double)s.m[i], (double)s.x[i], (double)s.y[i], (double)s.z[i],
                   (double)s.vx[i], (double)s.vy[i], (double)s.vz[i]);
        nbody_system_free(&s);
        return 0;
    }
    if (argc > 6 && !strcmp(argv[1], "versus")) {
        c.n = (size_t)atol(argv[2]); c.order = atoi(argv[3]); c.t_end = atof(argv[4]);
        return versus(c, argc, argv);
    }
    if (argc > 1 && !strcmp(argv[1], "scan")) {
        int k, bad = 0;
        if (argc < 6) { fprintf(stderr, "bench_hermite scan N order t_end eta...\n"); return 2; }
        c.n = (size_t)atol(argv[2]); c.order = atoi(argv[3]); c.t_end = atof(argv[4]);
        if (getenv("STEPPING") && !strcmp(getenv("STEPPING"), "shared")) c.stepping = NBODY_STEPPING_SHARED;
        header();
        for (k = 5; k < argc; ++k) { c.eta = atof(argv[k]); bad |= run(&c); }
        return bad;
    }
    if (argc > 1) c.n = (size_t)atol(argv[1]);
    if (argc > 2) c.order = atoi(argv[2]);
    if (argc > 3) c.eta = atof(argv[3]);
    if (argc > 4 && !strcmp(argv[4], "shared")) c.stepping = NBODY_STEPPING_SHARED;
    if (argc > 5) c.engine = engine_of(argv[5]);
    if (argc > 6) c.t_end = atof(argv[6]);
    if (argc > 7) c.seed = strtoull(argv[7], NULL, 10);
    if (argc > 8) c.dt_max = atof(argv[8]);
    header();
    return run(&c);
}

int main(int argc, char **argv) {
#ifdef NBODY_WITH_MPI
    int rank = 0, r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
    if (rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;   /* rank 0 prints */
    r = bench_main(argc, argv);
    MPI_Finalize();
    return r;
#else
    return bench_main(argc, argv);
#endif
}
