/* bench_treeblock.c - hierarchical (block) time steps of the tree leapfrog against its shared
   step: the galaxy collision (nbody_ic_collision, central fraction 0.3, separation 3, seed 1)
   on a tree engine to t_end, softening 0.01, theta 0.5. Each run prints one Markdown row:
   abs(dE/E) at t_end (energies from nbody_measure, exact pair sums), wall seconds, steps, body
   steps and force evaluations. Shared runs take a fixed step dt; block runs take
   desc.stepping = NBODY_STEPPING_BLOCK with desc.timestep_eta = eta (dt_max 1/16).
   The runs alternate (block, shared, block, shared ...) `repeat` times and the table gives
   each run's least wall time, so that other work on the machine slows both alike.
   Usage: bench_treeblock engine n t_end repeat run...
            engine: tree, cuda_tree, opencl_tree, or block (BLOCK's exact forces: shared runs
            only, the reference without the tree's force error); run: s:DT (shared, step DT) or
            b:ETA[:DT_MAX[:REBUILD[:UNION:LANES:HOST:ROOTS:LIST:SPLIT:CLIMB:FUSE:LOOP]]] (block; DT_MAX desc.dt_max,
            REBUILD the fraction of n walked on a refitted tree before it is built afresh,
            nbody__kdk_rebuild; cuda_tree only: the warps' union walk above 1/UNION of the
            sources active, at most LANES lanes a body in the split walk, HOST 1: the levels
            chosen on the host, 2^ROOTS subtrees a lane, LIST 1: steps of every body walk the
            list too, SPLIT 1: the split walk instead of the breadth-first one, CLIMB 1: the refit
            climbs from every leaf, FUSE 1: levels and kicks in two launches at every count,
            LOOP 1: every block step scheduled by the host, none in runs on the device, 2:
            runs that leave the steps of every body to the host, 3: runs that take them too
            (nbody__cuda_kdk_config); 0 or absent: the defaults). Each run's wall and CPU seconds
            (all threads) are also given over the first shared run's.
          e.g. ./build/bench_treeblock tree 65536 6 2 b:0.025 s:0.001953125
          TB_THETA=x: every run at theta x (the header still says 0.5).
          TB_BLOCK_THETA=x: the block runs at theta x (the shared runs stay at 0.5), to match
          their energy error by the force's accuracy too. TB_SEED=s: the collision's seed (1).
          TB_LIMIT=k: the neighbour limiter's factor 2^k (nbody__kdk_limit; negative: off);
          TB_JERK=x: the step bound from the force's change with factor x (nbody__kdk_jerk, 1;
          0: off, GADGET's criterion alone), TB_JERK_FROM=n: from n attracting bodies
          (nbody__kdk_jerk_from, 8192; below, off). TB_WAKE=0: no wake-ups (nbody__kdk_wake). TB_GPU_LIMIT=1 (cuda_tree): the limiter on the GPU
          too (nbody__cuda_kdk_limiter; off by default there). TB_FRONT_PER_SM=k (cuda_tree): a run's
          breadth-first walk with k blocks a multiprocessor (nbody__cuda_kdk_front_blocks; 0: the
          resident count, the default).
          TB_GPU_TREE=1 (tree): the block steps build the GPU trees' tree (nbody__kdk_gpu_tree; with
          TB_LEAF=1, desc.leaf_size 1, the walk CUDA_TREE takes). TB_LEAF=k: desc.leaf_size k (every run).
          TB_EVERY=x: advance in pieces of x and print dE/E and the two central bodies'
          distance after each to stderr (the energy against time; with x a multiple of dt_max
          every piece ends at a block time of every body, so the run is the same bit for bit).
   Build: make build/bench_treeblock (WITH_CUDA=1 / WITH_OPENCL=1 for the GPU engines). */
#define _POSIX_C_SOURCE 199309L   /* clock_gettime */
#define _DEFAULT_SOURCE            /* getrusage */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <sys/resource.h>

#define MAX_RUNS 16

#ifdef NBODY_WITH_CUDA
void nbody__cuda_kdk_config(unsigned int union_fraction, unsigned int max_lanes, int device_step, int roots_log2, int full,
                            int front, int climb, int fuse, int loop);   /* nbody_cuda.cu */
void nbody__cuda_kdk_limiter(int on);
void nbody__cuda_kdk_front_blocks(int per_sm);
#endif

/* the process's CPU seconds (all threads, user and system): on a machine shared with other
   work, wall time measures the others too */
static double cpu_now(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bench_run {
    int block;                     /* 1: block steps with eta; 0: shared step dt */
    double value;                  /* eta or dt */
    double dt_max, rebuild;        /* block: desc.dt_max (0: its default 1/16); the refit rule's fraction (0: the library's) */
    double uni, lanes, host, roots, list, split, climb, fuse, loop;   /* block on cuda_tree: nbody__cuda_kdk_config's (0: its defaults) */
    double best, cpu, de;          /* least wall seconds, least CPU seconds, abs(dE/E) */
    nbody_stats st;
    unsigned long long woken, limited;   /* the neighbour limiter's wake-ups and raised levels (last run) */
} bench_run;

static double rebuild_default;

/* nbody_advance to t_end, in pieces of TB_EVERY when set, printing dE/E after each (measured
   outside the timing would be fairer, but the pieces are for reading the error's history) */
static nbody_result advance(nbody_sim *sim, const nbody_system *s0, nbody_system *s, double t_end, nbody_real e0) {
    double every = getenv("TB_EVERY") ? atof(getenv("TB_EVERY")) : 0, t;
    size_t h = (s0->n + 1) / 2;      /* the second galaxy's central body (nbody_ic_collision) */
    nbody_result r = NBODY_OK;
    if (every <= 0) return nbody_advance(sim, (nbody_real)t_end);
    for (t = every; r == NBODY_OK && t < t_end + every / 2; t += every) {
        nbody_invariants e;
        double dx, dy, dz;
        r = nbody_advance(sim, (nbody_real)(t < t_end ? t : t_end));
        if (r == NBODY_OK) r = nbody_get_state(sim, s);
        if (r == NBODY_OK) r = nbody_measure(s, 1, (nbody_real)0.01, &e);
        if (r != NBODY_OK) break;
        dx = (double)(s->x[h] - s->x[0]); dy = (double)(s->y[h] - s->y[0]); dz = (double)(s->z[h] - s->z[0]);
        fprintf(stderr, "t %.4g: dE/E %+.3e, central bodies %.3f apart\n", t < t_end ? t : t_end, (double)((e.energy - e0) / e0),
                sqrt(dx * dx + dy * dy + dz * dz));
    }
    return r;
}

static int run_once(nbody_engine engine, const nbody_system *s0, double t_end, bench_run *b) {
    nbody_system s = {0};
    nbody_desc d;
    nbody_sim *sim;
    nbody_invariants e0, e1;
    double t0, c0, wall, cpu;
    nbody_result r;
    memset(&d, 0, sizeof d);
    d.engine = engine; d.method = NBODY_LEAPFROG; d.softening = (nbody_real)0.01; d.theta = (nbody_real)0.5;
    if (getenv("TB_LEAF")) d.leaf_size = atoi(getenv("TB_LEAF"));
    if (getenv("TB_THETA")) d.theta = (nbody_real)atof(getenv("TB_THETA"));
    if (b->block && getenv("TB_BLOCK_THETA")) d.theta = (nbody_real)atof(getenv("TB_BLOCK_THETA"));
    if (b->block) {
        d.stepping = NBODY_STEPPING_BLOCK; d.timestep_eta = (nbody_real)b->value; d.dt_max = (nbody_real)b->dt_max;
        nbody__kdk_rebuild = b->rebuild > 0 ? b->rebuild : rebuild_default;
#ifdef NBODY_WITH_CUDA
        nbody__cuda_kdk_config((unsigned int)b->uni, (unsigned int)b->lanes, b->host != 1, (int)b->roots, b->list != 1, b->split != 1,
                               b->climb == 1, b->fuse != 1, b->loop > 0 ? (int)b->loop - 1 : -1);
#endif
    }
    else d.dt = (nbody_real)b->value;
    if (nbody_system_alloc(&s, s0->n) != NBODY_OK) return 0;
    nbody_measure(s0, d.G == 0 ? 1 : d.G, d.softening, &e0);
    if ((r = nbody_create(&sim, &d, s0)) != NBODY_OK) {
        fprintf(stderr, "nbody_create: %s\n", nbody_result_string(r));
        nbody_system_free(&s);
        return 0;
    }
    t0 = now(); c0 = cpu_now();
    r = advance(sim, s0, &s, t_end, e0.energy);
    if (r == NBODY_OK) r = nbody_get_state(sim, &s);   /* a GPU engine's last step is done once its state is read */
    wall = now() - t0; cpu = cpu_now() - c0;
    if (r != NBODY_OK) fprintf(stderr, "nbody_advance: %s\n", nbody_result_string(r));
    b->st = nbody_get_stats(sim);
    b->woken = sim->kdk.woken; b->limited = sim->kdk.limited;
    nbody_destroy(sim);
    nbody_measure(&s, 1, (nbody_real)0.01, &e1);
    nbody_system_free(&s);
    if (r != NBODY_OK) return 0;
    b->de = fabs((double)((e1.energy - e0.energy) / e0.energy));
    if (b->best == 0 || wall < b->best) b->best = wall;
    if (b->cpu == 0 || cpu < b->cpu) b->cpu = cpu;
    return 1;
}

int main(int argc, char **argv) {
    nbody_engine engine = NBODY_ENGINE_TREE;
    nbody_system s0 = {0};
    bench_run runs[MAX_RUNS];
    size_t n;
    double t_end;
    int repeat, nr = 0, k, j;
    unsigned long long seed = getenv("TB_SEED") ? (unsigned long long)atoll(getenv("TB_SEED")) : 1;
    nbody_desc dflt;
    memset(&dflt, 0, sizeof dflt);
    if (argc < 6) {
        fprintf(stderr, "usage: bench_treeblock engine n t_end repeat s:DT|b:ETA ...\n");
        return 2;
    }
    if (!strcmp(argv[1], "cuda_tree")) engine = NBODY_ENGINE_CUDA_TREE;
    else if (!strcmp(argv[1], "opencl_tree")) engine = NBODY_ENGINE_OPENCL_TREE;
    else if (!strcmp(argv[1], "block")) engine = NBODY_ENGINE_BLOCK;
    else if (strcmp(argv[1], "tree")) { fprintf(stderr, "engine: tree, cuda_tree, opencl_tree or block\n"); return 2; }
    rebuild_default = nbody__kdk_rebuild;
    if (getenv("TB_LIMIT")) nbody__kdk_limit = atoi(getenv("TB_LIMIT"));
    if (getenv("TB_WAKE")) nbody__kdk_wake = atoi(getenv("TB_WAKE"));
    if (getenv("TB_JERK")) nbody__kdk_jerk = atof(getenv("TB_JERK"));
    if (getenv("TB_JERK_FROM")) nbody__kdk_jerk_from = (size_t)atol(getenv("TB_JERK_FROM"));
    if (getenv("TB_SHIFT")) nbody__kdk_shift = atoi(getenv("TB_SHIFT"));
#ifdef NBODY_WITH_CUDA
    if (getenv("TB_GPU_LIMIT")) nbody__cuda_kdk_limiter(atoi(getenv("TB_GPU_LIMIT")));
    if (getenv("TB_FRONT_PER_SM")) nbody__cuda_kdk_front_blocks(atoi(getenv("TB_FRONT_PER_SM")));
#endif
    if (getenv("TB_GPU_TREE")) nbody__kdk_gpu_tree = atoi(getenv("TB_GPU_TREE"));
    n = (size_t)atol(argv[2]); t_end = atof(argv[3]); repeat = atoi(argv[4]);
    for (k = 5; k < argc && nr < MAX_RUNS; ++k) {
        memset(&runs[nr], 0, sizeof runs[nr]);
        if ((argv[k][0] != 's' && argv[k][0] != 'b') || argv[k][1] != ':') { fprintf(stderr, "bad run %s\n", argv[k]); return 2; }
        runs[nr].block = argv[k][0] == 'b';
        if (sscanf(argv[k] + 2, "%lf:%lf:%lf:%lf:%lf:%lf:%lf:%lf:%lf:%lf:%lf:%lf", &runs[nr].value, &runs[nr].dt_max, &runs[nr].rebuild,
                   &runs[nr].uni, &runs[nr].lanes, &runs[nr].host, &runs[nr].roots, &runs[nr].list, &runs[nr].split, &runs[nr].climb,
                   &runs[nr].fuse, &runs[nr].loop) < 1) {
            fprintf(stderr, "bad run %s\n", argv[k]);
            return 2;
        }
        ++nr;
    }
    if (!nbody_engine_available(engine) || nbody_ic_collision(&s0, n, (nbody_real)0.3, 3, seed) != NBODY_OK) {
        fprintf(stderr, "engine %s not in this build, or bad n\n", argv[1]);
        return 2;
    }
    printf("# bench_treeblock: %s, galaxy collision N = %lu (seed %llu) to t = %g, softening 0.01, theta 0.5 (block runs %s), "
           "sizeof(nbody_real) = %d, least wall of %d interleaved runs, %d threads\n\n", argv[1], (unsigned long)n, seed, t_end,
           getenv("TB_BLOCK_THETA") ? getenv("TB_BLOCK_THETA") : "0.5", (int)sizeof(nbody_real), repeat, nbody__threads(&dflt));
    for (j = 0; j < repeat; ++j)
        for (k = 0; k < nr; ++k) {
            if (!run_once(engine, &s0, t_end, &runs[k])) return 1;
            fprintf(stderr, "pass %d run %d (%c:%g): abs(dE/E) %.3e, least wall %.3f s, least CPU %.3f s, %llu woken, %llu limited\n", j,
                    k, runs[k].block ? 'b' : 's', runs[k].value, runs[k].de, runs[k].best, runs[k].cpu, runs[k].woken, runs[k].limited);
        }
    printf("| stepping | eta or dt | dt_max | rebuild | union, lanes, host, roots, list, split, climb, fuse, loop | abs(dE/E) | wall s | wall / first shared | CPU s | "
           "CPU / first shared | steps | body steps | force evaluations |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (j = 0; j < nr && runs[j].block; ++j) {}
    for (k = 0; k < nr; ++k) {
        char dtm[32] = "", reb[32] = "", cfg[160] = "";
        if (runs[k].block) {
            snprintf(dtm, sizeof dtm, "%g", runs[k].dt_max > 0 ? runs[k].dt_max : 0.0625);
            snprintf(reb, sizeof reb, "%g", runs[k].rebuild > 0 ? runs[k].rebuild : rebuild_default);
            snprintf(cfg, sizeof cfg, "%g, %g, %g, %g, %g, %g, %g, %g, %g", runs[k].uni, runs[k].lanes, runs[k].host, runs[k].roots,
                     runs[k].list, runs[k].split, runs[k].climb, runs[k].fuse, runs[k].loop);
        }
        printf("| %s | %g | %s | %s | %s | %.3e | %.2f | %.3f | %.2f | %.3f | %llu | %llu | %llu |\n", runs[k].block ? "block" : "shared",
               runs[k].value, dtm, reb, cfg, runs[k].de, runs[k].best, j < nr ? runs[k].best / runs[j].best : 0.0, runs[k].cpu,
               j < nr ? runs[k].cpu / runs[j].cpu : 0.0, runs[k].st.steps,
               runs[k].st.body_steps ? runs[k].st.body_steps : runs[k].st.steps * (unsigned long long)n, runs[k].st.force_evals);
    }
    nbody_system_free(&s0);
    return 0;
}
